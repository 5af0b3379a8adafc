package presence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/bus"
	"chorus/internal/redistest"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// env is one presence deployment under test: a Redis (one server, or a
// Redis Cluster), a key prefix, and the friend sets and channels the social
// package would own.
type env struct {
	rdb     redis.UniversalClient
	prefix  string
	cluster bool
}

// newEnv is a deployment on the shared test redis-server.
func newEnv(tb testing.TB) env {
	tb.Helper()
	rdb, prefix := redistest.Client(tb)
	return env{rdb: rdb, prefix: prefix}
}

// newClusterEnv is a deployment on the shared test Redis Cluster.
func newClusterEnv(tb testing.TB) env {
	tb.Helper()
	rdb, prefix := redistest.ClusterClient(tb)
	return env{rdb: rdb, prefix: prefix, cluster: true}
}

// backend is a kind of Redis deployment tests and benchmarks run on.
type backend struct {
	name    string
	cluster bool
	env     func(testing.TB) env // a deployment of its own, under a fresh prefix
}

// backends are one redis-server and a Redis Cluster. A test that cannot
// reach one fails: redistest never skips.
var backends = []backend{
	{"redis", false, newEnv},
	{"cluster", true, newClusterEnv},
}

// onBackends runs test in a parallel subtest per backend, each on a
// deployment of its own. Tests that need a server of their own (to stop,
// pause or restart it, or to read its command statistics undisturbed) run
// on one redis-server only and say so.
func onBackends(t *testing.T, test func(t *testing.T, e env)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.env(t))
		})
	}
}

// keys are the deployment's presence keys.
func (e env) keys() keys { return newKeys(e.prefix, e.cluster) }

// friendsKey is uid's friend set as presence reads it: the social package's
// on one Redis, the mirror in presence's slot on a cluster.
func (e env) friendsKey(uid int64) string {
	if e.cluster {
		return FriendsMirrorKey(e.prefix, uid)
	}
	return e.prefix + "friends:" + itoa(uid)
}

// channel is uid's channel as the social package names it: on a cluster
// it carries uid as hash tag, in uid's slot, not presence's.
func (e env) channel(uid int64) string {
	return bus.New(e.rdb, e.prefix).UserChannel(uid)
}

// node is the Redis holding the deployment's presence keys, for commands
// that name no key (TIME, INFO, SCAN): on a cluster, the master of
// presence's slot.
func (e env) node(tb testing.TB) redis.Cmdable {
	tb.Helper()
	n, err := shardOf(ctxT(tb), e.rdb, e.keys())
	if err != nil {
		tb.Fatalf("the presence shard: %v", err)
	}
	return n
}

// tracker returns a Tracker of this deployment (one per instance); opts'
// FriendsKey and Prefix are filled in, and Profile when nil.
func (e env) tracker(tb testing.TB, opts Options) *Tracker {
	tb.Helper()
	opts.Prefix = e.prefix
	opts.FriendsKey = e.friendsKey
	if opts.Profile == nil {
		opts.Profile = profile
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return New(e.rdb, opts)
}

// profile is the login and name the tests' users have.
func profile(_ context.Context, uid int64) (login, name string, err error) {
	return fmt.Sprintf("user%d", uid), fmt.Sprintf("User %d", uid), nil
}

// befriend makes a and b friends as the social package does.
func (e env) befriend(tb testing.TB, a, b int64) {
	tb.Helper()
	ctx := ctxT(tb)
	now := float64(time.Now().UnixMilli())
	pipe := e.rdb.Pipeline()
	pipe.ZAdd(ctx, e.friendsKey(a), redis.Z{Score: now, Member: itoa(b)})
	pipe.ZAdd(ctx, e.friendsKey(b), redis.Z{Score: now, Member: itoa(a)})
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("befriend %d %d: %v", a, b, err)
	}
}

// subscribe listens on uid's channel, returning once the subscription holds:
// with SSUBSCRIBE on a cluster, on the master of the channel's slot, as the
// realtime hub does; frames published before it never come.
func (e env) subscribe(tb testing.TB, uid int64) <-chan *redis.Message {
	tb.Helper()
	ctx := ctxT(tb)
	var ps *redis.PubSub
	if e.cluster {
		ps = e.rdb.SSubscribe(ctx, e.channel(uid))
	} else {
		ps = e.rdb.Subscribe(ctx, e.channel(uid))
	}
	if _, err := ps.Receive(ctx); err != nil {
		tb.Fatalf("subscribe %d: %v", uid, err)
	}
	tb.Cleanup(func() { ps.Close() })
	return ps.Channel()
}

// now is Redis's clock.
func (e env) now(tb testing.TB) time.Time {
	tb.Helper()
	now, err := e.node(tb).Time(ctxT(tb)).Result()
	if err != nil {
		tb.Fatalf("redis time: %v", err)
	}
	return now
}

func ctxT(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// ctxLong is ctxT for a test whose work takes time that grows with the
// machine's load rather than with a bug (thousands of connections
// registered, scripts run in Go by the embedded store, all under the race
// detector): it ends with the test binary's own deadline (go test -timeout),
// which reports a hang with every goroutine's stack, not at a guess of how
// slow a busy machine may be.
func ctxLong(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d)
	}
	t.Cleanup(cancel)
	return ctx
}

// nextEvent returns the next presence event on ch, failing after within.
func nextEvent(tb testing.TB, ch <-chan *redis.Message, within time.Duration) protocol.PresenceFrame {
	tb.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			tb.Fatalf("subscription closed")
		}
		return decodeEvent(tb, m)
	case <-time.After(within):
		tb.Fatalf("no event within %s", within)
	}
	return protocol.PresenceFrame{}
}

// decodeEvent is the presence frame m carries.
func decodeEvent(tb testing.TB, m *redis.Message) protocol.PresenceFrame {
	tb.Helper()
	var ev protocol.PresenceFrame
	if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
		tb.Fatalf("event %q: %v", m.Payload, err)
	}
	return ev
}

// noEvent fails if an event comes on ch during d.
func noEvent(tb testing.TB, ch <-chan *redis.Message, d time.Duration) {
	tb.Helper()
	select {
	case m := <-ch:
		tb.Fatalf("unexpected event %s", m.Payload)
	case <-time.After(d):
	}
}

// checkEvent fails unless ev says uid went online (or offline).
func checkEvent(tb testing.TB, ev protocol.PresenceFrame, uid int64, online bool) {
	tb.Helper()
	want := protocol.UserRef{ID: uid, Login: fmt.Sprintf("user%d", uid), Name: fmt.Sprintf("User %d", uid)}
	if ev.Type != protocol.TypePresence || ev.User != want || ev.Online != online {
		tb.Fatalf("event %+v, want presence of %+v online=%v", ev, want, online)
	}
	if ev.LastSeen == nil || ev.LastSeen.IsZero() || ev.LastSeen.Location() != time.UTC {
		tb.Fatalf("event last_seen %v, want a UTC time", ev.LastSeen)
	}
}

// waitFor polls cond until it holds, failing after within.
func waitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func uids(fs []FriendSeen) []int64 {
	out := make([]int64, len(fs))
	for i, f := range fs {
		out[i] = f.UID
	}
	return out
}

func onlineFriends(tb testing.TB, tr *Tracker, uid int64) []int64 {
	tb.Helper()
	fs, err := tr.OnlineFriends(ctxT(tb), uid)
	if err != nil {
		tb.Fatalf("online friends of %d: %v", uid, err)
	}
	return uids(fs)
}

func mustConnect(tb testing.TB, tr *Tracker, uid int64, conn string) bool {
	tb.Helper()
	first, err := tr.Connect(ctxT(tb), uid, conn)
	if err != nil {
		tb.Fatalf("connect %d %s: %v", uid, conn, err)
	}
	return first
}

func mustDisconnect(tb testing.TB, tr *Tracker, uid int64, conn string) bool {
	tb.Helper()
	last, err := tr.Disconnect(ctxT(tb), uid, conn)
	if err != nil {
		tb.Fatalf("disconnect %d %s: %v", uid, conn, err)
	}
	return last
}

func presenceOf(tb testing.TB, tr *Tracker, uid int64) (bool, *time.Time) {
	tb.Helper()
	online, seen, err := tr.UserPresence(ctxT(tb), uid)
	if err != nil {
		tb.Fatalf("presence of %d: %v", uid, err)
	}
	return online, seen
}

func counts(tb testing.TB, tr *Tracker) Counts {
	tb.Helper()
	c, err := tr.Counts(ctxT(tb))
	if err != nil {
		tb.Fatalf("counts: %v", err)
	}
	return c
}

// runSweeper runs tr's sweeper until the test ends.
func runSweeper(tb testing.TB, tr *Tracker) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.RunSweeper(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
}

// plant puts users in last.seen at the given times and, when expiry is not
// zero, in connected with one connection on an instance whose lease runs
// until expiry, as heartbeats would have, to set up edges and large
// populations exactly.
func plant(tb testing.TB, e env, seen map[int64]time.Time, expiry time.Time) {
	tb.Helper()
	k := e.keys()
	ctx := ctxT(tb)
	pipe := e.rdb.Pipeline()
	for uid, at := range seen {
		pipe.ZAdd(ctx, k.lastSeen(), redis.Z{Score: float64(at.UnixMilli()), Member: itoa(uid)})
		if !expiry.IsZero() {
			pipe.ZAdd(ctx, k.connected(), redis.Z{Score: float64(at.UnixMilli()), Member: itoa(uid)})
			plantConnIn(ctx, pipe, k, uid, "planted", expiry)
		}
		if expiry.After(at) { // a heartbeat at that time would have left it here
			pipe.ZAdd(ctx, k.onlineCopy(), redis.Z{Score: float64(at.UnixMilli()), Member: itoa(uid)})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("plant: %v", err)
	}
}

// plantConn registers connection conn of uid on an instance whose lease
// runs until lease (one planted instance per lease time), as another
// instance's Connect would have.
func plantConn(tb testing.TB, e env, uid int64, conn string, lease time.Time) {
	tb.Helper()
	ctx := ctxT(tb)
	pipe := e.rdb.Pipeline()
	plantConnIn(ctx, pipe, e.keys(), uid, conn, lease)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("plant connection %d/%s: %v", uid, conn, err)
	}
}

func plantConnIn(ctx context.Context, pipe redis.Pipeliner, k keys, uid int64, conn string, lease time.Time) {
	instance := "planted-" + itoa(lease.UnixMilli())
	pipe.ZAdd(ctx, k.instances(), redis.Z{Score: float64(lease.UnixMilli()), Member: instance})
	pipe.HSet(ctx, k.conns(uid), conn, instance)
	pipe.SAdd(ctx, k.instanceConns(instance), itoa(uid)+":"+conn)
}

func redisZ(at time.Time, uid int64) redis.Z {
	return redis.Z{Score: float64(at.UnixMilli()), Member: itoa(uid)}
}

// plantActive records uids as active in one minute, in the set and the
// HyperLogLog, as heartbeats then would have.
func plantActive(tb testing.TB, e env, minute int64, uids ...int64) {
	tb.Helper()
	k := e.keys()
	ctx := ctxT(tb)
	members := make([]any, len(uids))
	for i, uid := range uids {
		members[i] = itoa(uid)
	}
	pipe := e.rdb.Pipeline()
	pipe.SAdd(ctx, k.activeUsers(minute), members...)
	pipe.PFAdd(ctx, k.activeHLL(minute), members...)
	pipe.Expire(ctx, k.activeUsers(minute), activeKeyTTL)
	pipe.Expire(ctx, k.activeHLL(minute), activeKeyTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("plant active users of minute %d: %v", minute, err)
	}
}

// clearOfMinuteEdge waits, when Redis's clock is in the last seconds of a
// minute, for the next one, so that planting and counting fall in one
// minute; it returns that minute (unix time / 60).
func clearOfMinuteEdge(tb testing.TB, e env) int64 {
	tb.Helper()
	if now := e.now(tb); now.Second() >= 55 {
		time.Sleep(time.Duration(61-now.Second()) * time.Second)
	}
	return e.now(tb).Unix() / 60
}

// newPrivateEnv is a deployment on a redis-server of the test's own, whose
// command statistics no other test disturbs.
func newPrivateEnv(tb testing.TB) env {
	tb.Helper()
	srv := redistest.Start(tb)
	return env{rdb: redistest.ClientOf(tb, srv.URL), prefix: redistest.Prefix()}
}

// commandCalls sums the calls Redis counted of the given commands (lower
// case, as INFO commandstats names them), scripts' own calls included.
func commandCalls(tb testing.TB, e env, cmds ...string) int64 {
	tb.Helper()
	info, err := e.node(tb).Info(ctxT(tb), "commandstats").Result()
	if err != nil {
		tb.Fatalf("info commandstats: %v", err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !slices.Contains(cmds, strings.TrimPrefix(name, "cmdstat_")) {
			continue
		}
		for _, f := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					tb.Fatalf("commandstats %q: %v", line, err)
				}
				total += n
			}
		}
	}
	return total
}

// scriptReplies records the calls of one script a client made that Redis
// answered, with their keys and replies.
type scriptReplies struct {
	script *redis.Script
	mu     sync.Mutex
	calls  []scriptReply
}

type scriptReply struct {
	keys  []string
	reply any
}

func (r *scriptReplies) all() []scriptReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *scriptReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *scriptReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c, ok := cmd.(*redis.Cmd)
		if !ok || err != nil || !runs(cmd, r.script) {
			return err
		}
		// EVAL(SHA) script numkeys KEYS... ARGV...
		args := cmd.Args()
		n, _ := strconv.Atoi(fmt.Sprint(args[2]))
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprint(args[3+i])
		}
		r.mu.Lock()
		r.calls = append(r.calls, scriptReply{keys: keys, reply: c.Val()})
		r.mu.Unlock()
		return err
	}
}

func (r *scriptReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
