package presence

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The sweep of an instance gone away announces its users offline side by
// side, announceParallel at once, not one after another: here every
// announcement waits, in its profile read, until announceParallel of them
// are under way together, which one after another never are. Each friend
// still gets every user's "offline", with that user's own last-seen time.
func TestSweepAnnouncesSideBySide(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		const users = 2*announceParallel + 3
		const bob = 1_000
		var inside, most atomic.Int64
		together := make(chan struct{})
		var once sync.Once
		gate := func(ctx context.Context, uid int64) (string, string, error) {
			n := inside.Add(1)
			defer inside.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if n >= announceParallel {
				once.Do(func() { close(together) })
			}
			select {
			case <-together:
			case <-time.After(10 * time.Second): // never side by side: go on, and fail below
				once.Do(func() { close(together) })
			}
			return profile(ctx, uid)
		}
		live := e.tracker(t, Options{Profile: gate})
		mustConnect(t, live, bob, "bob") // before his friends: nobody to tell
		events := e.subscribe(t, bob)
		now := e.now(t)
		seen := map[int64]time.Time{}
		for uid := int64(1); uid <= users; uid++ {
			e.befriend(t, uid, bob)
			seen[uid] = now.Add(-time.Minute - time.Duration(uid)*time.Second)
		}
		plant(t, e, seen, now.Add(-time.Second)) // their instance's lease ran out

		if n, err := live.Sweep(ctxT(t)); err != nil || n != users {
			t.Fatalf("sweep = %d, %v; want %d users", n, err, users)
		}
		if m := most.Load(); m < announceParallel {
			t.Errorf("at most %d announcements under way at once, want %d", m, announceParallel)
		}
		told := map[int64]bool{}
		for range users {
			ev := nextEvent(t, events, 10*time.Second)
			checkEvent(t, ev, ev.User.ID, false)
			if want := seen[ev.User.ID]; !ev.LastSeen.Equal(want.Truncate(time.Millisecond)) {
				t.Errorf("user %d last seen %v, want %v", ev.User.ID, ev.LastSeen, want)
			}
			told[ev.User.ID] = true
		}
		if len(told) != users {
			t.Errorf("bob was told of %d users, want %d", len(told), users)
		}
	})
}
