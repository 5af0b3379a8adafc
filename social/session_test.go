package social

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestTokenOfNoShape refuses a token no session can have (empty, or
// longer than maxTokenLen) without asking Redis anything, to each way in
// that takes a token; one of maxTokenLen bytes is looked up.
func TestTokenOfNoShape(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	counter := &commandCounter{}
	rdb.AddHook(counter)
	for _, token := range []string{"", strings.Repeat("x", maxTokenLen+1)} {
		before := counter.roundTrips.Load()
		if _, err := s.Authenticate(ctx, token); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Authenticate(%d bytes) = %v, want ErrUnauthenticated", len(token), err)
		}
		if _, err := s.PostAs(ctx, PostRequest{Token: token, Message: "hi"}); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("PostAs(%d bytes) = %v, want ErrUnauthenticated", len(token), err)
		}
		a := &Authentication{Token: token}
		s.AuthenticateMany(ctx, []*Authentication{a}, AuthChecks{})
		if !errors.Is(a.Err, ErrUnauthenticated) {
			t.Errorf("AuthenticateMany(%d bytes) = %v, want ErrUnauthenticated", len(token), a.Err)
		}
		if n := counter.roundTrips.Load() - before; n != 0 {
			t.Errorf("a token of %d bytes made %d round trips", len(token), n)
		}
	}
	before := counter.roundTrips.Load()
	if _, err := s.Authenticate(ctx, strings.Repeat("x", maxTokenLen)); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Authenticate(%d bytes) = %v, want ErrUnauthenticated", maxTokenLen, err)
	}
	if counter.roundTrips.Load() == before {
		t.Errorf("a token of %d bytes was not looked up", maxTokenLen)
	}
}

// sessionIndex returns the ids in uid's index of sessions.
func sessionIndex(tb testing.TB, s *Service, uid int64) []string {
	tb.Helper()
	ids, err := s.rdb.ZRange(ctxT(tb), s.keys.sessions(uid), 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}

// signedIn reports whether token still authenticates.
func signedIn(tb testing.TB, s *Service, token string) bool {
	tb.Helper()
	_, err := s.Authenticate(ctxT(tb), token)
	if err != nil && !errors.Is(err, ErrUnauthenticated) {
		tb.Fatal(err)
	}
	return err == nil
}

// A user's sessions are indexed as they open and leave the index as they
// end; past MaxSessionsPerUser, ended ones are taken out first, then the
// oldest live one ends.
func TestSessionIndex(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{MaxSessionsPerUser: 3})
	ctx := ctxT(t)
	ada, first, err := s.SignUp(ctx, "ada", "Ada", "kettle-drum-41")
	if err != nil {
		t.Fatal(err)
	}
	signIn := func() string {
		t.Helper()
		_, token, err := s.SignIn(ctx, "ada", "kettle-drum-41", "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	second, third := signIn(), signIn()
	if got := len(sessionIndex(t, s, ada.ID)); got != 3 {
		t.Fatalf("index holds %d sessions, want 3", got)
	}
	// A fourth ends the first, the oldest.
	fourth := signIn()
	if signedIn(t, s, first) || !signedIn(t, s, second) || !signedIn(t, s, third) || !signedIn(t, s, fourth) {
		t.Fatal("past the cap, the oldest session did not end alone")
	}
	if got, want := len(sessionIndex(t, s, ada.ID)), 3; got != want {
		t.Fatalf("index holds %d, want %d", got, want)
	}
	if got := s.stats.SessionsEvicted.Load(); got != 1 {
		t.Fatalf("SessionsEvicted = %d, want 1", got)
	}

	// A sign-out leaves the index; a session that expired is taken out
	// before any live one ends.
	if err := s.SignOut(ctx, second); err != nil {
		t.Fatal(err)
	}
	if got := len(sessionIndex(t, s, ada.ID)); got != 2 {
		t.Fatalf("after a sign-out the index holds %d, want 2", got)
	}
	// As if it expired: its session gone, its entry as old as sessions
	// that expire are.
	if err := s.rdb.Del(ctx, s.keys.session(hashToken(third))).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.ZAddXX(ctx, s.keys.sessions(ada.ID), redis.Z{Score: float64(time.Now().Add(-s.opts.SessionTTL).UnixMilli()), Member: hashToken(third)}).Err(); err != nil {
		t.Fatal(err)
	}
	fifth, sixth := signIn(), signIn()
	if !signedIn(t, s, fourth) || !signedIn(t, s, fifth) || !signedIn(t, s, sixth) {
		t.Fatal("a live session ended while an expired one was in the index")
	}
	if got := s.stats.SessionsEvicted.Load(); got != 1 {
		t.Fatalf("SessionsEvicted = %d, want still 1", got)
	}
	if got := len(sessionIndex(t, s, ada.ID)); got != 3 {
		t.Fatalf("index holds %d, want 3", got)
	}
}

// A session being opened (in its user's index, not yet stored) is not
// taken for ended by another sign-in's clean-up of the index: taken out,
// it would stand outside the index once stored, and outlive a password
// change. One whose sign-in failed between the two steps is taken out
// once older than sessionOpening.
func TestSessionBeingOpenedStaysIndexed(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{MaxSessionsPerUser: 2})
	ctx := ctxT(t)
	const password = "kettle-drum-41"
	ada, mine, err := s.SignUp(ctx, "ada", "Ada", password)
	if err != nil {
		t.Fatal(err)
	}
	// A sign-in between its two steps: noted in the index...
	opening, id := newToken()
	if err := sessionOpenScript.Run(ctx, s.rdb, []string{s.keys.sessions(ada.ID)}, id, time.Now().UnixMilli(), 2).Err(); err != nil {
		t.Fatal(err)
	}
	// ... a failed one, long ago...
	_, failed := newToken()
	if err := sessionOpenScript.Run(ctx, s.rdb, []string{s.keys.sessions(ada.ID)}, failed, time.Now().Add(-2*sessionOpening).UnixMilli(), 2).Err(); err != nil {
		t.Fatal(err)
	}
	// ... while others, past the cap, clean the index up...
	for range 2 {
		if _, _, err := s.SignIn(ctx, "ada", password, "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	index := sessionIndex(t, s, ada.ID)
	if !slices.Contains(index, id) {
		t.Fatalf("the session being opened left the index %v", index)
	}
	if slices.Contains(index, failed) {
		t.Errorf("the failed sign-in's entry stayed in the index %v", index)
	}
	// ... then it is stored, and the password changes.
	if err := s.rdb.Set(ctx, s.keys.session(id), ada.ID, s.opts.SessionTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if !signedIn(t, s, opening) {
		t.Fatal("the session opened does not work")
	}
	if err := s.ChangePassword(ctx, ada.ID, mine, password, "another-password-9", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	if signedIn(t, s, opening) {
		t.Error("a session opened while the index was cleaned up outlived a password change")
	}
}

// Many sign-ins at once past the cap, then a password change: every
// session but the changer's ends.
func TestSignInsAtOnceEndWithAPasswordChange(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{MaxSessionsPerUser: 2, PasswordHashers: 4})
	ctx := ctxT(t)
	const password = "kettle-drum-41"
	ada, mine, err := s.SignUp(ctx, "ada", "Ada", password)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, 40)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Go(func() {
			_, token, err := s.SignIn(ctx, "ada", password, fmt.Sprintf("203.0.113.%d", i))
			if err != nil {
				t.Error(err)
			}
			tokens[i] = token
		})
	}
	wg.Wait()
	if err := s.ChangePassword(ctx, ada.ID, mine, password, "another-password-9", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	alive := 0
	for _, token := range tokens {
		if token != "" && signedIn(t, s, token) {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of %d sessions opened at once outlived the password change", alive, len(tokens))
	}
}

// A new password needs the current one, counted as sign-ins are, and the
// rules of sign-up; it ends every session of the user but the one that
// asked.
func TestChangePassword(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{SignInFailures: 3})
	ctx := ctxT(t)
	ada, mine, err := s.SignUp(ctx, "ada", "Ada", "kettle-drum-41")
	if err != nil {
		t.Fatal(err)
	}
	bob, bobs, err := s.SignUp(ctx, "bob", "Bob", "kettle-drum-42")
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := s.SignIn(ctx, "ada", "kettle-drum-41", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, current, next string
		want                error
		field               string
	}{
		{"wrong current", "kettle-drum-40", "violin-case-77", ErrInvalidCredentials, ""},
		{"too short", "kettle-drum-41", "short", nil, "password"},
		{"common", "kettle-drum-41", "password123", nil, "password"},
	} {
		err := s.ChangePassword(ctx, ada.ID, mine, tc.current, tc.next, "192.0.2.9")
		var inv *InvalidError
		switch {
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		case tc.field != "" && (!errors.As(err, &inv) || inv.Field != tc.field):
			t.Fatalf("%s: %v, want an invalid %s", tc.name, err, tc.field)
		}
		if !signedIn(t, s, other) {
			t.Fatalf("%s ended another session", tc.name)
		}
	}
	if _, _, err := s.SignIn(ctx, "ada", "kettle-drum-41", "192.0.2.1"); err != nil {
		t.Fatalf("the old password after refusals: %v", err)
	}
	// The login as a password: eight bytes or more and not common, refused
	// by the login rule alone.
	carl, carls, err := s.SignUp(ctx, "carl_gauss", "Carl", "kettle-drum-43")
	if err != nil {
		t.Fatal(err)
	}
	var inv *InvalidError
	if err := s.ChangePassword(ctx, carl.ID, carls, "kettle-drum-43", "CARL_GAUSS", "192.0.2.9"); !errors.As(err, &inv) || inv.Field != "password" {
		t.Fatalf("the login as the new password: %v, want an invalid password", err)
	}
	_, other2, err := s.SignIn(ctx, "ada", "kettle-drum-41", "192.0.2.2")
	if err != nil {
		t.Fatal(err)
	}

	if err := s.ChangePassword(ctx, ada.ID, mine, "kettle-drum-41", "violin-case-77", "192.0.2.9"); err != nil {
		t.Fatal(err)
	}
	if !signedIn(t, s, mine) || signedIn(t, s, other) || signedIn(t, s, other2) {
		t.Fatal("after the change, the asking session must stay and every other end")
	}
	if !signedIn(t, s, bobs) {
		t.Fatal("another user's session ended")
	}
	if got := sessionIndex(t, s, ada.ID); len(got) != 1 || got[0] != hashToken(mine) {
		t.Fatalf("ada's index %v, want only the asking session", got)
	}
	if _, _, err := s.SignIn(ctx, "ada", "kettle-drum-41", "192.0.2.1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("the old password: %v, want ErrInvalidCredentials", err)
	}
	if _, _, err := s.SignIn(ctx, "ada", "violin-case-77", "192.0.2.1"); err != nil {
		t.Fatalf("the new password: %v", err)
	}

	// Wrong current passwords are counted as failed sign-ins from the
	// address: past the limit, refused before any check.
	for range 3 {
		if err := s.ChangePassword(ctx, bob.ID, bobs, "wrong-guess-1", "violin-case-78", "192.0.2.50"); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("a wrong current password: %v", err)
		}
	}
	var limited *RateLimitError
	if err := s.ChangePassword(ctx, bob.ID, bobs, "kettle-drum-42", "violin-case-78", "192.0.2.50"); !errors.As(err, &limited) {
		t.Fatalf("past the failures: %v, want a *RateLimitError", err)
	}
	if _, _, err := s.SignIn(ctx, "bob", "kettle-drum-42", "192.0.2.51"); err != nil {
		t.Fatalf("bob's password changed though refused: %v", err)
	}
}

// A sign-in whose password was checked before the account was suspended,
// its password changed or the account deleted, and whose session is
// stored after that change ended the account's sessions, gets no session:
// ErrSuspended, or ErrInvalidCredentials, and no token that works.
func TestSignInRacingAnAccountChange(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"suspend", "change password", "delete"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{PasswordHashers: 4})
			ctx := ctxT(t)
			login := strings.ReplaceAll(change, " ", "") + "racer"
			u, token := signUpToken(t, s, login)
			// The sign-in's password check holds its hasher's slot until
			// the change is done; the change's own hashing goes by.
			checked, release := make(chan struct{}), make(chan struct{})
			var held atomic.Bool
			s.hashers.inSlot = func() {
				if held.CompareAndSwap(false, true) {
					close(checked)
					<-release
				}
			}
			type result struct {
				token string
				err   error
			}
			done := make(chan result, 1)
			go func() {
				_, token, err := s.SignIn(ctx, login, "password-"+login, "198.51.100.7")
				done <- result{token, err}
			}()
			<-checked
			want := ErrInvalidCredentials
			var err error
			switch change {
			case "suspend":
				want = ErrSuspended
				_, err = s.Suspend(ctx, u.ID)
			case "change password":
				err = s.ChangePassword(ctx, u.ID, token, "password-"+login, "another-password-9", "198.51.100.8")
			case "delete":
				err = s.DeleteAccount(ctx, u.ID, "password-"+login, "198.51.100.8")
			}
			if err != nil {
				t.Fatalf("%s: %v", change, err)
			}
			close(release)
			res := <-done
			if !errors.Is(res.err, want) || res.token != "" {
				t.Errorf("the sign-in answered %q, %v; want no token, %v", res.token, res.err, want)
			}
			if res.token != "" {
				if _, err := s.Authenticate(ctx, res.token); err == nil {
					t.Errorf("its session works")
				}
			}
			if n := rdb.ZCard(ctx, s.keys.sessions(u.ID)).Val(); change != "change password" && n != 0 {
				t.Errorf("%d sessions in the index, want none", n)
			}
		})
	}
}
