package realtime

import (
	"fmt"
	"testing"
	"time"
)

// Channels waiting to be subscribed are subscribed in batches: a reconnect
// storm of hundreds of users costs a few SUBSCRIBEs, and each user's
// streams are let in once Redis confirms their channel.
func TestSubscribeInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	h := e.hub
	const n = 1000
	var users []*local
	// While the hub's lock is held the subscriber cannot act on what it
	// took: the storm piles up behind it, as behind a slow round trip.
	h.mu.Lock()
	for i := range n {
		channel := e.social.UserChannel(int64(900_000 + i))
		u := &local{uid: int64(900_000 + i), conns: map[*conn]struct{}{}, ready: make(chan struct{})}
		h.users[channel] = u
		users = append(users, u)
		h.syncCh <- channel
	}
	h.mu.Unlock()
	for i, u := range users {
		select {
		case <-u.ready:
		case <-time.After(10 * time.Second):
			t.Fatalf("channel %d of %d never confirmed", i, n)
		}
	}
	// Two full batches of 500, and maybe one small one taken before the
	// storm piled up.
	if got, most := h.Stats.SubscribeCommands.Load(), int64(4); got > most {
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
