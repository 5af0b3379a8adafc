package realtime

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// A stream that watches the global timeline gets every status posted and
// deleted, through any instance, once each; one that does not, or no longer
// does, gets nothing of it; and an instance is subscribed to the global
// channel only while one of its streams watches.
func TestGlobalWatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	other := e.peer(envOptions{})
	poster, watcher, second, bystander := e.signUp("poster"), e.signUp("gwatcher"), e.signUp("second"), e.signUp("bystander")
	ws, ss, bs := other.connect(watcher), other.connect(second), other.connect(bystander)
	numsub := func() int64 {
		t.Helper()
		n, err := e.rdb.PubSubNumSub(t.Context(), e.social.GlobalChannel()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n[e.social.GlobalChannel()]
	}
	if n := numsub(); n != 0 {
		t.Fatalf("before any watch, the global channel has %d subscribers, want 0", n)
	}

	watch := map[string]string{"type": protocol.TypeWatch, "timeline": protocol.TimelineGlobal}
	unwatch := map[string]string{"type": protocol.TypeUnwatch, "timeline": protocol.TimelineGlobal}
	ws.send(watch)
	if f := ws.next(10 * time.Second); f.Type != protocol.TypeWatching || f.Timeline != protocol.TimelineGlobal {
		t.Fatalf("the answer to a watch is %+v, want watching global", f)
	}
	ss.send(watch)
	if f := ss.next(10 * time.Second); f.Type != protocol.TypeWatching {
		t.Fatalf("the answer to the second watch is %+v, want watching", f)
	}
	if n := numsub(); n != 1 {
		t.Fatalf("with two watchers on one instance, the global channel has %d subscribers, want 1", n)
	}

	st := e.post(poster, "for everyone")
	if err := e.social.DeleteStatus(t.Context(), poster.id, st.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("global_status %d", st.ID), fmt.Sprintf("global_status_deleted %d", st.ID)}
	for name, c := range map[string]struct {
		u    user
		s    *stream
		want []string
	}{"watcher": {watcher, ws, want}, "second": {second, ss, want}, "bystander": {bystander, bs, nil}} {
		if got := describe(e.routed(c.u, c.s)); !slices.Equal(got, c.want) {
			t.Errorf("the %s's stream got %q, want %q", name, got, c.want)
		}
	}

	// After an unwatch nothing comes; the other watcher keeps the channel.
	ws.send(unwatch)
	// An unwatch has no answer: wait until the hub has taken it in.
	testio.Eventually(t, 10*time.Second, func() string {
		other.hub.mu.RLock()
		defer other.hub.mu.RUnlock()
		if n := len(other.hub.watchers); n != 1 {
			return fmt.Sprintf("the hub holds %d watchers after one unwatched, want 1", n)
		}
		return ""
	})
	st = e.post(poster, "after the unwatch")
	if got := describe(e.routed(watcher, ws)); len(got) != 0 {
		t.Errorf("after its unwatch, the stream got %q, want nothing", got)
	}
	if got, want := describe(e.routed(second, ss)), []string{fmt.Sprintf("global_status %d", st.ID)}; !slices.Equal(got, want) {
		t.Errorf("the remaining watcher got %q, want %q", got, want)
	}
	if n := numsub(); n != 1 {
		t.Errorf("with one watcher left, the global channel has %d subscribers, want 1", n)
	}
	// The last watcher's stream closes: the instance unsubscribes.
	ss.ws.Close(1000, "")
	testio.Eventually(t, 10*time.Second, func() string {
		if n := numsub(); n != 0 {
			return fmt.Sprintf("after the last watcher left, the global channel has %d subscribers, want 0", n)
		}
		return ""
	})
	other.hub.mu.RLock()
	left := len(other.hub.watchers)
	other.hub.mu.RUnlock()
	if left != 0 {
		t.Errorf("the hub holds %d watchers, want 0", left)
	}
}

// A watch of a timeline that cannot be watched is refused with an error
// frame, and the stream stays open and watches nothing.
func TestGlobalWatchRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	u := e.signUp("refused")
	s := e.connect(u)
	for _, f := range []map[string]any{
		{"type": protocol.TypeWatch, "timeline": "home"},
		{"type": protocol.TypeWatch},
		{"type": protocol.TypeUnwatch, "timeline": 7},
	} {
		s.send(f)
	}
	for range 2 {
		if f := s.next(10 * time.Second); f.Type != protocol.TypeError || f.Code != protocol.CodeInvalidWatch {
			t.Fatalf("got %v, want error invalid_watch", f)
		}
	}
	// The third is not a JSON object the frame's shape reads.
	if f := s.next(10 * time.Second); f.Type != protocol.TypeError || f.Code != protocol.CodeInvalidJSON {
		t.Fatalf("got %v, want error invalid_json", f)
	}
	if n := e.rdb.PubSubNumSub(t.Context(), e.social.GlobalChannel()).Val()[e.social.GlobalChannel()]; n != 0 {
		t.Errorf("the global channel has %d subscribers, want 0", n)
	}
}

// When the pub/sub connection is lost and made again, a watcher may have
// missed statuses: it is told its watch is live again, the client's cue to
// read what came since the newest status it holds.
func TestGlobalWatchAfterPubSubReconnect(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	e := newEnv(t, envOptions{rdb: rdb})
	u := e.signUp("rewatcher")
	s := e.connect(u)
	s.send(map[string]string{"type": protocol.TypeWatch, "timeline": protocol.TimelineGlobal})
	if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching {
		t.Fatalf("the answer to a watch is %+v, want watching", f)
	}
	if err := rdb.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if f := s.next(15 * time.Second); f.Type != protocol.TypeWatching {
		t.Fatalf("after the pub/sub connection came back the stream got %+v, want watching", f)
	}
	// The user's own channel is subscribed again apart from the global
	// one: what is published on it before is not heard (the client's
	// resume covers that). Once confirmed again, its frames are held back
	// until the stream's session is checked: wait for both.
	h := e.hub
	testio.Eventually(t, 30*time.Second, func() string {
		if n := e.subscribers(u); n != 1 {
			return fmt.Sprintf("the user's channel has %d subscribers, want 1", n)
		}
		h.mu.RLock()
		defer h.mu.RUnlock()
		l := h.users[e.social.UserChannel(u.id)]
		if n := h.Stats.PubSubRestarts.Load(); n < 2 || len(h.lost) > 0 || l == nil || l.checking {
			return fmt.Sprintf("%d channels confirmed again (want the user's and the global one), %d lost, the user held back: %v",
				n, len(h.lost), l == nil || l.checking)
		}
		return ""
	})
	st := e.post(u, "after the reconnect")
	// The two come on two channels, and the user's may be caught up from
	// the timeline after its own confirmation: in either order.
	got, want := describe(e.routed(u, s)), []string{fmt.Sprintf("global_status %d", st.ID), fmt.Sprintf("status %d", st.ID)}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("after the reconnect the stream got %q, want %q", got, want)
	}
}

// A mute made while a user's channel was lost (its hidden_changed never
// came) is not yet in the hidden sets of the user's streams when the
// channel is confirmed again: until the check has read them again, the
// global statuses are not sent to those that watch (the home ones are
// held), and once it has, each gets a watching frame, its cue to read the
// global timeline again, which the server filters.
func TestGlobalWatchHeldWhileHiddenIsReadAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ann, bob := e.signUp("gann"), e.signUp("gbob")
	e.follow(ann, bob)
	s := e.connect(ann)
	s.send(map[string]string{"type": protocol.TypeWatch, "timeline": protocol.TimelineGlobal})
	if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching {
		t.Fatalf("got %v, want watching", f)
	}
	// The mute, written while the channel was lost: no stream was told.
	mutes := e.prefix + "mutes:" + strconv.FormatInt(ann.id, 10) // one Redis: no hash tag
	if err := e.rdb.ZAdd(t.Context(), mutes, redis.Z{Score: float64(time.Now().UnixMilli()), Member: bob.id}).Err(); err != nil {
		t.Fatal(err)
	}
	e.hub.confirmed(e.social.UserChannel(ann.id)) // made again, as after a loss
	st := e.post(bob, "muted by ann")
	got := describe(e.routed(ann, s))
	for _, leak := range []string{fmt.Sprintf("global_status %d", st.ID), fmt.Sprintf("status %d", st.ID)} {
		if slices.Contains(got, leak) {
			t.Errorf("ann's stream got %q of bob, whom she muted during the loss: %q", leak, got)
		}
	}
	if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching {
		t.Errorf("after the check, ann's stream got %v, want watching", f)
	}
}
