package social

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// beforeClaim is a client hook that runs rival once, just before the first
// HSETNX (a sign-up's login claim) is sent: a sign-up that passed the check
// for a taken login loses the claim.
type beforeClaim struct {
	fired atomic.Bool
	rival func(ctx context.Context)
}

func (h *beforeClaim) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeClaim) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hsetnx" && h.fired.CompareAndSwap(false, true) {
			h.rival(ctx)
		}
		return next(ctx, cmd)
	}
}

func (h *beforeClaim) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A sign-up that loses the claim of its login leaves no key behind: the
// only keys added are the winner's user, session and index of sessions.
func TestSignUpLosingClaimLeavesNoKey(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	signUp(t, s, "first")
	before := scanKeys(t, s, rdb)

	var (
		winner User
		token  string
		err    error
	)
	rdb.AddHook(&beforeClaim{rival: func(ctx context.Context) {
		winner, token, err = s.SignUp(ctx, "Taken", "Rival", "password-rival")
	}})
	if _, _, lerr := s.SignUp(ctx, "taken", "Loser", "password-loser"); !errors.Is(lerr, ErrLoginTaken) {
		t.Fatalf("sign-up that lost the claim: %v, want ErrLoginTaken", lerr)
	}
	if err != nil {
		t.Fatalf("rival sign-up: %v", err)
	}

	got := scanKeys(t, s, rdb)
	want := append(before, s.keys.user(winner.ID), s.keys.session(hashToken(token)), s.keys.sessions(winner.ID))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("keys after the lost claim:\n%v\nwant\n%v", got, want)
	}
	if u, err := s.UserByLogin(ctx, "TAKEN"); err != nil || u.ID != winner.ID || u.Name != "Rival" {
		t.Fatalf("login taken leads to %+v (%v), want the rival %d", u, err, winner.ID)
	}
}

// A sign-up tells the new uid's channel, before anything else can be sent
// there, that the uid is a new user's.
func TestSignUpPublishesUserCreated(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	first := signUp(t, s, "first")
	l := listen(t, s, rdb, s.UserChannel(first.ID+1))
	next := signUp(t, s, "next")
	if next.ID != first.ID+1 {
		t.Fatalf("uids %d then %d", first.ID, next.ID)
	}
	events := eventsSoFar(t, l)[s.UserChannel(next.ID)]
	if len(events) != 1 || events[0].Type != "user_created" {
		t.Fatalf("events on the new user's channel = %+v, want one user_created", events)
	}
	if _, err := s.UserByID(ctx, next.ID); err != nil {
		t.Fatal(err)
	}
}

// A uid handed out again (a counter that went back, as after a failover to
// a replica that lagged) is passed over: the user holding it is untouched.
func TestSignUpPassesOverTakenUIDs(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	a, b := signUp(t, s, "uid_a"), signUp(t, s, "uid_b")
	if err := rdb.Set(ctx, s.keys.userSeq(), a.ID-1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := signUp(t, s, "uid_c")
	if c.ID != b.ID+1 {
		t.Fatalf("new user got uid %d, want %d past the two taken", c.ID, b.ID+1)
	}
	for _, want := range []User{a, b, c} {
		got, err := s.UserByID(ctx, want.ID)
		if err != nil || got.Login != want.Login {
			t.Fatalf("user %d = %+v (%v), want %s", want.ID, got, err, want.Login)
		}
	}
}

// Passwords on the list of common ones, in any case, and the login itself
// are refused as an invalid password, before any hash is made or any key
// written; one a little less common than those is taken.
func TestSignUpRefusesCommonPasswords(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	for _, password := range []string{"12345678", "password", "PassWord", "iloveyou", "qwertyuiop", "SunShine1", "Common_Login"} {
		_, _, err := s.SignUp(ctx, "common_login", "C", password)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "password" {
			t.Errorf("sign up with %q: %v, want an invalid password", password, err)
		}
	}
	if n := s.Counters().PasswordHashes.Load(); n != 0 {
		t.Errorf("%d passwords hashed for refused sign-ups, want 0", n)
	}
	if keys := scanKeys(t, s, rdb); len(keys) != 0 {
		t.Errorf("refused sign-ups wrote %v", keys)
	}
	if _, _, err := s.SignUp(ctx, "common_login", "C", "kettle-drum-41"); err != nil {
		t.Fatalf("sign up with an uncommon password: %v", err)
	}
}

// The list is read once, holds what its notice says, and finds its first and
// last entries.
func TestCommonPasswordList(t *testing.T) {
	t.Parallel()
	if n := len(commonPasswords()); n != 100_000 {
		t.Errorf("%d common passwords, want 100000", n)
	}
	for _, p := range []string{"password", "12345678", "smokey24"} {
		if !commonPassword(p) {
			t.Errorf("%q is not found common", p)
		}
	}
	for _, p := range []string{"kettle-drum-41", "", "1234567"} {
		if commonPassword(p) {
			t.Errorf("%q is found common", p)
		}
	}
}
