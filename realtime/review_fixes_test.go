package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"
	"chorus/social"

	"golang.org/x/time/rate"
)

// openingHook is a Feed that runs a hook, once, after a stream's opening
// is read and before the hub acts on it.
type openingHook struct {
	Feed
	hook atomic.Pointer[func()]
}

func (f *openingHook) StreamOpenings(ctx context.Context, keys []social.StreamKey) ([]social.StreamOpening, error) {
	o, err := f.Feed.StreamOpenings(ctx, keys)
	if h := f.hook.Swap(nil); h != nil {
		(*h)()
	}
	return o, err
}

// pullEnv is an env whose pulled authors are made by its own worker, with
// a hook on its stream openings.
func pullEnv(t *testing.T) (*env, *openingHook) {
	t.Helper()
	var hooked *openingHook
	e := newEnv(t, envOptions{social: social.Options{PullThreshold: 2}, feed: func(s *social.Service) Feed {
		hooked = &openingHook{Feed: s}
		return hooked
	}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go e.social.NewWorker("review-fixes", slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)
	return e, hooked
}

// pullChanges is how many pull_added and pull_removed messages h routed
// to the local connections of the user of channel; 0 while none are open.
func pullChanges(h *Hub, channel string) uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if u := h.users[channel]; u != nil {
		return u.pullChanges
	}
	return 0
}

// readsAuthor reports whether h holds the user of channel as a reader of
// author.
func readsAuthor(h *Hub, channel string, author int64) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	u := h.users[channel]
	if u == nil {
		return false
	}
	_, ok := u.pulls[author]
	return ok
}

// whileOpening has the next stream opening run change, a follow or
// unfollow of a pulled author by the user of channel, once its opening was
// read, and then wait until h has routed the pull message it makes (the
// user's count of pull changes passes from). It runs on the stream's
// goroutine: it reports failures with t.Error.
func (f *openingHook) whileOpening(t *testing.T, h *Hub, channel string, change func(context.Context) error) {
	from := pullChanges(h, channel)
	hook := func() {
		if err := change(context.Background()); err != nil {
			t.Error(err)
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for pullChanges(h, channel) <= from {
			if time.Now().After(deadline) {
				t.Error("the pull message was never routed")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	f.hook.Store(&hook)
}

// A follow or unfollow of a pulled author routed while a stream opens,
// after its opening read the user's pulled authors, holds: the hub neither
// takes an unfollowed author back from that read nor loses a followed one.
// So for a user's first stream, and for another stream of a user already
// connected.
func TestPullChangedWhileStreamOpens(t *testing.T) {
	for _, follow := range []bool{false, true} {
		for _, second := range []bool{false, true} {
			t.Run(fmt.Sprintf("follow=%v/second=%v", follow, second), func(t *testing.T) {
				pullChangedWhileStreamOpens(t, follow, second)
			})
		}
	}
}

func pullChangedWhileStreamOpens(t *testing.T, follow, second bool) {
	e, hooked := pullEnv(t)
	author := e.pulledAuthor(t)
	ann, bob := e.signUp("ann"), e.signUp("bob")
	e.follow(ann, bob)
	if !follow {
		e.follow(ann, author)
	}
	var streams []*stream
	if second {
		streams = append(streams, e.connect(ann))
	}
	channel := e.social.UserChannel(ann.id)
	hooked.whileOpening(t, e.hub, channel, func(ctx context.Context) error {
		if follow {
			_, _, err := e.social.Follow(ctx, ann.id, author.login)
			return err
		}
		_, err := e.social.Unfollow(ctx, ann.id, author.login)
		return err
	})
	streams = append(streams, e.connect(ann))
	e.settle()
	reads := readsAuthor(e.hub, channel, author.id)
	// None of the author's followers but ann is connected.
	subs := e.numSub(t, e.social.AuthorChannel(author.id))
	if reads != follow || subs != map[bool]int64{false: 0, true: 1}[follow] {
		t.Errorf("the hub holds ann as a reader of the author: %v, and the author's channel has %d subscribers; want %v", reads, subs, follow)
	}
	st := e.post(author, "after the change")
	ctl := e.post(bob, "control")
	want := ctl.ID
	if follow {
		want = st.ID
	}
	for _, s := range streams {
		if got := nextStatus(t, s, 10*time.Second); got != want {
			t.Fatalf("ann's stream got status %d first, want %d (the author's %d, bob's %d)", got, want, st.ID, ctl.ID)
		}
	}
}

// So on a Redis Cluster, where the user's channel and the author's are on
// different masters.
func TestPullChangedWhileStreamOpensOnCluster(t *testing.T) {
	for _, follow := range []bool{false, true} {
		for _, second := range []bool{false, true} {
			t.Run(fmt.Sprintf("follow=%v/second=%v", follow, second), func(t *testing.T) {
				pullChangedWhileStreamOpensOnCluster(t, follow, second)
			})
		}
	}
}

func pullChangedWhileStreamOpensOnCluster(t *testing.T, follow, second bool) {
	rdb, _ := redistest.ClusterClient(t)
	e := newClusterEnv(t, rdb, rdb)
	// A hub of the test's own over e's feed, with the hook.
	hooked := &openingHook{Feed: e.feed}
	e.hub = New(rdb, hooked, memPresence{}, Options{Prefix: e.feed.prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.url = serve(t, e.hub, func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get(tokenHeader)
		owners, _ := e.feed.SessionOwners(r.Context(), []string{session})
		if err := e.hub.Serve(w, r, owners[0], session); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	const ann, author = 100, 200
	channel, achan := e.feed.UserChannel(ann), e.feed.AuthorChannel(author)
	if e.masterOf(channel) == e.masterOf(achan) {
		t.Fatal("pick a reader and an author whose channels are on different masters")
	}
	var pulls []int64
	if !follow {
		pulls = []int64{author}
	}
	var streams []*stream
	if second {
		streams = append(streams, e.connect(ann, pulls...))
	}
	hooked.whileOpening(t, e.hub, channel, func(ctx context.Context) error {
		typ := protocol.TypePullRemoved
		e.feed.mu.Lock()
		e.feed.pulls[ann] = nil
		if follow {
			typ = protocol.TypePullAdded
			e.feed.pulls[ann] = []int64{author}
		}
		e.feed.mu.Unlock()
		raw, _ := json.Marshal(protocol.Internal{Type: typ, Author: author})
		return rdb.SPublish(ctx, channel, raw).Err()
	})
	streams = append(streams, e.connect(ann, pulls...))
	if reads := readsAuthor(e.hub, channel, author); reads != follow {
		t.Errorf("the hub holds ann as a reader of the author: %v, want %v", reads, follow)
	}
	master, err := rdb.MasterForKey(t.Context(), achan)
	if err != nil {
		t.Fatal(err)
	}
	want := map[bool]int64{false: 0, true: 1}[follow]
	testio.Eventually(t, 10*time.Second, func() string {
		if n := master.PubSubShardNumSub(t.Context(), achan).Val()[achan]; n != want {
			return fmt.Sprintf("the author's channel has %d subscribers, want %d", n, want)
		}
		return ""
	})
	st, n, err := e.feed.post(t.Context(), author, achan, ann)
	if err != nil || n != want {
		t.Fatalf("the author's status reached %d subscribers (%v), want %d", n, err, want)
	}
	if !follow {
		return
	}
	for _, s := range streams {
		if got := nextStatus(t, s, 10*time.Second); got != st.ID {
			t.Errorf("ann's stream got status %d, want the author's %d", got, st.ID)
		}
	}
}

// PresenceCoalesced counts each presence frame held back and then not
// sent, once: not one held back and sent once the second is over, nor the
// flush of a frame a friend_removed dropped.
func TestPresenceCoalescedCountsFramesNotSent(t *testing.T) {
	t.Parallel()
	h := &Hub{opts: Options{QueueSize: 64, FrameRate: rate.Inf, FrameBurst: 1}}
	c := newConn(h, 1, "session")
	u := &local{uid: 1, conns: map[*conn]struct{}{c: {}}}
	deliver := func(v map[string]any) {
		t.Helper()
		raw, _ := json.Marshal(v)
		ev, err := parseEvent(raw)
		if err != nil {
			t.Fatal(err)
		}
		h.deliver(u, ev, raw)
	}
	presence := func(uid int64, online bool) {
		t.Helper()
		deliver(map[string]any{"type": "presence", "user": map[string]any{"id": uid, "login": "u", "name": "N"}, "online": online, "last_seen": time.Now()})
	}
	check := func(when string, queued int, coalesced int64) {
		t.Helper()
		c.queue.mu.Lock()
		n := len(*c.queue.items)
		c.queue.mu.Unlock()
		if got := h.Stats.PresenceCoalesced.Load(); n != queued || got != coalesced {
			t.Fatalf("%s: %d frames queued and %d coalesced, want %d and %d", when, n, got, queued, coalesced)
		}
	}

	// Held back, then sent; then a flush that finds nothing held (as a
	// timer would, the frame sent already).
	presence(1001, true)
	presence(1001, false)
	c.flushPresence(1001)
	c.flushPresence(1001)
	check("a frame held back and sent", 2, 0)

	// Held back and replaced; the newer one tells what the last one sent
	// told: neither is sent.
	presence(1002, true)
	presence(1002, false)
	presence(1002, true)
	c.flushPresence(1002)
	check("a frame replaced, and one that told the same", 3, 2)

	// Held back and dropped by friend_removed, whose flush then finds
	// nothing.
	presence(1003, true)
	presence(1003, false)
	deliver(map[string]any{"type": "friend_removed", "user": map[string]any{"id": 1003, "login": "u", "name": "N"}})
	c.flushPresence(1003)
	check("a frame dropped by friend_removed", 5, 3)
}

// A presence frame held back about a user goes out before a profile frame
// about them published after it, not after it with the old name; one that
// tells what the last one sent told is not sent.
func TestHeldPresenceGoesBeforeProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	friend := e.signUp("friend")
	s := e.connect(friend)
	presence := func(uid int64, online bool) {
		e.publish(friend, map[string]any{"type": "presence", "user": map[string]any{"id": uid, "login": "u", "name": "Old"}, "online": online, "last_seen": time.Now()})
	}
	profile := func(uid int64) {
		e.publish(friend, map[string]any{"type": "profile", "user": map[string]any{"id": uid, "login": "u", "name": "New"}})
	}
	presence(1001, true)
	presence(1001, false) // held back
	profile(1001)
	presence(1002, true)
	presence(1002, false)
	presence(1002, true) // held back, telling what the first told
	profile(1002)
	var got []string
	for _, f := range e.routed(friend, s) {
		got = append(got, fmt.Sprintf("%s %d %v", f.Type, f.User.ID, f.Online))
	}
	want := []string{"presence 1001 true", "presence 1001 false", "profile 1001 false", "presence 1002 true", "profile 1002 false"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("frames %q, want %q", got, want)
	}
	// 1002's offline frame, replaced, and the online one after it.
	if n := e.hub.Stats.PresenceCoalesced.Load(); n != 2 {
		t.Fatalf("PresenceCoalesced = %d, want 2", n)
	}
}
