package social

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// cutAt returns a context of ctx's that is cancelled once Redis has run
// script through rdb: a client gone right after that write.
func cutAt(ctx context.Context, rdb redis.UniversalClient, script *redis.Script) context.Context {
	rctx, cancel := context.WithCancel(ctx)
	rdb.AddHook(&cancelAfter{script: script, cancel: cancel})
	return rctx
}

// followsAgree fails unless a's and b's follows of each other agree on
// both sides, with the counts and the friends sets.
func followsAgree(tb testing.TB, s *Service, a, b int64) {
	tb.Helper()
	ctx := ctxT(tb)
	k := s.keys
	for _, p := range [][2]int64{{a, b}, {b, a}} {
		follower, followee := p[0], p[1]
		following := s.rdb.ZScore(ctx, k.following(follower), itoa(followee)).Err() == nil
		followed := s.rdb.ZScore(ctx, k.followers(followee), itoa(follower)).Err() == nil
		if following != followed {
			tb.Errorf("%d follows %d on the follower's side: %v, on the followee's: %v", follower, followee, following, followed)
		}
	}
	for _, u := range []int64{a, b} {
		counts, err := s.rdb.HMGet(ctx, k.user(u), "followers", "following").Result()
		if err != nil {
			tb.Fatal(err)
		}
		for i, key := range []string{k.followers(u), k.following(u)} {
			n := s.rdb.ZCard(ctx, key).Val()
			if c, _ := counts[i].(string); c != itoa(n) && !(c == "" && n == 0) {
				tb.Errorf("user %d: count %q of %s, which holds %d", u, c, key, n)
			}
		}
		friends := s.rdb.ZCard(ctx, k.friends(u)).Val()
		mutual := s.rdb.ZScore(ctx, k.following(a), itoa(b)).Err() == nil && s.rdb.ZScore(ctx, k.following(b), itoa(a)).Err() == nil
		if (friends == 1) != mutual {
			tb.Errorf("user %d: %d friends, follows both ways: %v", u, friends, mutual)
		}
	}
}

// An unfollow whose client goes right after its first write (the
// follower's side) is finished all the same: the followee's side, the
// counts and the friendship agree, and the followee's posts no longer
// reach the follower.
func TestUnfollowOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	follow(t, s, ann.ID, "bob")
	follow(t, s, bob.ID, "ann")
	if _, err := s.Unfollow(cutAt(ctx, rdb, unfollowFollowerScript), ann.ID, "bob"); err != nil {
		t.Errorf("the unfollow: %v", err)
	}
	followsAgree(t, s, ann.ID, bob.ID)
	st := post(t, s, bob.ID, "after the unfollow")
	if slices.Contains(zsetIDs(t, s, s.keys.home(ann.ID)), st.ID) {
		t.Errorf("bob's status after ann's unfollow reached ann's home")
	}
}

// A list add whose client goes once the membership is written is finished
// all the same: the member's statuses reach the list.
func TestListAddOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	owner, m := signUp(t, s, "owner"), signUp(t, s, "member")
	follow(t, s, owner.ID, "member")
	l, err := s.CreateList(ctx, owner.ID, "l")
	if err != nil {
		t.Fatal(err)
	}
	// The first run only checks; the second writes the membership.
	rctx, cancel := context.WithCancel(ctx)
	h := &cancelAfter{script: listAddScript, cancel: func() {}}
	runs := 0
	h.cancel = func() {
		if runs++; runs == 2 {
			cancel()
		}
	}
	rdb.AddHook(h)
	if _, err := s.AddListMember(rctx, owner.ID, l.ID, "member"); err != nil {
		t.Errorf("the add: %v", err)
	}
	if runs < 2 {
		t.Fatalf("the add ran its script %d times, want 2", runs)
	}
	startWorker(t, s, "w")
	st := post(t, s, m.ID, "for the list")
	waitNoJobs(t, s)
	if got := listTimelineIDs(t, s, l.ID); !slices.Contains(got, st.ID) {
		t.Errorf("the list holds %v: the member's new status %d never reached it", got, st.ID)
	}
}

// A sign-up whose client goes once the user is written is finished all
// the same, under -registrations approval too; and a pending account that
// no login leads to (its claim lost, or its instance died) is not listed
// for approval.
func TestSignUpOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{Registrations: RegistrationsApproval, Admins: []string{"root"}})
	ctx := ctxT(t)
	root := signUp(t, s, "root")
	u, _, err := s.SignUp(cutAt(ctx, rdb, createUserScript), "carol", "Carol", "password-carol")
	if err != nil {
		t.Fatalf("the sign-up: %v", err)
	}
	if got, err := s.UID(ctx, "carol"); err != nil || got != u.ID {
		t.Errorf("carol's login leads to %d, %v; want %d", got, err, u.ID)
	}
	// A ghost: listed for approval, its login claimed by no one (as a
	// sign-up whose instance died before its claim leaves it).
	if _, _, err := s.SignUp(ctx, "dave", "Dave", "password-dave"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, s.keys.loginIndex(), "dave").Err(); err != nil {
		t.Fatal(err)
	}
	pending, err := s.PendingUsers(ctx, root.ID, Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != u.ID {
		t.Errorf("pending accounts %+v, want carol's alone", pending)
	}
	// Past unclaimedAfter, the ghost is taken out of the set.
	if n := rdb.ZCard(ctx, s.keys.pendingUsers()).Val(); n != 2 {
		t.Fatalf("%d pending entries, want carol's and the new ghost's", n)
	}
	ghost, err := s.rdb.ZRange(ctx, s.keys.pendingUsers(), 1, 1).Result()
	if err != nil || len(ghost) != 1 {
		t.Fatal(ghost, err)
	}
	old := time.Now().Add(-unclaimedAfter - time.Minute).UnixMilli()
	if err := rdb.HSet(ctx, s.keys.user(parseIDs(ghost)[0]), "signup", old).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PendingUsers(ctx, root.ID, Page{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if got := rdb.ZRange(ctx, s.keys.pendingUsers(), 0, -1).Val(); len(got) != 1 || got[0] != itoa(u.ID) {
		t.Errorf("pending entries %v after a listing past the ghost's time, want carol's alone", got)
	}
}

// A follow racing its followee's suspension either stands and answers as
// one made, or is undone and answers ErrUserNotFound: never kept while
// refused, and both sides of each agree.
func TestFollowRacingSuspension(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	target := signUp(t, s, "target")
	var fans []User
	for i := range 20 {
		fans = append(fans, signUp(t, s, "fan"+itoa(int64(i))))
	}
	errs := make([]error, len(fans))
	var wg sync.WaitGroup
	for i, f := range fans {
		wg.Go(func() { _, _, errs[i] = s.Follow(ctx, f.ID, "target") })
	}
	wg.Go(func() {
		if _, err := s.Suspend(ctx, target.ID); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	for i, f := range fans {
		stands := s.rdb.ZScore(ctx, s.keys.following(f.ID), itoa(target.ID)).Err() == nil
		if errs[i] != nil && !errors.Is(errs[i], ErrUserNotFound) {
			t.Errorf("%s's follow: %v", f.Login, errs[i])
		}
		if errs[i] != nil && stands {
			t.Errorf("%s's follow answered %v, and stands", f.Login, errs[i])
		}
		if errs[i] == nil && !stands {
			t.Errorf("%s's follow answered as made, and does not stand", f.Login)
		}
		followsAgree(t, s, f.ID, target.ID)
	}
}

// slowAnswer holds back the first answer read after a write that names
// key by delay: as a busy Redis, or network, would, while the request's
// deadline passes.
type slowAnswer struct {
	key   []byte
	delay time.Duration
	armed atomic.Bool
}

func (h *slowAnswer) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &slowConn{Conn: c, h: h}, nil
	}
}
func (h *slowAnswer) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *slowAnswer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

type slowConn struct {
	net.Conn
	h     *slowAnswer
	armed bool
}

func (c *slowConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, c.h.key) && c.h.armed.CompareAndSwap(false, true) {
		c.armed = true
	}
	return c.Conn.Write(b)
}

func (c *slowConn) Read(b []byte) (int, error) {
	if c.armed {
		c.armed = false
		time.Sleep(c.h.delay)
	}
	return c.Conn.Read(b)
}

// A like whose request's deadline passes while the answer to its writes
// is on its way stands with its notification: the writes are the like's
// own, not the request's, and a retry, which finds the like, notifies
// nothing.
func TestLikeOutlivesItsDeadline(t *testing.T) {
	t.Parallel()
	base, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, base, "ann"), signUp(t, base, "bob")
	st := post(t, base, ann.ID, "likeable")
	slow := &slowAnswer{key: []byte(base.keys.likes(st.ID)), delay: 1500 * time.Millisecond}
	// As the server's client: a context's deadline bounds each call.
	var c redis.UniversalClient
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		opt := r.Options()
		opt.ContextTimeoutEnabled = true
		cc := redis.NewClusterClient(opt)
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(slow) })
		c = cc
	case *redis.Client:
		opt := r.Options()
		opt.ContextTimeoutEnabled = true
		c = redis.NewClient(opt)
		c.AddHook(slow)
	}
	t.Cleanup(func() { c.Close() })
	s := New(c, base.opts)
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := s.Like(rctx, bob.ID, st.ID)
	t.Logf("the like, past its deadline: %v", err)
	if !slow.armed.Load() {
		t.Fatal("no write named the likes")
	}
	if _, err := base.Like(ctx, bob.ID, st.ID); err != nil { // the retry
		t.Fatal(err)
	}
	likes := rdb.ZCard(ctx, base.keys.likes(st.ID)).Val()
	if n, _, err := base.UnreadNotifications(ctx, ann.ID); err != nil || n != likes || likes != 1 {
		t.Errorf("likes %d, ann's unread notifications %d (%v); want 1 and 1", likes, n, err)
	}
}

// A removal from a list whose client goes once the membership is gone is
// finished all the same: the member's statuses leave the list's timeline.
func TestListRemoveOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	owner, m := signUp(t, s, "owner"), signUp(t, s, "member")
	follow(t, s, owner.ID, "member")
	st := post(t, s, m.ID, "in the list")
	l, err := s.CreateList(ctx, owner.ID, "l")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddListMember(ctx, owner.ID, l.ID, "member"); err != nil {
		t.Fatal(err)
	}
	if got := listTimelineIDs(t, s, l.ID); !slices.Contains(got, st.ID) {
		t.Fatalf("the list holds %v, want the member's status %d", got, st.ID)
	}
	if _, err := s.RemoveListMember(cutAt(ctx, rdb, listRemoveScript), owner.ID, l.ID, "member"); err != nil {
		t.Errorf("the removal: %v", err)
	}
	if got := listTimelineIDs(t, s, l.ID); len(got) != 0 {
		t.Errorf("the list holds %v after its member was removed, want nothing", got)
	}
}

// runAfter runs do once, right after Redis has run script through the
// client it hooks.
type runAfter struct {
	script *redis.Script
	do     func()
	once   sync.Once
}

func (h *runAfter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *runAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		err := next(ctx, c)
		if err == nil && (&cancelAfter{script: h.script}).runs(c) {
			h.once.Do(h.do)
		}
		return err
	}
}
func (h *runAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A follow whose followee is suspended as it is written answers
// ErrUserNotFound and is not kept, whether the suspension lands before its
// followee's side or after; a follow that stood already, repeated then,
// stays, as every follow of a suspended account does.
func TestFollowOvertakenBySuspension(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before bool // ann follows bob already
		at     func(s *Service, rdb redis.UniversalClient, suspend func())
	}{
		{"between the sides", false, func(s *Service, _ redis.UniversalClient, suspend func()) { s.betweenFollowSides = suspend }},
		{"after the followee's side", false, func(_ *Service, rdb redis.UniversalClient, suspend func()) {
			rdb.AddHook(&runAfter{script: followFolloweeScript, do: suspend})
		}},
		{"repeated, after the followee's side", true, func(_ *Service, rdb redis.UniversalClient, suspend func()) {
			rdb.AddHook(&runAfter{script: followFolloweeScript, do: suspend})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
			follow(t, s, bob.ID, "ann") // a follow of ann's would make friends
			if tc.before {
				follow(t, s, ann.ID, "bob")
			}
			tc.at(s, rdb, func() {
				if _, err := s.Suspend(context.WithoutCancel(ctx), bob.ID); err != nil {
					t.Error(err)
				}
			})
			if _, _, err := s.Follow(ctx, ann.ID, "bob"); !errors.Is(err, ErrUserNotFound) {
				t.Errorf("the follow: %v, want ErrUserNotFound", err)
			}
			stands := s.rdb.ZScore(ctx, s.keys.following(ann.ID), itoa(bob.ID)).Err() == nil
			if stands != tc.before {
				t.Errorf("ann follows bob after the suspension: %v, want %v", stands, tc.before)
			}
			followsAgree(t, s, ann.ID, bob.ID)
		})
	}
}
