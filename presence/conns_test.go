package presence

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestConnectionCap(t *testing.T) {
	t.Parallel()
	onBackends(t, connectionCap)
}

// connectionCap runs on any backend: connects of one user racing on five
// instances never take more than the cap, and a disconnect frees a place.
func connectionCap(t *testing.T, e env) {
	const cap, tries, alice = 5, 50, 1
	var trs []*Tracker
	for range 5 {
		trs = append(trs, e.tracker(t, Options{MaxConnsPerUser: cap}))
	}
	ctx := ctxT(t)
	var mu sync.Mutex
	var accepted []string
	refused := 0
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			conn := fmt.Sprintf("tab-%d", i)
			_, err := trs[i%len(trs)].Connect(ctx, alice, conn)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted = append(accepted, conn)
			case errors.Is(err, ErrTooManyConnections):
				refused++
			default:
				t.Errorf("connect %s: %v", conn, err)
			}
		})
	}
	wg.Wait()
	if len(accepted) != cap || refused != tries-cap {
		t.Fatalf("%d connects: %d accepted, %d refused; want %d and %d", tries, len(accepted), refused, cap, tries-cap)
	}
	k := e.keys()
	if n := e.rdb.HLen(ctx, k.conns(alice)).Val(); n != cap {
		t.Fatalf("alice's connections key holds %d, want %d", n, cap)
	}

	// Heartbeats of the connections held, and a connect again of one of
	// them, are not new connections.
	for _, conn := range accepted {
		if err := trs[0].Heartbeat(ctx, alice, conn); err != nil {
			t.Fatalf("heartbeat %s at the cap: %v", conn, err)
		}
	}
	mustConnect(t, trs[1], alice, accepted[0])

	mustDisconnect(t, trs[2], alice, accepted[0])
	mustConnect(t, trs[3], alice, "tab-after")
	if _, err := trs[4].Connect(ctx, alice, "tab-too-many"); !errors.Is(err, ErrTooManyConnections) {
		t.Fatalf("connect at the cap again = %v, want ErrTooManyConnections", err)
	}
	if n := e.rdb.HLen(ctx, k.conns(alice)).Val(); n != cap {
		t.Fatalf("alice's connections key holds %d, want %d", n, cap)
	}
}

// A refused connect writes nothing: a user whose connections key is full
// but who is not online (here planted alone) stays offline and unseen, and
// friends hear nothing.
func TestRefusedConnectWritesNothing(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		const cap, alice, bob = 3, 1, 2
		tr := e.tracker(t, Options{MaxConnsPerUser: cap, CountsTTL: -1})
		k := e.keys()
		ctx := ctxT(t)
		e.befriend(t, alice, bob)
		mustConnect(t, tr, bob, "bob")
		events := e.subscribe(t, bob)
		onlineFriends(t, tr, bob) // the shared copy exists: a write to it would show
		minute := clearOfMinuteEdge(t, e)

		for i := range cap {
			plantConn(t, e, alice, fmt.Sprint("elsewhere-", i), e.now(t).Add(time.Hour))
		}
		if _, err := tr.Connect(ctx, alice, "tab"); !errors.Is(err, ErrTooManyConnections) {
			t.Fatalf("connect beyond the cap = %v, want ErrTooManyConnections", err)
		}
		if online, seen := presenceOf(t, tr, alice); online || seen != nil {
			t.Fatalf("after a refused connect: online=%v last_seen=%v, want offline, never seen", online, seen)
		}
		if got := onlineFriends(t, tr, bob); len(got) != 0 {
			t.Fatalf("bob's online friends after alice's refused connect = %v", got)
		}
		if got, want := counts(t, tr), (Counts{Online: 1, ActiveLast10m: 1}); got != want {
			t.Fatalf("counts after a refused connect = %+v, want bob's %+v", got, want)
		}
		if in := e.rdb.SIsMember(ctx, k.activeUsers(minute), itoa(alice)).Val(); in {
			t.Fatalf("alice in this minute's active set after a refused connect")
		}
		if _, err := e.rdb.HGet(ctx, k.conns(alice), "tab").Result(); err != redis.Nil {
			t.Fatalf("refused connection registered: %v", err)
		}
		noEvent(t, events, 200*time.Millisecond)
	})
}

// The cap refuses new connections only: expired ones do not count, and a
// heartbeat is never refused. With no MaxConnsPerUser the cap is
// DefaultMaxConnsPerUser; a negative one lifts it.
func TestConnectionCapCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		max     int
		allowed int // -1: no cap
	}{
		{"default", 0, DefaultMaxConnsPerUser},
		{"two", 2, 2},
		{"none", -1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			onBackends(t, func(t *testing.T, e env) {
				tr := e.tracker(t, Options{MaxConnsPerUser: tc.max})
				ctx := ctxT(t)
				const alice = 1

				// Connections of a vanished instance, its lease run out: not counted.
				for i := range 20 {
					plantConn(t, e, alice, fmt.Sprint("gone-", i), e.now(t).Add(-time.Second))
				}
				n := tc.allowed
				if n < 0 {
					n = 3 * DefaultMaxConnsPerUser
				}
				for i := range n {
					mustConnect(t, tr, alice, fmt.Sprint("tab-", i))
				}
				_, err := tr.Connect(ctx, alice, "one-more")
				if refused := errors.Is(err, ErrTooManyConnections); refused != (tc.allowed >= 0) || (!refused && err != nil) {
					t.Fatalf("connect after %d = %v, want refused=%v", n, err, tc.allowed >= 0)
				}
				// A heartbeat registering a connection the registry lost (swept,
				// Redis restarted) is let through whatever the count.
				if err := tr.Heartbeat(ctx, alice, "lost"); err != nil {
					t.Fatalf("heartbeat of a lost connection: %v", err)
				}
			})
		})
	}
}
