package presence

import (
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// newEmbeddedEnv starts the embedded store Chorus runs on without Redis,
// with TTLs passing in real time as in cmd/chorus.
func newEmbeddedEnv(tb testing.TB) (env, *miniredis.Miniredis) {
	tb.Helper()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		tb.Fatalf("miniredis: %v", err)
	}
	tb.Cleanup(m.Close)
	// The embedded store runs scripts in Go, under the race detector here:
	// registering a thousand connections on a busy machine can take far
	// longer than go-redis's 3 s read timeout.
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	tb.Cleanup(func() { rdb.Close() })
	return env{rdb: rdb, prefix: "chorus:"}, m
}

func TestEmbeddedTwoConnections(t *testing.T) {
	t.Parallel()
	e, _ := newEmbeddedEnv(t)
	twoConnections(t, e)
}

func TestEmbeddedVanishedInstance(t *testing.T) {
	t.Parallel()
	e, _ := newEmbeddedEnv(t)
	vanishedInstance(t, e)
}

// On the embedded store the clock can be set, so the window's edges are
// tested to the millisecond: seen exactly W ago is online, a millisecond
// more is not.
func TestEmbeddedExactWindowEdges(t *testing.T) {
	t.Parallel()
	e, m := newEmbeddedEnv(t)
	const w = 2 * time.Second
	tr := e.tracker(t, Options{Window: w, HeartbeatInterval: time.Second, CountsTTL: -1})
	const alice, bob = 1, 2
	e.befriend(t, alice, bob)
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	m.SetTime(start)
	mustConnect(t, tr, alice, "a")

	for _, tc := range []struct {
		after  time.Duration
		online bool
	}{
		{0, true},
		{w - time.Millisecond, true},
		{w, true},
		{w + time.Millisecond, false},
		{w + time.Minute, false},
	} {
		m.SetTime(start.Add(tc.after))
		if got := onlineFriends(t, tr, bob); (len(got) == 1) != tc.online {
			t.Errorf("%s after the heartbeat: online friends %v, want online=%v", tc.after, got, tc.online)
		}
		online, seen := presenceOf(t, tr, alice)
		if online != tc.online || seen == nil || !seen.Equal(start) {
			t.Errorf("%s after the heartbeat: presence %v %v, want online=%v seen %v", tc.after, online, seen, tc.online, start)
		}
		if c := counts(t, tr); (c.Online == 1) != tc.online || c.ActiveLast10m != 1 {
			t.Errorf("%s after the heartbeat: counts %+v", tc.after, c)
		}
	}

	// Nine minutes on, the heartbeat's minute is still counted; eleven
	// minutes on, its set has expired.
	k := e.keys()
	minute := start.Unix() / 60
	m.SetTime(start.Add(9 * time.Minute))
	if c := counts(t, tr); c.ActiveLast10m != 1 {
		t.Errorf("nine minutes on: %d active, want 1", c.ActiveLast10m)
	}
	m.SetTime(start.Add(11*time.Minute + time.Second))
	if c := counts(t, tr); c.ActiveLast10m != 0 {
		t.Errorf("eleven minutes on: %d active, want 0", c.ActiveLast10m)
	}
	for _, key := range []string{k.activeUsers(minute), k.activeHLL(minute)} {
		if m.Exists(key) {
			t.Errorf("eleven minutes on: %s still exists", key)
		}
	}
	if n, err := tr.Sweep(ctxT(t)); err != nil || n != 1 {
		t.Errorf("sweep = %d, %v; want alice", n, err)
	}
	if got := onlineFriends(t, tr, bob); !slices.Equal(got, []int64{}) {
		t.Errorf("after the sweep: %v", got)
	}
}

// A user active in several of the ten minutes counts once on the embedded
// store too, whose HyperLogLogs are its own.
func TestEmbeddedActiveAcrossMinutes(t *testing.T) {
	t.Parallel()
	e, m := newEmbeddedEnv(t)
	tr := e.tracker(t, Options{Window: time.Hour, CountsTTL: -1})
	k := e.keys()
	const alice, bob = 1, 2
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 3 {
		m.SetTime(start.Add(time.Duration(i) * time.Minute))
		if err := tr.Heartbeat(ctxT(t), alice, "a"); err != nil {
			t.Fatal(err)
		}
		if minute := start.Unix()/60 + int64(i); !m.Exists(k.activeHLL(minute)) {
			t.Fatalf("no %s after a heartbeat", k.activeHLL(minute))
		}
	}
	mustConnect(t, tr, bob, "b")
	if got, want := counts(t, tr), (Counts{Online: 2, ActiveLast10m: 2}); got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
}

func TestEmbeddedConnectionCap(t *testing.T) {
	t.Parallel()
	e, _ := newEmbeddedEnv(t)
	connectionCap(t, e)
}
