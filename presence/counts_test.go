package presence

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Counting the users active in the last ten minutes costs the same whatever
// their number: no SUNION of the per-minute sets, which stay as they were.
// One redis-server of its own, whose command statistics no other test
// disturbs.
func TestCountsNeverUnion(t *testing.T) {
	t.Parallel()
	e := newPrivateEnv(t)
	tr := e.tracker(t, Options{CountsTTL: -1})
	k := e.keys()
	minute := clearOfMinuteEdge(t, e)

	// 30 users: 1-10 connect now, 11-30 were active in earlier minutes of
	// the ten, some of them in several; 1-5 were active before too. 31 (ten
	// minutes ago) and 32 (a minute not begun) are not counted.
	for uid := int64(1); uid <= 10; uid++ {
		mustConnect(t, tr, uid, "c")
	}
	for ago := int64(1); ago <= 9; ago++ {
		plantActive(t, e, minute-ago, 10+ago, 20+ago, 1, 2, 3, 4, 5)
	}
	plantActive(t, e, minute-3, 30, 11, 12)
	plantActive(t, e, minute-7, 20, 29, 30)
	plantActive(t, e, minute-10, 31)
	plantActive(t, e, minute+1, 32)

	if got, want := counts(t, tr), (Counts{Online: 10, ActiveLast10m: 30}); got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
	if n := commandCalls(t, e, "sunion", "sunionstore"); n != 0 {
		t.Fatalf("Redis ran %d SUNION/SUNIONSTORE, want none", n)
	}
	// The per-minute sets are kept as they were.
	got, err := e.rdb.SMembers(ctxT(t), k.activeUsers(minute)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Fatalf("this minute's active set = %v, want users 1 to 10", got)
	}
}

// One Tracker runs the counts script at most once per CountsTTL, however
// many ask and however many at once, and again once the TTL has passed.
// One redis-server of its own, whose command statistics it counts.
func TestCountsCached(t *testing.T) {
	t.Parallel()
	e := newPrivateEnv(t)
	const ttl = time.Minute
	tr := e.tracker(t, Options{CountsTTL: ttl})
	var skew atomic.Int64 // how far the tracker's clock is set ahead
	tr.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	ctx := ctxT(t)
	for uid := int64(1); uid <= 3; uid++ {
		mustConnect(t, tr, uid, "c")
	}
	if err := countsScript.Load(ctx, e.rdb).Err(); err != nil {
		t.Fatal(err)
	}
	scriptRuns := func() int64 { return commandCalls(t, e, "evalsha", "eval") }

	// A caller who gives up leaves nothing behind.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tr.Counts(done); err == nil {
		t.Fatalf("counts with an ended context: no error")
	}

	before := scriptRuns()
	want := Counts{Online: 3, ActiveLast10m: 3}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if got, err := tr.Counts(ctx); err != nil || got != want {
				t.Errorf("concurrent counts = %+v, %v; want %+v", got, err, want)
			}
		})
	}
	wg.Wait()
	for range 20 {
		if got := counts(t, tr); got != want {
			t.Fatalf("counts = %+v, want %+v", got, want)
		}
	}
	if n := scriptRuns() - before; n != 1 {
		t.Fatalf("70 counts within the TTL ran %d scripts, want 1", n)
	}

	mustConnect(t, tr, 4, "c")
	before = scriptRuns()
	skew.Store(int64(ttl - time.Second))
	if got := counts(t, tr); got != want {
		t.Fatalf("counts just inside the TTL = %+v, want the cached %+v", got, want)
	}
	skew.Store(int64(ttl))
	want = Counts{Online: 4, ActiveLast10m: 4}
	for range 5 {
		if got := counts(t, tr); got != want {
			t.Fatalf("counts after the TTL = %+v, want %+v", got, want)
		}
	}
	if n := scriptRuns() - before; n != 1 {
		t.Fatalf("counts after the TTL ran %d scripts, want 1", n)
	}
}
