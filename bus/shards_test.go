package bus

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/slots"
	"chorus/internal/testio"

	"github.com/redis/go-redis/v9"
)

// tap reads what a pub/sub hands the router, for a test to wait on.
type tap struct {
	mu        sync.Mutex
	confirmed map[string]int      // subscribe confirmations by channel
	messages  map[string][]string // payloads by channel
	lost      map[string]int      // lost notices by channel
}

func newTap(tb testing.TB, p Subscriber) *tap {
	t := &tap{confirmed: map[string]int{}, messages: map[string][]string{}, lost: map[string]int{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var msg any
			select {
			case <-stop:
				return
			case msg = <-p.Incoming():
			}
			t.mu.Lock()
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "ssubscribe" {
					t.confirmed[m.Channel]++
				}
			case *redis.Message:
				t.messages[m.Channel] = append(t.messages[m.Channel], m.Payload)
			case LostChannels:
				for _, ch := range m {
					t.lost[ch]++
				}
			}
			t.mu.Unlock()
		}
	}()
	tb.Cleanup(func() { close(stop); <-done })
	return t
}

// wait fails the test unless check, called with the tap's lock held,
// returns "" within 20 s.
func (t *tap) wait(tb testing.TB, check func() string) {
	tb.Helper()
	testio.Eventually(tb, 20*time.Second, func() string {
		t.mu.Lock()
		defer t.mu.Unlock()
		return check()
	})
}

// confirmedAll waits until each of channels has been confirmed want times.
func (t *tap) confirmedAll(tb testing.TB, channels []string, want int) {
	tb.Helper()
	t.wait(tb, func() string {
		for _, ch := range channels {
			if n := t.confirmed[ch]; n != want {
				return fmt.Sprintf("%s confirmed %d times, want %d", ch, n, want)
			}
		}
		return ""
	})
}

// newTestSharded is a sharded pub/sub on rdb, closed when the test ends.
func newTestSharded(tb testing.TB, rdb *redis.ClusterClient) (*shardedPubSub, *atomic.Int64) {
	var commands atomic.Int64
	p := newShardedPubSub(context.Background(), rdb, &commands, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tb.Cleanup(func() { p.Close() })
	return p, &commands
}

// subscribedCluster starts a cluster of three masters with replicas each,
// and a sharded pub/sub on it subscribed to n channels over every slot,
// each confirmed once.
func subscribedCluster(tb testing.TB, replicas, n int) (*redistest.Cluster, *redis.ClusterClient, *tap, []string) {
	tb.Helper()
	cluster := redistest.StartCluster(tb, 3, replicas)
	rdb := redistest.ClusterClientOf(tb, cluster.Addrs())
	p, _ := newTestSharded(tb, rdb)
	seen := newTap(tb, p)
	channels := spreadChannels(redistest.Prefix(), n)
	if err := p.Subscribe(tb.Context(), channels...); err != nil {
		tb.Fatal(err)
	}
	seen.confirmedAll(tb, channels, 1)
	return cluster, rdb, seen, channels
}

// spreadChannels names n user channels under prefix, tagged like a
// cluster's: their slots spread over every master.
func spreadChannels(prefix string, n int) []string {
	channels := make([]string, n)
	for i := range channels {
		channels[i] = prefix + "events:user:{" + strconv.Itoa(i) + "}"
	}
	return channels
}

// mastersOf groups channels by the address of the master serving them.
func mastersOf(tb testing.TB, rdb *redis.ClusterClient, channels []string) map[string][]string {
	tb.Helper()
	by := map[string][]string{}
	for _, ch := range channels {
		m, err := rdb.MasterForKey(tb.Context(), ch)
		if err != nil {
			tb.Fatalf("master of %s: %v", ch, err)
		}
		by[m.Options().Addr] = append(by[m.Options().Addr], ch)
	}
	return by
}

// pubsubClients lists the pub/sub connections a node holds: their CLIENT
// LIST lines, by client id.
func pubsubClients(tb testing.TB, node *redis.Client) map[string]string {
	tb.Helper()
	list, err := node.ClientList(tb.Context()).Result()
	if err != nil {
		tb.Fatalf("client list: %v", err)
	}
	clients := map[string]string{}
	for line := range strings.Lines(list) {
		if !strings.Contains(line, " ssub=0 ") && strings.Contains(line, " ssub=") {
			id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
			clients[id] = strings.TrimSpace(line)
		}
	}
	return clients
}

// publishAll sends each channel its own name with SPUBLISH, in one
// pipeline, and returns how many subscribers each reached.
func publishAll(tb testing.TB, rdb *redis.ClusterClient, channels []string) map[string]int64 {
	tb.Helper()
	pipe := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(channels))
	for i, ch := range channels {
		cmds[i] = pipe.SPublish(tb.Context(), ch, ch)
	}
	if _, err := pipe.Exec(tb.Context()); err != nil {
		tb.Fatalf("spublish: %v", err)
	}
	reached := map[string]int64{}
	for i, ch := range channels {
		reached[ch] = cmds[i].Val()
	}
	return reached
}

// Hundreds of channels over every slot are subscribed with one connection
// per master, one SSUBSCRIBE per slot of each batch, each confirmed once;
// what is published to each reaches the subscriber once; unsubscribing
// stops it. Nothing is refused as cross-slot or redirected: the subscriber
// and a pipeline of SPUBLISH both go to each channel's master.
func TestShardedSubscribe(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClientOf(t, cluster.Addrs())
	p, commands := newTestSharded(t, rdb)
	seen := newTap(t, p)
	channels := spreadChannels(redistest.Prefix(), 700)

	var wantCommands int64
	for batch := range slices.Chunk(channels, SubscribeBatch) {
		if err := p.Subscribe(t.Context(), batch...); err != nil {
			t.Fatal(err)
		}
		batchSlots := map[int]bool{}
		for _, ch := range batch {
			batchSlots[slots.Of(ch)] = true
		}
		wantCommands += int64(len(batchSlots))
	}
	seen.confirmedAll(t, channels, 1)
	if got := commands.Load(); got != wantCommands {
		t.Errorf("%d SSUBSCRIBEs for %d channels, want one per slot of each batch, %d", got, len(channels), wantCommands)
	}

	byMaster := mastersOf(t, rdb, channels)
	if len(byMaster) != 3 {
		t.Fatalf("channels on %d masters, want all 3", len(byMaster))
	}
	for addr, mine := range byMaster {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		clients := pubsubClients(t, node)
		if len(clients) != 1 {
			t.Fatalf("master %s holds %d pub/sub connections, want 1: %v", addr, len(clients), clients)
		}
		for _, line := range clients {
			if want := fmt.Sprintf(" ssub=%d ", len(mine)); !strings.Contains(line+" ", want) {
				t.Errorf("master %s: %q, want%s(the channels it serves)", addr, line, want)
			}
		}
		subs, err := node.PubSubShardNumSub(t.Context(), mine...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range mine {
			if subs[ch] != 1 {
				t.Errorf("%s has %d subscribers on its master, want 1", ch, subs[ch])
			}
		}
		listed, err := node.PubSubShardChannels(t.Context(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(listed)
		if want := slices.Sorted(slices.Values(mine)); !slices.Equal(listed, want) {
			t.Errorf("master %s serves %d shard channels, want its %d", addr, len(listed), len(want))
		}
	}

	for ch, n := range publishAll(t, rdb, channels) {
		if n != 1 {
			t.Fatalf("SPUBLISH to %s reached %d subscribers, want 1", ch, n)
		}
	}
	seen.wait(t, func() string {
		for _, ch := range channels {
			if got := seen.messages[ch]; !slices.Equal(got, []string{ch}) {
				return fmt.Sprintf("%s got %q, want its name once", ch, got)
			}
		}
		return ""
	})

	// Unsubscribe every other channel: only the rest hear what follows.
	var gone, kept []string
	for i, ch := range channels {
		if i%2 == 0 {
			gone = append(gone, ch)
		} else {
			kept = append(kept, ch)
		}
	}
	if err := p.Unsubscribe(t.Context(), gone...); err != nil {
		t.Fatal(err)
	}
	for addr, mine := range mastersOf(t, rdb, gone) {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		testio.Eventually(t, 10*time.Second, func() string {
			subs, err := node.PubSubShardNumSub(t.Context(), mine...).Result()
			if err != nil {
				return err.Error()
			}
			for _, ch := range mine {
				if subs[ch] != 0 {
					return fmt.Sprintf("unsubscribed %s has %d subscribers", ch, subs[ch])
				}
			}
			return ""
		})
	}
	for ch, n := range publishAll(t, rdb, channels) {
		if want := int64(slices.Index(channels, ch) % 2); n != want {
			t.Fatalf("SPUBLISH to %s reached %d subscribers, want %d", ch, n, want)
		}
	}
	seen.wait(t, func() string {
		for _, ch := range kept {
			if got := seen.messages[ch]; len(got) != 2 {
				return fmt.Sprintf("%s got %q, want its name twice", ch, got)
			}
		}
		return ""
	})
	seen.mu.Lock()
	for _, ch := range gone {
		if got := seen.messages[ch]; len(got) != 1 {
			t.Errorf("unsubscribed %s got %q, want its name once, from before", ch, got)
		}
	}
	if len(seen.lost) != 0 {
		t.Errorf("channels lost with no failure: %v", slices.Collect(maps.Keys(seen.lost)))
	}
	seen.mu.Unlock()
	seen.confirmedAll(t, channels, 1)

	for _, addr := range cluster.Addrs() {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		info, err := node.Info(t.Context(), "errorstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []string{"errorstat_CROSSSLOT", "errorstat_MOVED"} {
			if strings.Contains(info, e) {
				t.Errorf("node %s answered errors: %s", addr, info)
			}
		}
	}

	p.Close()
	for addr := range byMaster {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		testio.Eventually(t, 5*time.Second, func() string {
			if clients := pubsubClients(t, node); len(clients) != 0 {
				return fmt.Sprintf("master %s holds %d pub/sub connections once closed", addr, len(clients))
			}
			return ""
		})
	}
}

// When a master dies, its channels are lost, and once its replica is
// promoted they are subscribed there and confirmed again; what is published
// to them then reaches the subscriber once. The other masters' channels
// never stop: their connections stay, everything published to them through
// the failover arrives once, and none is lost or confirmed again.
func TestShardedFailover(t *testing.T) {
	t.Parallel()
	cluster, rdb, seen, channels := subscribedCluster(t, 1, 300)

	victim := cluster.Nodes[0].Addr
	byMaster := mastersOf(t, rdb, channels)
	moved := byMaster[victim]
	if len(byMaster) != 3 || len(moved) == 0 {
		t.Fatalf("channels on %d masters, %d on %s, want all 3 masters", len(byMaster), len(moved), victim)
	}
	var kept []string
	survivors := map[string]map[string]string{} // their pub/sub connections
	for addr, mine := range byMaster {
		if addr == victim {
			continue
		}
		kept = append(kept, mine...)
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		survivors[addr] = pubsubClients(t, node)
	}

	// Publish to the other masters' channels all through the failover.
	stop, stopped := make(chan struct{}), make(chan struct{})
	var reached []string // payloads SPUBLISH said reached a subscriber
	go func() {
		defer close(stopped)
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			ch := kept[seq%len(kept)]
			payload := fmt.Sprintf("%s#%d", ch, seq)
			if n, err := rdb.SPublish(context.Background(), ch, payload).Result(); err == nil && n == 1 {
				reached = append(reached, payload)
			}
		}
	}()

	cluster.Nodes[0].Stop()
	start := time.Now()
	seen.wait(t, func() string {
		for _, ch := range moved {
			if seen.lost[ch] != 1 || seen.confirmed[ch] != 2 {
				return fmt.Sprintf("%s lost %d times and confirmed %d, want once and twice", ch, seen.lost[ch], seen.confirmed[ch])
			}
		}
		return ""
	})
	t.Logf("%d channels subscribed again %s after their master died", len(moved), time.Since(start).Round(time.Millisecond))
	close(stop)
	<-stopped
	if len(reached) < 100 {
		t.Fatalf("only %d publishes to the other masters went through the failover", len(reached))
	}

	for _, ch := range moved {
		testio.Eventually(t, 10*time.Second, func() string {
			n, err := rdb.SPublish(t.Context(), ch, ch+"#after").Result()
			if err != nil || n != 1 {
				return fmt.Sprintf("SPUBLISH to %s after the failover reached %d subscribers (%v)", ch, n, err)
			}
			return ""
		})
	}
	seen.wait(t, func() string {
		for _, ch := range moved {
			if got := seen.messages[ch]; !slices.Equal(got, []string{ch + "#after"}) {
				return fmt.Sprintf("%s got %q after the failover, want %q", ch, got, ch+"#after")
			}
		}
		for _, payload := range reached {
			ch, _, _ := strings.Cut(payload, "#")
			if n := slices.Index(seen.messages[ch], payload); n < 0 {
				return fmt.Sprintf("%s never got %s", ch, payload)
			}
		}
		return ""
	})
	seen.mu.Lock()
	received := 0
	for _, ch := range kept {
		received += len(seen.messages[ch])
		if seen.lost[ch] != 0 || seen.confirmed[ch] != 1 {
			t.Errorf("%s, on a master that stayed, lost %d times and confirmed %d, want never and once", ch, seen.lost[ch], seen.confirmed[ch])
		}
	}
	seen.mu.Unlock()
	if received != len(reached) {
		t.Errorf("the other masters' channels got %d messages, want the %d published, once each", received, len(reached))
	}

	for addr, before := range survivors {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		if after := pubsubClients(t, node); !slices.Equal(slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before))) {
			t.Errorf("master %s held pub/sub connections %v, then %v: want the same one", addr, before, after)
		}
	}
	promoted := mastersOf(t, rdb, moved)
	for addr := range promoted {
		if addr == victim || len(promoted) != 1 {
			t.Fatalf("the dead master's channels are served by %v", slices.Collect(maps.Keys(promoted)))
		}
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		if clients := pubsubClients(t, node); len(clients) != 1 {
			t.Errorf("the promoted master %s holds %d pub/sub connections, want 1", addr, len(clients))
		}
	}
}

// When Redis moves a slot to another master, the old one unsubscribes its
// channels (sunsubscribe): they are lost, subscribed on the new master and
// confirmed again, and what is published to them reaches the subscriber
// there. The other channels are untouched.
func TestShardedSlotMoved(t *testing.T) {
	t.Parallel()
	cluster, rdb, seen, channels := subscribedCluster(t, 0, 200)

	ch := channels[0]
	slot := slots.Of(ch)
	from := mastersOf(t, rdb, []string{ch})
	nodes := map[string]*redis.Client{} // by address
	ids := map[string]string{}
	for _, addr := range cluster.Addrs() {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		id, err := node.ClusterMyID(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		nodes[addr], ids[addr] = node, id
	}
	var to string
	for addr := range nodes {
		if _, ok := from[addr]; !ok {
			to = addr
			break
		}
	}
	// The slot holds no keys: each node is told its new owner, the new
	// owner first.
	order := []string{to}
	for addr := range nodes {
		if addr != to {
			order = append(order, addr)
		}
	}
	for _, addr := range order {
		if err := nodes[addr].Do(t.Context(), "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err(); err != nil {
			t.Fatalf("CLUSTER SETSLOT %d NODE on %s: %v", slot, addr, err)
		}
	}

	var moved []string
	for _, c := range channels {
		if slots.Of(c) == slot {
			moved = append(moved, c)
		}
	}
	seen.wait(t, func() string {
		for _, c := range moved {
			if seen.lost[c] != 1 || seen.confirmed[c] != 2 {
				return fmt.Sprintf("%s lost %d times and confirmed %d, want once and twice", c, seen.lost[c], seen.confirmed[c])
			}
		}
		return ""
	})
	subs, err := nodes[to].PubSubShardNumSub(t.Context(), ch).Result()
	if err != nil || subs[ch] != 1 {
		t.Fatalf("%s has %d subscribers on its new master (%v), want 1", ch, subs[ch], err)
	}
	testio.Eventually(t, 10*time.Second, func() string {
		n, err := rdb.SPublish(t.Context(), ch, "after").Result()
		if err != nil || n != 1 {
			return fmt.Sprintf("SPUBLISH to %s after the move reached %d subscribers (%v)", ch, n, err)
		}
		return ""
	})
	seen.wait(t, func() string {
		if got := seen.messages[ch]; !slices.Equal(got, []string{"after"}) {
			return fmt.Sprintf("%s got %q, want %q", ch, got, "after")
		}
		return ""
	})
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, c := range channels {
		if slots.Of(c) != slot && (seen.lost[c] != 0 || seen.confirmed[c] != 1) {
			t.Errorf("%s, in a slot that stayed, lost %d times and confirmed %d, want never and once", c, seen.lost[c], seen.confirmed[c])
		}
	}
	for addr, node := range nodes {
		if clients := pubsubClients(t, node); len(clients) != 1 {
			t.Errorf("master %s holds %d pub/sub connections, want 1", addr, len(clients))
		}
	}
}
