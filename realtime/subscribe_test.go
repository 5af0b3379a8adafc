package realtime

import (
	"fmt"
	"testing"
	"time"

	"chorus/internal/testio"

	"github.com/coder/websocket"
)

// Channels waiting to be subscribed are subscribed in batches: a reconnect
// storm of thousands of users costs a few SUBSCRIBEs, and each user's
// streams are let in once Redis confirms their channel. Asking for a change
// never waits, however many wait for a subscriber that cannot take them:
// the router asks (a pulled author followed), and on a cluster the
// subscriber may be waiting for the router.
func TestSubscribeInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	h := e.hub
	const n = 3000
	var users []*local
	// While the hub's lock is held the subscriber cannot act on what it
	// took: the storm piles up behind it, as behind a slow round trip.
	h.mu.Lock()
	for i := range n {
		channel := e.social.UserChannel(int64(900_000 + i))
		u := &local{uid: int64(900_000 + i), conns: map[*conn]struct{}{}, ready: make(chan struct{})}
		h.users[channel] = u
		users = append(users, u)
		h.resync(channel)
	}
	h.mu.Unlock()
	for i, u := range users {
		select {
		case <-u.ready:
		case <-time.After(10 * time.Second):
			t.Fatalf("channel %d of %d never confirmed", i, n)
		}
	}
	// Six full batches of 500, and maybe two small ones: one taken before
	// the storm began, and one whose linger ended while it was still
	// piling up (a slow machine); the subscriber then waits for the lock
	// until the storm is all there.
	if got, most := h.Stats.SubscribeCommands.Load(), int64(8); got > most {
		t.Fatalf("%d SUBSCRIBEs for %d channels, want at most %d", got, n, most)
	}
	subs, err := e.rdb.PubSubNumSub(t.Context(), e.social.UserChannel(900_000), e.social.UserChannel(900_000+n-1)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for ch, c := range subs {
		if c != 1 {
			t.Fatalf("%s has %d subscribers, want 1 (%v)", ch, c, fmt.Sprint(subs))
		}
	}
}

// A user's channel stays subscribed while any of their streams is open
// here, and is unsubscribed once the last one closes.
func TestLastStreamUnsubscribes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	h := e.hub
	u := e.signUp("two_tabs")
	first, second := e.connect(u), e.connect(u)
	if n := e.subscribers(u); n != 1 {
		t.Fatalf("%d subscribers of a user with two streams, want 1", n)
	}

	first.ws.Close(websocket.StatusNormalClosure, "")
	testio.Eventually(t, 10*time.Second, func() string {
		if n := h.admitted.Load(); n != 1 { // counted down once the stream has left
			return fmt.Sprintf("%d streams admitted after one of two closed, want 1", n)
		}
		return ""
	})
	e.settle()
	if n := e.subscribers(u); n != 1 {
		t.Fatalf("%d subscribers after one of two streams closed, want 1", n)
	}
	st := e.post(u, "still here")
	if f := second.next(5 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
		t.Fatalf("the stream left open got %v, want status %d", f, st.ID)
	}

	second.ws.Close(websocket.StatusNormalClosure, "")
	testio.Eventually(t, 10*time.Second, func() string {
		if n := e.subscribers(u); n != 0 {
			return fmt.Sprintf("%d subscribers after the last stream closed, want 0", n)
		}
		return ""
	})
	channel := e.social.UserChannel(u.id)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.users[channel] != nil || h.live[channel] {
		t.Fatalf("the hub still holds the channel of a user gone: user %v, live %v", h.users[channel], h.live[channel])
	}
}

// A user whose stream reconnects while the old one's unsubscribe is under
// way, before it or after it, is subscribed again, misses nothing posted
// once the new stream is open, and no confirmation of it is taken for a
// lost pub/sub connection.
func TestReconnectWhileUnsubscribing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	u := e.signUp("reconnector")
	old := e.connect(u)
	for round := range 30 {
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			old.ws.Close(websocket.StatusNormalClosure, "")
		}()
		// Spread the new stream's join over the old one's leave.
		time.Sleep(time.Duration(round%6) * time.Millisecond)
		s := e.connect(u)
		<-closed
		st := e.post(u, fmt.Sprintf("round %d", round))
		if f := s.next(10 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
			t.Fatalf("round %d: the new stream got %v, want status %d", round, f, st.ID)
		}
		old = s
	}
	if n := e.hub.Stats.PubSubRestarts.Load(); n != 0 {
		t.Fatalf("PubSubRestarts = %d with the pub/sub connection never lost, want 0", n)
	}
	if n := e.subscribers(u); n != 1 {
		t.Fatalf("%d subscribers of a user with one stream, want 1", n)
	}
}

// A confirmation that comes after the subscriber undid its subscription
// (the user's streams gone before the router read it) is let go: the next
// stream of the user waits for its own subscription, as one that came
// first would, and that subscription's confirmation is no restart.
func TestLateConfirmationOfAChannelLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	h := e.hub
	u := e.signUp("late")
	channel := e.social.UserChannel(u.id)
	h.confirmed(channel) // as read late, its subscription undone since
	h.mu.RLock()
	live := h.live[channel]
	h.mu.RUnlock()
	if live {
		t.Fatal("a confirmation of a channel not subscribed marked it live")
	}
	s := e.connect(u)
	st := e.post(u, "after the late confirmation")
	if f := s.next(5 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
		t.Fatalf("the stream got %v, want status %d", f, st.ID)
	}
	if n := h.Stats.PubSubRestarts.Load(); n != 0 {
		t.Fatalf("PubSubRestarts = %d, want 0: the stream's own confirmation was taken for a restart", n)
	}
}
