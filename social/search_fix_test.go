package social

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// rebuildIndex deletes the search index and its mark, as an operator does
// to have it built again, and builds it.
func rebuildIndex(t *testing.T, s *Service, rdb redis.UniversalClient) {
	t.Helper()
	ctx := ctxT(t)
	for _, key := range []string{s.keys.searchIndex(), s.keys.searchIndexBuilt()} {
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.BuildIndexes(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
}

// A rebuild of the index indexes an account suspended at that moment (the
// searches leave it out while it is, and find it once it is lifted), and
// leaves out an account that waits for approval, which its approval
// indexes.
func TestRebuildIndexesSuspendedNotPending(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{Registrations: RegistrationsApproval, Admins: []string{"root", "suzy"}})
	ctx := ctxT(t)
	root := signUp(t, s, "root")
	suzy := signUpNamed(t, s, "suzy", "Suzanne Quill")
	if _, err := s.Suspend(ctx, suzy.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SignUp(ctx, "newbie", "Fresh Newcomer", "password-newbie"); err != nil {
		t.Fatal(err)
	}
	rebuildIndex(t, s, rdb)

	if got := searchLogins(t, s, "suz"); len(got) != 0 {
		t.Fatalf("search suz while suzy is suspended = %v", got)
	}
	if _, err := s.Unsuspend(ctx, suzy.ID); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"suz", "quill", "suzy"} {
		if got := searchLogins(t, s, q); !slices.Equal(got, []string{"suzy"}) {
			t.Errorf("search %q once suzy's suspension is lifted = %v, want suzy", q, got)
		}
	}
	for _, q := range []string{"newb", "fresh", "newcomer", "newbie"} {
		if got := searchLogins(t, s, q); len(got) != 0 {
			t.Errorf("search %q finds the account waiting for approval: %v", q, got)
		}
	}
	if err := s.Approve(ctx, root.ID, "newbie"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"newb", "fresh", "newbie"} {
		if got := searchLogins(t, s, q); !slices.Equal(got, []string{"newbie"}) {
			t.Errorf("search %q once newbie is approved = %v, want newbie", q, got)
		}
	}
}

// An account waiting for approval is not found by its exact login either,
// though the login index leads to it; once approved it is.
func TestSearchExactLoginLeavesOutPending(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{Registrations: RegistrationsApproval, Admins: []string{"root"}})
	ctx := ctxT(t)
	root := signUp(t, s, "root")
	if _, _, err := s.SignUp(ctx, "newbie", "Fresh Newcomer", "password-newbie"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"newbie", "@NewBie"} {
		if got := searchLogins(t, s, q); len(got) != 0 {
			t.Errorf("search %q finds the account waiting for approval: %v", q, got)
		}
	}
	if err := s.Approve(ctx, root.ID, "newbie"); err != nil {
		t.Fatal(err)
	}
	if got := searchLogins(t, s, "newbie"); !slices.Equal(got, []string{"newbie"}) {
		t.Errorf("search newbie once approved = %v, want newbie", got)
	}
}

// A search reads no mutes: a muted user is still found (muting hides
// statuses, not accounts), and its one round trip of scores asks nothing
// of the viewer's mutes.
func TestSearchReadsNoMutes(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	signUp(t, s, "bob")
	if err := s.Mute(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	var mutes atomic.Int64
	rdb.AddHook(&cmdWatch{see: func(c redis.Cmder) {
		for _, a := range c.Args() {
			if k, ok := a.(string); ok && k == s.keys.mutes(ada.ID) {
				mutes.Add(1)
			}
		}
	}})
	got, err := s.SearchUsers(ctx, ada.ID, "bob", 10)
	if err != nil || !slices.Equal(logins(got), []string{"bob"}) {
		t.Fatalf("ada's search for bob, whom she mutes = %v (%v)", logins(got), err)
	}
	if n := mutes.Load(); n != 0 {
		t.Errorf("the search sent %d commands that read the viewer's mutes", n)
	}
}

// cmdWatch shows see every command sent, pipelined or not, from any
// goroutine.
type cmdWatch struct{ see func(redis.Cmder) }

func (h *cmdWatch) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cmdWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.see(cmd)
		return next(ctx, cmd)
	}
}

func (h *cmdWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.see(c)
		}
		return next(ctx, cmds)
	}
}

// A rename, or an account's deletion, between the build's read of a batch
// of users and its write of their entries leaves no stale entry: the old
// name does not find the renamed user, the deleted account is found by
// nothing.
func TestBuildIndexesRacingRenameAndDeletion(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	renamed := signUpNamed(t, s, "renamed", "Oldname Person")
	leaver := signUpLeaver(t, s, "leaver")
	for _, key := range []string{s.keys.searchIndex(), s.keys.searchIndexBuilt()} {
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	hook := &beforeOnce{
		match: func(c redis.Cmder) bool {
			args := c.Args()
			return c.Name() == "zadd" && len(args) > 1 && args[1] == s.keys.searchIndex()
		},
		do: func() {
			name := "Newname Person"
			if _, err := s.EditProfile(ctx, renamed.ID, ProfileEdit{Name: &name}); err != nil {
				t.Error(err)
			}
			if err := s.DeleteAccount(ctx, leaver.ID, leaverPassword, ""); err != nil {
				t.Error(err)
			}
			runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(leaver.ID)))
		},
	}
	rdb.AddHook(hook)
	if err := s.BuildIndexes(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if !hook.fired.Load() {
		t.Fatal("the build never wrote the index")
	}
	if got := searchLogins(t, s, "oldname"); len(got) != 0 {
		t.Errorf("the old name finds %v", got)
	}
	if got := searchLogins(t, s, "newname"); !slices.Equal(got, []string{"renamed"}) {
		t.Errorf("the new name finds %v, want renamed", got)
	}
	entries, err := rdb.ZRange(ctx, s.keys.searchIndex(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e, "\x00"+itoa(leaver.ID)) {
			t.Errorf("the deleted account's entry %q is in the index", e)
		}
	}
}
