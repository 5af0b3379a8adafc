package presence

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestHeartbeats(t *testing.T) {
	t.Parallel()
	heartbeats(t, newEnv(t))
}

func TestEmbeddedHeartbeats(t *testing.T) {
	t.Parallel()
	e, _ := newEmbeddedEnv(t)
	heartbeats(t, e)
}

// One Heartbeats call leaves every key as one Heartbeat per connection
// would: last.seen, connected, the connections, the minute's active set and
// HyperLogLog, the online copy; and announces the users it brings online
// (a connection swept meanwhile is registered again), once each.
func heartbeats(t *testing.T, e env) {
	tr := e.tracker(t, Options{Window: 2 * time.Second})
	ctx := ctxT(t)
	const watcher, back, twoConns, steady = 1, 2, 3, 4
	for _, u := range []int64{back, twoConns, steady} {
		e.befriend(t, watcher, u)
	}
	mustConnect(t, tr, watcher, "w")
	mustConnect(t, tr, twoConns, "t1")
	mustConnect(t, tr, twoConns, "t2")
	mustConnect(t, tr, steady, "s")
	onlineFriends(t, tr, watcher) // make the shared copy, which beats then keep
	events := e.subscribe(t, watcher)
	k := keys{prefix: e.prefix}
	// back's connection is gone from the registry (swept, or Redis lost it).
	before := e.now(t)

	beats := []Beat{{back, "b"}, {twoConns, "t1"}, {twoConns, "t2"}, {steady, "s"}}
	if err := tr.Heartbeats(ctx, beats); err != nil {
		t.Fatal(err)
	}
	checkEvent(t, nextEvent(t, events, 2*time.Second), back, true)
	noEvent(t, events, 200*time.Millisecond)

	for _, u := range []int64{back, twoConns, steady} {
		seen, err := e.rdb.ZScore(ctx, k.lastSeen(), itoa(u)).Result()
		if err != nil || seen < float64(before.UnixMilli()) {
			t.Errorf("last.seen of %d = %v (%v), want now", u, seen, err)
		}
		if exp, err := e.rdb.ZScore(ctx, k.connected(), itoa(u)).Result(); err != nil || exp < float64(before.Add(2*time.Second).UnixMilli()) {
			t.Errorf("connected expiry of %d = %v (%v), want now + W", u, exp, err)
		}
		if _, err := e.rdb.ZScore(ctx, k.onlineCopy(), itoa(u)).Result(); err != nil {
			t.Errorf("%d not in the online copy: %v", u, err)
		}
	}
	conns, err := e.rdb.ZRange(ctx, k.conns(twoConns), 0, -1).Result()
	if slices.Sort(conns); err != nil || !slices.Equal(conns, []string{"t1", "t2"}) {
		t.Errorf("connections of %d = %v (%v)", twoConns, conns, err)
	}
	if ttl, err := e.rdb.PTTL(ctx, k.conns(back)).Result(); err != nil || ttl <= 0 {
		t.Errorf("connections key of %d has TTL %v (%v), want one", back, ttl, err)
	}
	minute := e.now(t).Unix() / 60
	members, _ := e.rdb.SMembers(ctx, k.activeUsers(minute)).Result()
	for _, u := range []int64{back, twoConns, steady} {
		if !slices.Contains(members, itoa(u)) && minute == before.Unix()/60 {
			t.Errorf("%d not in the active set of minute %d: %v", u, minute, members)
		}
	}
	if got := onlineFriends(t, tr, watcher); !slices.Equal(sortedInts(got), []int64{back, twoConns, steady}) {
		t.Errorf("online friends = %v", got)
	}

	// Longer lists go in several calls.
	many := make([]Beat, 2*MaxBeatsPerCall+1)
	for i := range many {
		many[i] = Beat{UID: int64(1000 + i), ConnID: fmt.Sprint("c", i)}
	}
	if err := tr.Heartbeats(ctx, many); err != nil {
		t.Fatal(err)
	}
	if n, err := e.rdb.ZCard(ctx, k.connected()).Result(); err != nil || n != int64(4+len(many)) {
		t.Errorf("connected holds %d (%v), want %d", n, err, 4+len(many))
	}
	if err := tr.Heartbeats(ctx, []Beat{{0, "x"}}); err == nil {
		t.Error("a beat of uid 0 was taken")
	}
}

func sortedInts(v []int64) []int64 {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}
