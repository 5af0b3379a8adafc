package presence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The population of the benchmarks: users ever seen, users online now, and
// the friends of the user whose online friends are read.
const (
	benchUsers   = 100_000
	benchOnline  = 50_000
	benchFriends = 500
	benchMe      = benchUsers + 1
	benchWindow  = 10 * time.Minute // long enough that the population stays online
)

// benchEnv fills a fresh prefix on the backend with benchUsers in
// last.seen, every second one of them online (connected, seen within W),
// benchFriends friends of benchMe picked at random among them, and the
// shared online copy.
func benchEnv(b *testing.B, be backend) env {
	b.Helper()
	e := be.env(b)
	ctx := context.Background()
	k := e.keys()
	now := e.now(b)
	rng := rand.New(rand.NewPCG(1, 2))
	var seen, connected []redis.Z
	flush := func() {
		pipe := e.rdb.Pipeline()
		if len(seen) > 0 {
			pipe.ZAdd(ctx, k.lastSeen(), seen...)
		}
		if len(connected) > 0 {
			pipe.ZAdd(ctx, k.connected(), connected...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatalf("fill: %v", err)
		}
		seen, connected = seen[:0], connected[:0]
	}
	for uid := int64(1); uid <= benchUsers; uid++ {
		if uid%2 == 0 { // online: seen in the last minute
			at := now.Add(-time.Duration(rng.Int64N(int64(time.Minute))))
			seen = append(seen, redisZ(at, uid))
			connected = append(connected, redisZ(now.Add(benchWindow), uid))
		} else { // seen hours to weeks ago
			at := now.Add(-time.Hour - time.Duration(rng.Int64N(int64(30*24*time.Hour))))
			seen = append(seen, redisZ(at, uid))
		}
		if len(seen) == 1000 {
			flush()
		}
	}
	flush()
	var friends []redis.Z
	for _, i := range rng.Perm(benchUsers)[:benchFriends] {
		friends = append(friends, redisZ(now, int64(i+1)))
	}
	if err := e.rdb.ZAdd(ctx, e.friendsKey(benchMe), friends...).Err(); err != nil {
		b.Fatalf("fill friends: %v", err)
	}
	b.Cleanup(func() { dropPrefix(e) })
	// The shared online copy, as readers keep it on a running site: every
	// heartbeat writes to it too.
	if _, err := e.tracker(b, Options{Window: benchWindow}).OnlineFriends(ctx, benchMe); err != nil {
		b.Fatalf("online copy: %v", err)
	}
	return e
}

// dropPrefix deletes the benchmark's keys, for a shared server: on a
// cluster they are all in presence's slot, on its shard.
func dropPrefix(e env) {
	ctx := context.Background()
	node, err := shardOf(ctx, e.rdb, e.keys())
	if err != nil {
		return
	}
	iter := node.Scan(ctx, 0, e.prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			node.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		node.Unlink(ctx, batch...)
	}
}

// onBenchBackends runs bench as a sub-benchmark per backend.
func onBenchBackends(b *testing.B, bench func(b *testing.B, be backend)) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) { bench(b, be) })
	}
}

// BenchmarkHeartbeats measures heartbeats per second through one instance
// and the Redis time each costs (on a cluster, presence's shard's), in
// three layouts on the same population, the two earlier ones on one
// redis-server only (their scripts build keys from prefixes, which a
// cluster must not be asked to run):
//
//   - one-script-per-heartbeat: an earlier layout (testdata), one script
//     call per heartbeat of one connection, with the connection's expiry in
//     its user's sorted set, from 16 goroutines per core at once;
//   - batched-connection-expiries: an earlier layout (testdata), one call
//     per MaxBeatsPerCall connections, each connection's expiry written;
//   - batched-instance-lease: Heartbeats as the server runs it, one call per
//     MaxBeatsPerCall users, connections living on the instance's lease.
//
// An op is one connection's heartbeat in all three.
func BenchmarkHeartbeats(b *testing.B) {
	onBenchBackends(b, benchmarkHeartbeats)
}

func benchmarkHeartbeats(b *testing.B, be backend) {
	scripts := []string{"evalsha", "eval"}
	const connsKeyTTL = benchWindow + time.Minute
	conn := benchConn
	online := func(rng *rand.Rand) int64 { return 2 * (1 + rng.Int64N(benchOnline)) }

	if !be.cluster { // the earlier layouts build keys in Lua: one redis-server only
		b.Run("one-script-per-heartbeat", func(b *testing.B) {
			e := benchEnv(b, be)
			k := e.keys()
			script := testdataScript(b, "heartbeat_per_connection.lua")
			var seed atomic.Uint64
			b.SetParallelism(16)
			before := serverMicros(b, e, scripts)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 0))
				ctx := context.Background()
				for pb.Next() {
					uid := online(rng)
					err := script.Run(ctx, e.rdb,
						[]string{k.lastSeen(), k.connected(), k.conns(uid), k.onlineCopy()},
						uid, conn(uid), ms(benchWindow), k.activePrefix(), int64(activeKeyTTL/time.Second),
						ms(connsKeyTTL), k.activeHLLPrefix(), 0,
					).Err()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			reportBeats(b, e, scripts, before, start)
		})

		b.Run("batched-connection-expiries", func(b *testing.B) {
			e := benchEnv(b, be)
			k := e.keys()
			script := testdataScript(b, "heartbeats_connection_expiries.lua")
			rng := rand.New(rand.NewPCG(3, 4))
			ctx := context.Background()
			before := serverMicros(b, e, scripts)
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; done += MaxBeatsPerCall {
				n := min(MaxBeatsPerCall, b.N-done)
				keys := []string{k.lastSeen(), k.connected(), k.onlineCopy()}
				args := []any{ms(benchWindow), k.activePrefix(), int64(activeKeyTTL / time.Second),
					ms(connsKeyTTL), k.activeHLLPrefix()}
				for range n {
					uid := online(rng)
					keys = append(keys, k.conns(uid))
					args = append(args, uid, conn(uid))
				}
				if err := script.Run(ctx, e.rdb, keys, args...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			reportBeats(b, e, scripts, before, start)
		})
	}

	// The current layout, with activity in two orders: as pongs come, each
	// user in the same tick of every interval, and in no order, each user
	// once per interval in a tick drawn afresh every interval.
	for _, order := range []struct {
		name  string
		fixed bool
	}{{"as-pongs-come", true}, {"random-ticks", false}} {
		b.Run("batched-instance-lease/"+order.name, func(b *testing.B) {
			batchedInstanceLease(b, be, order.fixed)
		})
	}
}

// batchedInstanceLease runs the current layout for BenchmarkHeartbeats: one
// instance holding the connections of every online user, its ticks of
// activity in the same order every interval (fixed) or drawn afresh.
func batchedInstanceLease(b *testing.B, be backend, fixed bool) {
	e := benchEnv(b, be)
	tr := e.tracker(b, Options{Window: benchWindow})
	ctx := context.Background()
	// The instance holds every online user's connection, as a server
	// would after they connected.
	users := make([]int64, 0, benchOnline)
	for i := range int64(benchOnline) {
		users = append(users, 2*(1+i))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ticks := schedule(users, ticksPerInterval, rng)
	if err := tr.Heartbeats(ctx, slices.Concat(ticks...)); err != nil {
		b.Fatal(err)
	}
	tick := func(i int) []Beat {
		if !fixed && i > 0 && i%ticksPerInterval == 0 {
			ticks = schedule(users, ticksPerInterval, rng)
		}
		return ticks[i%ticksPerInterval]
	}
	// The instance also asks Redis's run_id every tick.
	scripts := []string{"evalsha", "eval", "info"}
	before := serverMicros(b, e, scripts)
	b.ResetTimer()
	start := time.Now()
	flushTicks(b, tr, tick, b.N)
	reportBeats(b, e, scripts, before, start)
}

// An instance's flusher at the default heartbeat interval (10 s): a tick
// every second, so each tick writes a tenth of the connections, and a minute
// is six intervals.
const (
	ticksPerInterval   = 10
	intervalsPerMinute = 6
)

// schedule cuts users into ticks groups of about the same size, at random:
// the users whose connections an instance finds active in each tick of one
// heartbeat interval. Each connection answers the server's ping once per
// interval at a phase of its own, so a user is in the same tick of every
// interval, with the same users as the interval before, in the order a Go
// map gives them.
func schedule(users []int64, ticks int, rng *rand.Rand) [][]Beat {
	out := make([][]Beat, ticks)
	for _, i := range rng.Perm(len(users)) {
		uid := users[i]
		out[i%ticks] = append(out[i%ticks], Beat{UID: uid, ConnID: benchConn(uid)})
	}
	return out
}

// benchConn is the id of uid's one connection in the benchmarks.
func benchConn(uid int64) string { return "c" + strconv.FormatInt(uid, 10) }

// flushTicks writes tick(0), tick(1), ... with Heartbeats, one after another,
// as an instance's flusher does once per tick, until n beats are written,
// and returns how long each call took. At the
// start of every intervalsPerMinute intervals a minute begins: the tracker
// forgets which users it wrote last.seen and the active set for, so each
// user's first beat of the minute writes them, as on a running site.
func flushTicks(b *testing.B, tr *Tracker, tick func(i int) []Beat, n int) []time.Duration {
	b.Helper()
	ctx := context.Background()
	var took []time.Duration
	for i, done := 0, 0; done < n; i++ {
		if i%(ticksPerInterval*intervalsPerMinute) == 0 {
			tr.activeMu.Lock()
			tr.active.minute = 0
			tr.activeMu.Unlock()
		}
		batch := tick(i)
		batch = batch[:min(len(batch), n-done)]
		start := time.Now()
		if err := tr.Heartbeats(ctx, batch); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		done += len(batch)
	}
	return took
}

// BenchmarkInstance measures one instance holding the presence of
// instanceConns connections at the default heartbeat interval: an op is one
// tick of its flusher, the activity of a tenth of the connections written
// with Heartbeats. The instance keeps up while a tick takes less than the
// tick's second: tick-ms-p99 says how far from it it is. Run it for a
// minute of ticks or more (-benchtime 60x), to include the ticks at the start
// of a minute, which write last.seen and the active set too.
func BenchmarkInstance(b *testing.B) {
	onBenchBackends(b, benchmarkInstance)
}

// instanceConns is the connections of one instance in BenchmarkInstance.
const instanceConns = 200_000

func benchmarkInstance(b *testing.B, be backend) {
	e := be.env(b)
	b.Cleanup(func() { dropPrefix(e) })
	tr := e.tracker(b, Options{Window: benchWindow})
	ctx := context.Background()
	users := make([]int64, instanceConns)
	for i := range users {
		users[i] = int64(i + 1)
	}
	ticks := schedule(users, ticksPerInterval, rand.New(rand.NewPCG(5, 6)))
	// Every connection registered, then the shared online copy made, as on a
	// running site, where the first reader makes it.
	start := time.Now()
	if err := tr.Heartbeats(ctx, slices.Concat(ticks...)); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d connections registered in %v", instanceConns, time.Since(start).Round(time.Millisecond))
	if _, err := tr.OnlineFriends(ctx, 1); err != nil {
		b.Fatal(err)
	}
	if n, err := e.rdb.ZCard(ctx, e.keys().onlineCopy()).Result(); err != nil || n != instanceConns {
		b.Fatalf("online copy: %d users, %v; want %d", n, err, instanceConns)
	}

	scripts := []string{"evalsha", "eval", "info"}
	before := serverMicros(b, e, scripts)
	b.ResetTimer()
	took := flushTicks(b, tr, func(i int) []Beat { return ticks[i%ticksPerInterval] }, b.N*len(ticks[0]))
	b.StopTimer()
	beats := float64(b.N * len(ticks[0]))
	b.ReportMetric((serverMicros(b, e, scripts)-before)/beats, "redis-µs/beat")
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "tick-ms-p50")
	b.ReportMetric(at(0.99), "tick-ms-p99")
	b.ReportMetric(at(1), "tick-ms-max")
}

// reportBeats reports heartbeats per second since start and the Redis time
// per heartbeat spent in cmds since before.
func reportBeats(b *testing.B, e env, cmds []string, before float64, start time.Time) {
	b.Helper()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "heartbeats/s")
	b.ReportMetric((serverMicros(b, e, cmds)-before)/float64(b.N), "redis-µs/op")
}

// testdataScript loads a script of an earlier layout from testdata.
func testdataScript(b *testing.B, name string) *redis.Script {
	b.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		b.Fatal(err)
	}
	return redis.NewScript(string(src))
}

// BenchmarkOnlineFriends measures the latency of one user's online friends
// with benchUsers in last.seen, benchOnline online and benchFriends friends,
// on each backend.
func BenchmarkOnlineFriends(b *testing.B) {
	onBenchBackends(b, benchmarkOnlineFriends)
}

func benchmarkOnlineFriends(b *testing.B, be backend) {
	e := benchEnv(b, be)
	shared := e.tracker(b, Options{Window: benchWindow})
	rebuilt := e.tracker(b, Options{Window: benchWindow, CopyTTL: -1})
	ctx := context.Background()

	check := func(b *testing.B, n int) {
		if n < benchFriends/4 || n > benchFriends*3/4 {
			b.Fatalf("%d friends online, want about half of %d", n, benchFriends)
		}
	}
	scripts := []string{"evalsha", "eval"}
	b.Run("shared-copy", func(b *testing.B) {
		latency(b, e, scripts, func() int {
			fs, err := shared.OnlineFriends(ctx, benchMe)
			if err != nil {
				b.Fatal(err)
			}
			return len(fs)
		}, check)
	})
	b.Run("rebuild-every-call", func(b *testing.B) {
		latency(b, e, scripts, func() int {
			fs, err := rebuilt.OnlineFriends(ctx, benchMe)
			if err != nil {
				b.Fatal(err)
			}
			return len(fs)
		}, check)
	})
	b.Run("zmscore-reference", func(b *testing.B) {
		latency(b, e, []string{"time", "zrange", "zmscore"}, func() int {
			fs, err := zmscoreOnlineFriends(ctx, e, benchMe, benchWindow)
			if err != nil {
				b.Fatal(err)
			}
			return len(fs)
		}, check)
	})
}

// latency runs call b.N times, one after another, and reports the median,
// 99th percentile and maximum of its duration, and the time Redis spent in
// the given top-level commands per call (from INFO commandstats), which the
// load on a small machine disturbs less. check sees the last call's result.
func latency(b *testing.B, e env, cmds []string, call func() int, check func(*testing.B, int)) {
	b.Helper()
	check(b, call()) // warm up: the first shared copy, the script cache
	durs := make([]time.Duration, 0, b.N)
	before := serverMicros(b, e, cmds)
	b.ResetTimer()
	var n int
	for range b.N {
		start := time.Now()
		n = call()
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric((serverMicros(b, e, cmds)-before)/float64(b.N), "redis-µs/op")
	check(b, n)
	slices.Sort(durs)
	at := func(q float64) float64 {
		return float64(durs[int(q*float64(len(durs)-1))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(float64(durs[len(durs)-1].Microseconds()), "max-µs")
}

// zmscoreOnlineFriends is the reference without Lua or a copy: read the
// friend set, then look every friend up in last.seen and connected with
// ZMSCORE, and filter and sort here. Two round trips.
func zmscoreOnlineFriends(ctx context.Context, e env, uid int64, w time.Duration) ([]FriendSeen, error) {
	k := e.keys()
	pipe := e.rdb.Pipeline()
	clock := pipe.Time(ctx)
	members := pipe.ZRange(ctx, e.friendsKey(uid), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	friends := members.Val()
	if len(friends) == 0 {
		return nil, nil
	}
	pipe = e.rdb.Pipeline()
	seen := pipe.ZMScore(ctx, k.lastSeen(), friends...)
	expiries := pipe.ZMScore(ctx, k.connected(), friends...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	now := clock.Val().UnixMilli()
	cutoff := now - w.Milliseconds()
	var out []FriendSeen
	for i, f := range friends {
		ls, exp := int64(seen.Val()[i]), int64(expiries.Val()[i])
		if ls >= cutoff && exp >= now {
			fid, _ := strconv.ParseInt(f, 10, 64)
			out = append(out, FriendSeen{UID: fid, LastSeen: unixMilli(ls)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen.After(out[j].LastSeen) })
	return out, nil
}

// serverMicros sums the microseconds Redis reports having spent in cmds.
func serverMicros(b *testing.B, e env, cmds []string) float64 {
	b.Helper()
	info, err := e.node(b).Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatalf("info: %v", err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !slices.Contains(cmds, strings.TrimPrefix(name, "cmdstat_")) {
			continue
		}
		for _, f := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	return total
}

// seedCounts is the classic layout's way of counting the users active in the last ten
// minutes, the union of the ten per-minute sets, kept here only to compare
// counts.lua with. KEYS and ARGV are counts.lua's, but KEYS[4] is unused and
// KEYS[5..] are the per-minute sets; it returns {online, active} and does
// not check the minute (the benchmark stays within one).
var seedCounts = script(copySource, `
local now = now_ms()
local window = tonumber(ARGV[1])
refresh_copy(KEYS[1], KEYS[2], KEYS[3], now, window, tonumber(ARGV[2]))
local online = redis.call('ZCOUNT', KEYS[3], now - window, '+inf')
local active = #redis.call('SUNION', unpack(KEYS, 5))
return {online, active}
`)

// BenchmarkCounts compares the site-wide counts of counts.lua (ten
// per-minute HyperLogLogs merged) with the classic layout's union of the ten
// per-minute sets, for 20,000 and 200,000 users active in the last ten
// minutes, each in a run of minutes ending anywhere in them; those active
// this minute are online. The Tracker's cache is off: each op runs the
// script.
func BenchmarkCounts(b *testing.B) {
	onBenchBackends(b, benchmarkCounts)
}

func benchmarkCounts(b *testing.B, be backend) {
	for _, users := range []int{20_000, 200_000} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			e := be.env(b)
			b.Cleanup(func() { dropPrefix(e) })
			// The population is planted for this minute; counting must not
			// run into the next.
			if now := e.now(b); now.Second() >= 45 {
				time.Sleep(time.Duration(61-now.Second()) * time.Second)
			}
			minute := e.now(b).Unix() / 60
			online := plantActivePopulation(b, e, users)
			tr := e.tracker(b, Options{Window: benchWindow, CountsTTL: -1})
			k := tr.keys
			ctx := context.Background()
			scripts := []string{"evalsha", "eval"}
			b.Run("sunion-seed", func(b *testing.B) {
				keys := []string{k.lastSeen(), k.connected(), k.onlineCopy(), k.activeUnion()}
				for i := range int64(activeMinutes) {
					keys = append(keys, k.activeUsers(minute-i))
				}
				latency(b, e, scripts, func() int {
					res, err := seedCounts.Run(ctx, e.rdb, keys, ms(benchWindow), ms(DefaultCopyTTL)).Slice()
					if err != nil {
						b.Fatal(err)
					}
					if got := toInt(res, 0); got != int64(online) {
						b.Fatalf("%d online, want %d", got, online)
					}
					return int(toInt(res, 1))
				}, func(b *testing.B, n int) {
					if n != users {
						b.Fatalf("%d active, want %d", n, users)
					}
				})
			})
			b.Run("hll", func(b *testing.B) {
				var last Counts
				latency(b, e, scripts, func() int {
					c, err := tr.Counts(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if c.Online != int64(online) {
						b.Fatalf("%d online, want %d", c.Online, online)
					}
					last = c
					return int(c.ActiveLast10m)
				}, func(b *testing.B, n int) {
					if d := n - users; d < -users/50 || d > users/50 {
						b.Fatalf("%d active, want %d within 2%%", n, users)
					}
				})
				b.ReportMetric(100*float64(last.ActiveLast10m-int64(users))/float64(users), "error-%")
			})
		})
	}
}

// plantActivePopulation makes users 1 to n active in the last ten minutes,
// as heartbeats would have: each in the per-minute sets and HyperLogLogs of
// a run of one to ten minutes; those whose run includes this minute are
// also in last.seen and connected. It returns how many are online.
func plantActivePopulation(b *testing.B, e env, n int) int {
	b.Helper()
	ctx := context.Background()
	k := e.keys()
	now := e.now(b)
	minute := now.Unix() / 60
	rng := rand.New(rand.NewPCG(3, 4))
	const batch = 10_000
	online := 0
	for lo := 1; lo <= n; lo += batch {
		var members [activeMinutes][]any
		var seen, connected []redis.Z
		for uid := int64(lo); uid < int64(min(lo+batch, n+1)); uid++ {
			last := rng.IntN(activeMinutes) // minutes ago the run ends
			first := last + rng.IntN(activeMinutes-last)
			for ago := last; ago <= first; ago++ {
				members[ago] = append(members[ago], itoa(uid))
			}
			if last == 0 {
				online++
				seen = append(seen, redisZ(now.Add(-time.Duration(rng.Int64N(int64(time.Minute)))), uid))
				connected = append(connected, redisZ(now.Add(benchWindow), uid))
			}
		}
		pipe := e.rdb.Pipeline()
		for ago, uids := range members {
			if len(uids) == 0 {
				continue
			}
			pipe.SAdd(ctx, k.activeUsers(minute-int64(ago)), uids...)
			pipe.PFAdd(ctx, k.activeHLL(minute-int64(ago)), uids...)
		}
		if len(seen) > 0 {
			pipe.ZAdd(ctx, k.lastSeen(), seen...)
			pipe.ZAdd(ctx, k.connected(), connected...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatalf("plant active users: %v", err)
		}
	}
	return online
}
