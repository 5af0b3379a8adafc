package social

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// A post notes its author's activity: on a session the instance has not
// seen (read first, one round trip more), in its first round trip; on one
// it has, checked in that round trip, in that round trip too, by a note
// that checks the session itself (on a cluster, where it cannot, once the
// session is known to be there, one round trip more when the instance has
// not noted the author lately). A session ended since is refused, posting
// nothing and noting nothing; a user back after InactiveAfter away has
// their home timeline rebuilt as their post goes on.
func TestPostNotesActivityInItsFirstRoundTrip(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected" // presence kept: the away are skipped
	author, token := signUpToken(t, s, "author")
	authenticate(t, s, token) // the instance knows the session
	postAs := func(message string) (Status, error) {
		return s.PostAs(ctx, PostRequest{Token: token, Message: message})
	}
	if _, err := postAs("loads the scripts"); err != nil {
		t.Fatal(err)
	}
	seenAt := func() float64 { return rdb.ZScore(ctx, s.keys.seen(), itoa(author.ID)).Val() }
	forget := func() { s.touches = newTouches(s.touchEvery()) }
	counter := &commandCounter{}
	rdb.AddHook(counter)
	counted := func(message string) int64 {
		t.Helper()
		before := counter.roundTrips.Load()
		if _, err := postAs(message); err != nil {
			t.Fatal(err)
		}
		return counter.roundTrips.Load() - before
	}

	noted := counted("noted lately")
	lastSeenAgo(t, s, author.ID, 2*s.touchEvery())
	forget()
	before := seenAt()
	want := noted
	if redistest.OnCluster() {
		want++
	}
	if trips := counted("not noted lately"); trips != want {
		t.Errorf("a post noting its author's activity made %d round trips, want %d", trips, want)
	}
	if at := seenAt(); at <= before {
		t.Errorf("the author's activity = %v after the post, %v before: not noted", at, before)
	}
	if !s.touches.recent(author.ID) {
		t.Error("the instance does not remember noting the author")
	}
	// A session the instance has not seen is read first, alone: one round
	// trip more, the activity noted with the reads all the same.
	lastSeenAgo(t, s, author.ID, 2*s.touchEvery())
	forget()
	s.sessionUsers.Remove(hashToken(token))
	before = seenAt()
	if trips := counted("session not seen"); trips != noted+1 {
		t.Errorf("a post on a session the instance had not seen made %d round trips, want %d", trips, noted+1)
	}
	if at := seenAt(); at <= before || !s.touches.recent(author.ID) {
		t.Errorf("the author's activity = %v after the post, %v before, remembered: %v", at, before, s.touches.recent(author.ID))
	}

	// Back after InactiveAfter away: what a followee posted meanwhile
	// skipped their home, and is there again once their post answered
	// (or, should the rebuild take longer than its wait, moments later).
	followee := signUp(t, s, "followee")
	follow(t, s, author.ID, "followee")
	lastSeenAgo(t, s, author.ID, 8*24*time.Hour)
	forget()
	missed := post(t, s, followee.ID, "while you were away")
	if slices.Contains(homeIDs(t, s, author.ID), missed.ID) {
		t.Fatalf("a status reached the home of a follower away for 8 days")
	}
	own, err := postAs("back")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for home := homeIDs(t, s, author.ID); !slices.Contains(home, missed.ID) || !slices.Contains(home, own.ID); home = homeIDs(t, s, author.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("home after the return = %v, want %d and %d", home, missed.ID, own.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if at := seenAt(); time.Since(time.UnixMilli(int64(at))) > time.Hour {
		t.Errorf("the author's activity = %v after their return: not noted", time.UnixMilli(int64(at)))
	}

	// A session ended since the instance saw it: refused, nothing posted,
	// the author not remembered as noted.
	lastSeenAgo(t, s, author.ID, 2*s.touchEvery())
	forget()
	before = seenAt()
	if err := rdb.Del(ctx, s.keys.session(hashToken(token))).Err(); err != nil {
		t.Fatal(err)
	}
	profileBefore := zsetIDs(t, s, s.keys.profile(author.ID))
	if _, err := postAs("after the end"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a post on an ended session: %v, want ErrUnauthenticated", err)
	}
	if got := zsetIDs(t, s, s.keys.profile(author.ID)); !slices.Equal(got, profileBefore) {
		t.Errorf("profile after a refused post = %v, before %v", got, profileBefore)
	}
	if s.touches.recent(author.ID) {
		t.Error("the instance remembers noting a user whose session had ended")
	}
	if at := seenAt(); at != before {
		t.Errorf("a post on an ended session noted its user: activity %v, %v before", at, before)
	}

	// The same, the user away past InactiveAfter, on the session as the
	// instance still knows it: their home is not rebuilt, no rebuild
	// queued, and they stay away.
	lastSeenAgo(t, s, author.ID, 8*24*time.Hour)
	forget()
	s.sessionUsers.Add(hashToken(token), author.ID)
	before = seenAt()
	missed = post(t, s, followee.ID, "while the session had ended")
	if _, err := postAs("after the end, away"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a post on an ended session, its user away: %v, want ErrUnauthenticated", err)
	}
	if n := rdb.Exists(ctx, s.keys.job(refillJobID(author.ID))).Val(); n != 0 {
		t.Error("a post on an ended session queued its away user's rebuild")
	}
	if slices.Contains(homeIDs(t, s, author.ID), missed.ID) {
		t.Error("a post on an ended session rebuilt its away user's home")
	}
	if at := seenAt(); at != before {
		t.Errorf("a post on an ended session noted its away user: activity %v, %v before", at, before)
	}
}

// Authenticate notes the user's activity in the round trip that checks
// their session, on one Redis, when the instance has seen the session
// before: the note checks the session itself, and a session that ended
// notes nothing. On a cluster, and on a session the instance has not
// seen, the note follows the check, one round trip more.
func TestAuthenticateNotesInTheSessionsRoundTrip(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected" // presence kept: the away are skipped
	user, token := signUpToken(t, s, "user")
	followee := signUp(t, s, "followee")
	follow(t, s, user.ID, "followee")
	authenticate(t, s, token) // the instance knows the session, the scripts are loaded
	seenAt := func() float64 { return rdb.ZScore(ctx, s.keys.seen(), itoa(user.ID)).Val() }
	forget := func() { s.touches = newTouches(s.touchEvery()) }
	counter := &commandCounter{}
	rdb.AddHook(counter)
	counted := func() (int64, error) {
		t.Helper()
		before := counter.roundTrips.Load()
		uid, err := s.Authenticate(ctx, token)
		if err == nil && uid != user.ID {
			t.Fatalf("Authenticate = %d, want %d", uid, user.ID)
		}
		return counter.roundTrips.Load() - before, err
	}
	mustCount := func(what string, want int64) {
		t.Helper()
		if trips, err := counted(); err != nil {
			t.Fatal(err)
		} else if trips != want {
			t.Errorf("%s: %d round trips, want %d", what, trips, want)
		}
	}

	noted := int64(1)
	if redistest.OnCluster() {
		noted = 2
	}
	lastSeenAgo(t, s, user.ID, 2*s.touchEvery())
	forget()
	before := seenAt()
	mustCount("a session the instance has seen, its user not noted lately", noted)
	if at := seenAt(); at <= before || !s.touches.recent(user.ID) {
		t.Errorf("activity = %v after, %v before, remembered: %v; want noted", at, before, s.touches.recent(user.ID))
	}
	mustCount("noted lately", 1)
	lastSeenAgo(t, s, user.ID, 2*s.touchEvery())
	forget()
	s.sessionUsers.Remove(hashToken(token))
	before = seenAt()
	mustCount("a session the instance has not seen", 2)
	if at := seenAt(); at <= before {
		t.Errorf("activity = %v after, %v before; want noted", at, before)
	}

	// Back after InactiveAfter away: their home is rebuilt.
	lastSeenAgo(t, s, user.ID, 8*24*time.Hour)
	forget()
	missed := post(t, s, followee.ID, "while you were away")
	if slices.Contains(homeIDs(t, s, user.ID), missed.ID) {
		t.Fatal("a status reached the home of a follower away for 8 days")
	}
	if _, err := counted(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(homeIDs(t, s, user.ID), missed.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("home after the return = %v, want %d", homeIDs(t, s, user.ID), missed.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if at := seenAt(); time.Since(time.UnixMilli(int64(at))) > time.Hour {
		t.Errorf("activity = %v after the return: not noted", time.UnixMilli(int64(at)))
	}

	// The session ends; the instance still knows it. Refused, nothing
	// noted, for a user noted an hour ago as for one away.
	if err := rdb.Del(ctx, s.keys.session(hashToken(token))).Err(); err != nil {
		t.Fatal(err)
	}
	for _, away := range []time.Duration{2 * s.touchEvery(), 8 * 24 * time.Hour} {
		lastSeenAgo(t, s, user.ID, away)
		forget()
		s.sessionUsers.Add(hashToken(token), user.ID)
		before = seenAt()
		missed := post(t, s, followee.ID, "while the session had ended")
		if _, err := s.Authenticate(ctx, token); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("away %v, an ended session: %v, want ErrUnauthenticated", away, err)
		}
		if at := seenAt(); at != before || s.touches.recent(user.ID) {
			t.Errorf("away %v, an ended session noted its user: activity %v, %v before, remembered: %v", away, at, before, s.touches.recent(user.ID))
		}
		if _, known := s.sessionUsers.Get(hashToken(token)); known {
			t.Errorf("away %v: the instance still knows an ended session", away)
		}
		if away > s.inactiveAfter() && slices.Contains(homeIDs(t, s, user.ID), missed.ID) {
			t.Errorf("away %v: an ended session rebuilt its user's home", away)
		}
	}
}

// A session that ends between its check and the note, both in one
// pipeline (a sign-out from another instance at that moment): the request
// goes on, its check having come first, but on one Redis the note, which
// checks the session as it runs, writes nothing and is not remembered, so
// the user's next request tries again (and is refused). On a cluster the
// note follows the check in a round trip of its own, and writes.
func TestSessionEndedAsItsNoteRuns(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ends := &endsSession{}
	rdb.AddHook(ends)
	for _, c := range []struct {
		login string
		do    func(token string) error
	}{
		{"authenticates", func(token string) error { _, err := s.Authenticate(ctx, token); return err }},
		{"posts", func(token string) error {
			_, err := s.PostAs(ctx, PostRequest{Token: token, Message: "as the session ends"})
			return err
		}},
	} {
		user, token := signUpToken(t, s, c.login)
		authenticate(t, s, token) // the instance knows the session
		lastSeenAgo(t, s, user.ID, 2*s.touchEvery())
		s.touches = newTouches(s.touchEvery())
		before := rdb.ZScore(ctx, s.keys.seen(), itoa(user.ID)).Val()
		ends.arm(s.keys.session(hashToken(token)))
		if err := c.do(token); err != nil {
			t.Fatalf("%s on a session that ends after its check: %v", c.login, err)
		}
		if !ends.fired.Load() {
			t.Fatalf("%s: the session was not ended after its check", c.login)
		}
		at := rdb.ZScore(ctx, s.keys.seen(), itoa(user.ID)).Val()
		if noted := at > before; noted != redistest.OnCluster() {
			t.Errorf("%s: activity %v, %v before: noted %v, want %v", c.login, at, before, noted, redistest.OnCluster())
		}
		if got := s.touches.recent(user.ID); got != redistest.OnCluster() {
			t.Errorf("%s: the instance remembers noting the user: %v, want %v", c.login, got, redistest.OnCluster())
		}
		if _, err := s.Authenticate(ctx, token); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: the next request on the ended session: %v, want ErrUnauthenticated", c.login, err)
		}
	}
}

// endsSession, once armed with a session's key, deletes it right after the
// GETEX that checks it, in the same pipeline, once.
type endsSession struct {
	mu    sync.Mutex
	key   string
	fired atomic.Bool
}

func (h *endsSession) arm(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.key = key
	h.fired.Store(false)
}

func (h *endsSession) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *endsSession) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *endsSession) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		key := h.key
		for i, c := range cmds {
			if key == "" || c.Name() != "getex" || len(c.Args()) < 2 || c.Args()[1] != key {
				continue
			}
			h.key = ""
			h.fired.Store(true)
			h.mu.Unlock()
			with := append(slices.Clone(cmds[:i+1]), redis.NewIntCmd(ctx, "del", key))
			return next(ctx, append(with, cmds[i+1:]...))
		}
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}
