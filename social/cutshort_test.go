package social

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// cancelAfter cancels a request's context once Redis has run script (by
// its hash, or by its text): as a client that goes, or a deadline that
// passes, right after an account change's first write.
type cancelAfter struct {
	script *redis.Script
	cancel context.CancelFunc
}

func (h *cancelAfter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cancelAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		err := next(ctx, c)
		if err == nil && h.runs(c) {
			h.cancel()
		}
		return err
	}
}

func (h *cancelAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *cancelAfter) runs(c redis.Cmder) bool {
	args := c.Args()
	if len(args) < 2 {
		return false
	}
	body, _ := args[1].(string)
	switch c.Name() {
	case "evalsha":
		return body == h.script.Hash()
	case "eval":
		sum := sha1.Sum([]byte(body))
		return hex.EncodeToString(sum[:]) == h.script.Hash()
	}
	return false
}

// An account change whose request ends right after its first write (the
// client gone, its deadline passed) is finished all the same: a suspension
// ends the sessions and lists the account, a password change ends the
// other sessions, a rename reaches the search index.
func TestAccountChangesOutliveTheirRequest(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	cut := func(script *redis.Script) context.Context {
		rctx, cancel := context.WithCancel(ctx)
		rdb.AddHook(&cancelAfter{script: script, cancel: cancel})
		return rctx
	}

	bad, badToken := signUpToken(t, s, "bad")
	if _, err := s.Suspend(cut(suspendScript), bad.ID); err != nil {
		t.Errorf("suspension: %v", err)
	}
	if _, err := s.Authenticate(ctx, badToken); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("the suspended account's session: %v, want ErrUnauthenticated", err)
	}
	if l, err := s.Suspended(ctx, Page{Limit: 10}); err != nil || len(l) != 1 || l[0].ID != bad.ID {
		t.Errorf("suspended accounts: %v, %v; want bad", l, err)
	}

	ada, mine := signUpToken(t, s, "ada")
	_, other, err := s.SignIn(ctx, "ada", "password-ada", "198.51.100.9")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ChangePassword(cut(setPasswordScript), ada.ID, mine, "password-ada", "a-new-password-7", "198.51.100.9"); err != nil {
		t.Errorf("password change: %v", err)
	}
	if _, err := s.Authenticate(ctx, other); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("ada's other session after the password change: %v, want ErrUnauthenticated", err)
	}

	name := "Grace Hopper"
	if _, err := s.EditProfile(cut(profileScript), ada.ID, ProfileEdit{Name: &name}); err != nil {
		t.Errorf("rename: %v", err)
	}
	if found := searchLogins(t, s, "hopper"); !slices.Equal(found, []string{"ada"}) {
		t.Errorf("search for the new name: %v, want ada", found)
	}
}

// An account change that Redis failed after its first write is finished
// by the same request made again, though the first write stands: the
// suspension's job hides the account's statuses, and the list shows it;
// the rename reaches the search index.
func TestAccountChangesFinishedByARetry(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	bad := signUp(t, s, "bad")
	st := post(t, s, bad.ID, "to be hidden")
	failing := &failOnce{fail: func(c redis.Cmder) bool {
		return slices.ContainsFunc(c.Args(), func(a any) bool {
			arg, _ := a.(string)
			return strings.Contains(arg, hideJobID(bad.ID, ""))
		})
	}}
	rdb.AddHook(failing)
	if _, err := s.Suspend(ctx, bad.ID); err == nil || !failing.fired.Load() {
		t.Fatalf("the suspension: %v, failed: %v; want its job refused", err, failing.fired.Load())
	}
	if changed, err := s.Suspend(ctx, bad.ID); err != nil || changed {
		t.Fatalf("the suspension again: %v, %v; want nothing changed, no error", changed, err)
	}
	if v := rdb.HGet(ctx, s.keys.status(st.ID), "hidden").Val(); v != "1" {
		t.Errorf("the suspended account's status: hidden %q, want 1", v)
	}
	if l, err := s.Suspended(ctx, Page{Limit: 10}); err != nil || len(l) != 1 {
		t.Errorf("suspended accounts: %v, %v; want bad", l, err)
	}

	ada := signUp(t, s, "ada")
	renamed := &failOnce{fail: func(c redis.Cmder) bool {
		return c.Name() == "zadd" && c.Args()[1] == s.keys.searchIndex()
	}}
	rdb.AddHook(renamed)
	name := "Grace Hopper"
	if _, err := s.EditProfile(ctx, ada.ID, ProfileEdit{Name: &name}); err == nil || !renamed.fired.Load() {
		t.Fatalf("the rename: %v; want its index refused", err)
	}
	if _, err := s.EditProfile(ctx, ada.ID, ProfileEdit{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if found := searchLogins(t, s, "hopper"); !slices.Equal(found, []string{"ada"}) {
		t.Errorf("search for the new name: %v, want ada", found)
	}
}

// searchLogins returns the logins a search for q finds, as anyone sees it.
func searchLogins(tb testing.TB, s *Service, q string) []string {
	tb.Helper()
	found, err := s.SearchUsers(ctxT(tb), 0, q, 10)
	if err != nil {
		tb.Fatalf("search %q: %v", q, err)
	}
	var logins []string
	for _, u := range found {
		logins = append(logins, u.Login)
	}
	return logins
}

// A like whose client goes once the like is written still notifies its
// status's author: a retry, finding the like there, would not.
func TestLikeNotifiesThoughItsClientGoes(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	st := post(t, s, ann.ID, "likeable")
	rctx, cancel := context.WithCancel(ctx)
	s.afterLikeWrites = cancel
	if _, err := s.Like(rctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.UnreadNotifications(ctx, ann.ID); err != nil || n != 1 {
		t.Errorf("ann's unread notifications: %d, %v; want the like's", n, err)
	}
}
