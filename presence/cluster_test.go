package presence

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"chorus/internal/slots"

	"github.com/redis/go-redis/v9"
)

// On a Redis Cluster, the whole flow (connects, heartbeats, online friends,
// counts, presences, the copy's trim, a disconnect through another instance
// than the holder, the sweep of a dead instance) runs every presence script,
// each with all its keys in one slot, presence's, and each touching no key
// it was not handed in KEYS: Redis Cluster checks only that undeclared keys
// are in the same slot, so this is checked here, from MONITOR on presence's
// shard. Online friends, copying last.seen afresh, is one script call whose
// ZINTERSTORE, ZREMRANGEBYSCORE and ZINTERSTORE run with nothing between.
// Announcements run no script there: their frames go with SPUBLISH to the
// friends' channels, in the friends' slots (see announce_test.go).
func TestClusterScriptsKeepToPresenceSlot(t *testing.T) {
	t.Parallel()
	e := newClusterEnv(t)
	ctx := ctxT(t)
	mon := startMonitor(t, e)

	const w = time.Second
	opts := Options{Window: w, CopyTTL: time.Millisecond, CountsTTL: -1}
	tr, dying := e.tracker(t, opts), e.tracker(t, opts)
	copying := e.tracker(t, Options{Window: w, CopyTTL: -1})
	const alice, bob, carol = 1, 2, 3
	e.befriend(t, alice, bob)
	e.befriend(t, carol, bob)
	mustConnect(t, tr, bob, "b")
	mustConnect(t, dying, alice, "a")
	mustConnect(t, dying, carol, "c")
	if err := dying.Heartbeats(ctx, []Beat{{alice, "a"}, {carol, "c"}}); err != nil {
		t.Fatal(err)
	}
	if got := sortedInts(onlineFriends(t, tr, bob)); !slices.Equal(got, []int64{alice, carol}) {
		t.Fatalf("online friends of bob = %v, want alice and carol", got)
	}
	onlineFriends(t, copying, bob) // its calls are checked below
	if got, want := counts(t, tr), (Counts{Online: 3, ActiveLast10m: 3}); got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
	if online, _ := presenceOf(t, tr, alice); !online {
		t.Fatal("alice offline")
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := tr.TrimCopy(ctx); err != nil {
		t.Fatal(err)
	}
	// carol's connection is held by dying: tr learns it from the script.
	if last := mustDisconnect(t, tr, carol, "c"); !last {
		t.Fatal("carol's last disconnect: last = false")
	}
	// dying goes away; tr lives on and sweeps alice out.
	deadline := time.Now().Add(w + 100*time.Millisecond)
	for time.Now().Before(deadline) {
		if err := tr.Heartbeats(ctx, []Beat{{bob, "b"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(w / 4)
	}
	if n, err := tr.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want alice", n, err)
	}
	if got := onlineFriends(t, tr, bob); len(got) != 0 {
		t.Fatalf("online friends of bob after the sweep = %v, want none", got)
	}

	calls := mon.stop(t)
	want := map[string]*redis.Script{
		"register": registerScript, "heartbeats": heartbeatsScript, "disconnect": disconnectScript,
		"sweep": sweepScript, "counts": countsScript, "online friends": onlineFriendsScript,
		"presences": presencesScript, "trim": trimScript,
	}
	ran := map[string]int{}
	presenceSlot := slots.Of(e.keys().lastSeen())
	for _, c := range calls {
		name := ""
		for n, s := range want {
			if s.Hash() == c.sha {
				name = n
			}
		}
		if c.sha == announceScript.Hash() {
			t.Errorf("announce.lua ran on a cluster, where no sharded subscriber gets its PUBLISH: %s", c)
			continue
		}
		if name == "" {
			t.Errorf("a script that is not presence's ran: %s", c)
			continue
		}
		ran[name]++
		for _, k := range c.keys {
			if slots.Of(k) != presenceSlot {
				t.Errorf("%s was handed %s, in slot %d, not presence's %d", name, k, slots.Of(k), presenceSlot)
			}
		}
		for _, cmd := range c.cmds {
			for _, k := range commandKeys(t, e, cmd) {
				if !slices.Contains(c.keys, k) {
					t.Errorf("%s touched %s, not in its KEYS %v: %q", name, k, c.keys, cmd)
				}
			}
		}
	}
	for name := range want {
		if ran[name] == 0 {
			t.Errorf("the %s script never ran", name)
		}
	}

	// The copying reader's call: one script, the classic steps one after
	// the other in it.
	friends := e.friendsKey(bob)
	var steps []string
	for _, c := range calls {
		if c.sha == onlineFriendsScript.Hash() && slices.Contains(c.keys, friends) && hasCommand(c, "zremrangebyscore") {
			steps = nil
			for _, cmd := range c.cmds {
				if n := strings.ToLower(cmd[0]); n == "zinterstore" || n == "zremrangebyscore" {
					steps = append(steps, n)
				}
			}
			break
		}
	}
	if want := []string{"zinterstore", "zremrangebyscore", "zinterstore"}; !slices.Equal(steps, want) {
		t.Errorf("online friends copying afresh ran %v in one call, want %v", steps, want)
	}
}

// Scripts handed the keys of another minute than Redis's (here an instance
// whose estimate of Redis's clock is two minutes behind) write nothing and
// run again with the right ones.
func TestScriptsRunAgainInRedisMinute(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{CountsTTL: -1})
		k := e.keys()
		ctx := ctxT(t)
		minute := clearOfMinuteEdge(t, e)
		behind := -2 * time.Minute.Milliseconds()

		tr.skew.Store(behind)
		mustConnect(t, tr, 1, "a")
		tr.skew.Store(behind)
		if err := tr.Heartbeats(ctx, []Beat{{1, "a"}, {2, "b"}}); err != nil {
			t.Fatal(err)
		}
		tr.skew.Store(behind)
		if got, want := counts(t, tr), (Counts{Online: 2, ActiveLast10m: 2}); got != want {
			t.Fatalf("counts = %+v, want %+v", got, want)
		}
		for _, key := range []string{k.activeUsers(minute - 2), k.activeHLL(minute - 2)} {
			if n := e.rdb.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("%s was written", key)
			}
		}
		if got := e.rdb.SMembers(ctx, k.activeUsers(minute)).Val(); !slices.Equal(sortedStrings(got), []string{"1", "2"}) {
			t.Errorf("this minute's active set = %v, want 1 and 2", got)
		}
	})
}

func sortedStrings(v []string) []string {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}

// scriptCall is one script run as MONITOR saw it: its SHA1, its KEYS, and
// the commands it ran.
type scriptCall struct {
	sha  string
	keys []string
	cmds [][]string
}

func (c scriptCall) String() string { return c.sha + " " + strings.Join(c.keys, " ") }

func hasCommand(c scriptCall, name string) bool {
	for _, cmd := range c.cmds {
		if strings.EqualFold(cmd[0], name) {
			return true
		}
	}
	return false
}

// commandKeys is the keys cmd names, as Redis tells them (COMMAND GETKEYS).
func commandKeys(tb testing.TB, e env, cmd []string) []string {
	tb.Helper()
	switch strings.ToLower(cmd[0]) {
	case "time": // no key: GETKEYS refuses it
		return nil
	}
	args := make([]any, len(cmd))
	for i, a := range cmd {
		args[i] = a
	}
	keys, err := e.node(tb).CommandGetKeys(ctxT(tb), args...).Result()
	if err != nil {
		tb.Fatalf("command getkeys %q: %v", cmd, err)
	}
	return keys
}

// monitor reads MONITOR of the node holding a deployment's presence keys.
type monitor struct {
	node   *redis.Client
	prefix string
	done   chan []scriptCall
	marker string
}

// startMonitor starts MONITOR on e's presence shard, returning once it runs.
func startMonitor(tb testing.TB, e env) *monitor {
	tb.Helper()
	node, ok := e.node(tb).(*redis.Client)
	if !ok {
		tb.Fatalf("the presence shard is not one node")
	}
	conn, err := net.DialTimeout("tcp", node.Options().Addr, 5*time.Second)
	if err != nil {
		tb.Fatalf("monitor: %v", err)
	}
	tb.Cleanup(func() { conn.Close() })
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		tb.Fatalf("monitor: %v", err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		tb.Fatalf("monitor: %q, %v", line, err)
	}
	m := &monitor{node: node, prefix: e.prefix, done: make(chan []scriptCall, 1), marker: e.prefix + "monitor.done"}
	go m.read(r)
	return m
}

// read gathers the scripts handed keys under the prefix, each with the
// commands MONITOR shows right after it (a script runs whole, and MONITOR
// lists the commands it runs after the script's own line), until the
// marker comes.
func (m *monitor) read(r *bufio.Reader) {
	var calls []scriptCall
	var cur *scriptCall
	defer func() { m.done <- calls }()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		who, args := monitorLine(strings.TrimSuffix(line, "\r\n"))
		if len(args) == 0 {
			continue
		}
		if who == "lua" {
			if cur != nil {
				cur.cmds = append(cur.cmds, args)
			}
			continue
		}
		if cur != nil {
			calls = append(calls, *cur)
			cur = nil
		}
		name := strings.ToLower(args[0])
		if name == "echo" && len(args) == 2 && args[1] == m.marker {
			return
		}
		if (name != "evalsha" && name != "eval") || len(args) < 3 {
			continue
		}
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 1 || len(args) < 3+n || !strings.HasPrefix(args[3], m.prefix) {
			continue
		}
		sha := args[1]
		if name == "eval" {
			sum := sha1.Sum([]byte(args[1]))
			sha = hex.EncodeToString(sum[:])
		}
		cur = &scriptCall{sha: sha, keys: args[3 : 3+n]}
	}
}

// stop ends the monitor and returns the script calls it saw.
func (m *monitor) stop(tb testing.TB) []scriptCall {
	tb.Helper()
	if err := m.node.Echo(ctxT(tb), m.marker).Err(); err != nil {
		tb.Fatalf("monitor: %v", err)
	}
	select {
	case calls := <-m.done:
		return calls
	case <-time.After(10 * time.Second):
		tb.Fatalf("monitor: the marker did not come")
	}
	return nil
}

// monitorLine splits a MONITOR line, `1700000000.000000 [0 127.0.0.1:1234]
// "CMD" "arg" ...`, into who sent it ("lua" for a script's commands) and
// the command, its quoted arguments unescaped.
func monitorLine(line string) (who string, args []string) {
	open, end := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
	if open < 0 || end < open {
		return "", nil
	}
	if f := strings.Fields(line[open+1 : end]); len(f) == 2 {
		who = f[1]
	}
	s := line[end+1:]
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		var b strings.Builder
		for i++; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' || i+1 >= len(s) {
				b.WriteByte(s[i])
				continue
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if v, err := strconv.ParseUint(s[i+1:min(i+3, len(s))], 16, 8); err == nil {
					b.WriteByte(byte(v))
					i += 2
				}
			default:
				b.WriteByte(s[i])
			}
		}
		args = append(args, b.String())
	}
	return who, args
}
