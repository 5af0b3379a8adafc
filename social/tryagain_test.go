package social

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/slots"

	"github.com/redis/go-redis/v9"
)

// A post whose author's slot is being migrated to another node of a
// cluster, the author's hash moved already but not their profile (their
// first status), is answered TRYAGAIN to the script that writes the status
// there. It sends that again once the slot has moved, and is finished at
// once, not by a worker later.
func TestPostTriesAgainInAMigratingSlot(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 0)
	base := redistest.ClusterClientOf(t, c.Addrs())
	ctx := ctxT(t)
	m := &slotMove{}
	rdb := redistest.WithHook(t, base, m)
	// No worker, and none would adopt the job for an hour.
	s := New(rdb, Options{Prefix: "p:", BcryptCost: 4, HashWait: time.Minute, JobClaimIdle: time.Hour})
	author := signUp(t, s, "author")
	fans := followersOf(t, s, "author", 2)

	// The followers' channels, and the global one, in other slots (a
	// sharded subscription to the moving slot ends as it moves).
	var channels []string
	for _, f := range fans {
		channels = append(channels, s.bus.UserChannel(f.ID))
	}
	if slots.Of(s.bus.GlobalChannel()) != slots.Of(s.keys.user(author.ID)) {
		channels = append(channels, s.bus.GlobalChannel())
	}
	l := listen(t, s, base, channels...)

	m.begin(t, base, c.Addrs(), s.keys.user(author.ID)) // every node a master
	st, err := s.Post(ctx, author.ID, "first, as the slot moves")
	if err != nil {
		t.Fatal(err)
	}
	if !m.done() {
		t.Fatal("no command was answered TRYAGAIN: the slot's migration did not meet the post")
	}
	frames := eventsUntil(t, l, 20*time.Second, func(got map[string][]event) bool {
		for _, ch := range channels {
			if len(got[ch]) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(300 * time.Millisecond) // a frame sent twice comes right behind
	for ch, evs := range eventsSoFar(t, l) {
		frames[ch] = append(frames[ch], evs...)
	}
	for _, ch := range channels {
		if got := eventIDs(frames[ch]); !slices.Equal(got, []int64{st.ID}) {
			t.Errorf("frames on %s: %v, want %d once", ch, got, st.ID)
		}
	}
	if got := zsetIDs(t, s, s.keys.profile(author.ID)); !slices.Equal(got, []int64{st.ID}) {
		t.Errorf("the author's profile %v, want %d", got, st.ID)
	}
	for _, f := range fans {
		if got := homeIDs(t, s, f.ID); !slices.Equal(got, []int64{st.ID}) {
			t.Errorf("%s's home %v, want %d", f.Login, got, st.ID)
		}
	}
	if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
		t.Errorf("%d jobs left, want the post finished", n)
	}
}

// slotMove migrates a slot of a cluster from its master to another one:
// begin marks it migrating, with its first key (a user's hash) moved, and
// the first pipeline that Redis answers TRYAGAIN in (a hook) moves the
// rest of its keys and gives the slot to its new master, before the
// pipeline's caller sees the answer.
type slotMove struct {
	mu       sync.Mutex
	slot     int64
	from, to *redis.Client
	fromID   string
	toID     string
	all      []*redis.Client
	moved    bool
	tb       testing.TB
}

// begin marks the slot of key migrating from its master to another one of
// masters (their addresses), and moves key there.
func (m *slotMove) begin(tb testing.TB, rdb *redis.ClusterClient, masters []string, key string) {
	tb.Helper()
	ctx := ctxT(tb)
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		tb.Fatal(err)
	}
	from, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		tb.Fatal(err)
	}
	var clients []*redis.Client
	for _, addr := range masters {
		clients = append(clients, redis.NewClient(&redis.Options{Addr: addr}))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tb, m.slot, m.all = tb, slot, clients
	for _, c := range clients {
		tb.Cleanup(func() { c.Close() })
		id, err := c.ClusterMyID(ctx).Result()
		if err != nil {
			tb.Fatal(err)
		}
		switch {
		case c.Options().Addr == from.Options().Addr:
			m.from, m.fromID = c, id
		case m.to == nil:
			m.to, m.toID = c, id
		}
	}
	if m.from == nil || m.to == nil {
		tb.Fatalf("no master to move slot %d from %s to", slot, from.Options().Addr)
	}
	if err := m.to.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", m.fromID).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := m.from.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.toID).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := m.migrate(ctx, key); err != nil {
		tb.Fatal(err)
	}
}

// migrate moves keys from the slot's master to its new one.
func (m *slotMove) migrate(ctx context.Context, keys ...string) error {
	host, port, err := net.SplitHostPort(m.to.Options().Addr)
	if err != nil {
		return err
	}
	args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	return m.from.Do(ctx, args...).Err()
}

// finish moves the rest of the slot's keys and gives it to its new master.
func (m *slotMove) finish(ctx context.Context) error {
	keys, err := m.from.ClusterGetKeysInSlot(ctx, int(m.slot), 1000).Result()
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		if err := m.migrate(ctx, keys...); err != nil {
			return err
		}
	}
	for _, c := range append([]*redis.Client{m.to, m.from}, m.all...) {
		if err := c.Do(ctx, "CLUSTER", "SETSLOT", m.slot, "NODE", m.toID).Err(); err != nil {
			return err
		}
	}
	return nil
}

func (m *slotMove) done() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.moved
}

func (m *slotMove) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *slotMove) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (m *slotMove) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.from == nil || m.moved {
			return err
		}
		for _, c := range cmds {
			if redis.IsTryAgainError(c.Err()) {
				m.moved = true
				if err := m.finish(ctx); err != nil {
					m.tb.Errorf("moving slot %d: %v", m.slot, err)
				}
				break
			}
		}
		return err
	}
}
