package presence

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

func TestHeartbeats(t *testing.T) {
	t.Parallel()
	onBackends(t, heartbeats)
}

func TestEmbeddedHeartbeats(t *testing.T) {
	t.Parallel()
	e, _ := newEmbeddedEnv(t)
	heartbeats(t, e)
}

// One Heartbeats call leaves last.seen, the minute's active set and
// HyperLogLog and the online copy as one Heartbeat per connection would,
// with one write per user; it renews the instance's lease and writes nothing
// per connection. A connection the instance never registered is registered,
// and its user announced once.
func heartbeats(t *testing.T, e env) {
	const w = 2 * time.Second
	tr := e.tracker(t, Options{Window: w})
	// Registering the 2,001 connections below takes the embedded store
	// (scripts run in Go, every command under the race detector) some 10 s
	// on a quiet machine, and minutes on a busy one: no deadline of ours.
	ctx := ctxLong(t)
	const watcher, back, twoConns, steady, fresh = 1, 2, 3, 4, 5
	for _, u := range []int64{back, twoConns, steady, fresh} {
		e.befriend(t, watcher, u)
	}
	mustConnect(t, tr, watcher, "w")
	mustConnect(t, tr, back, "b")
	mustConnect(t, tr, twoConns, "t1")
	mustConnect(t, tr, twoConns, "t2")
	mustConnect(t, tr, steady, "s")
	onlineFriends(t, tr, watcher) // make the shared copy, which beats then keep
	events := e.subscribe(t, watcher)
	k := e.keys()
	before := e.now(t)

	beats := []Beat{{back, "b"}, {twoConns, "t1"}, {twoConns, "t2"}, {steady, "s"}, {fresh, "f"}}
	if err := tr.Heartbeats(ctx, beats); err != nil {
		t.Fatal(err)
	}
	checkEvent(t, nextEvent(t, events, 2*time.Second), fresh, true)
	noEvent(t, events, 200*time.Millisecond)

	for _, u := range []int64{back, twoConns, steady, fresh} {
		// last.seen itself is written at a user's first write of the
		// minute, their registration for most here; readers see the tick.
		if online, seen, err := tr.UserPresence(ctx, u); err != nil || !online || seen == nil || seen.UnixMilli() < before.UnixMilli() {
			t.Errorf("presence of %d = %v, last seen %v (%v), want online now", u, online, seen, err)
		}
		if _, err := e.rdb.ZScore(ctx, k.lastSeen(), itoa(u)).Result(); err != nil {
			t.Errorf("%d not in last.seen: %v", u, err)
		}
		if _, err := e.rdb.ZScore(ctx, k.connected(), itoa(u)).Result(); err != nil {
			t.Errorf("%d not in connected: %v", u, err)
		}
		if _, err := e.rdb.ZScore(ctx, k.onlineCopy(), itoa(u)).Result(); err != nil {
			t.Errorf("%d not in the online copy: %v", u, err)
		}
	}
	lease, err := e.rdb.ZScore(ctx, k.instances(), tr.id).Result()
	if err != nil || lease < float64(before.Add(w).UnixMilli()) {
		t.Errorf("lease = %v (%v), want now + W", lease, err)
	}
	conns, err := e.rdb.HKeys(ctx, k.conns(twoConns)).Result()
	if slices.Sort(conns); err != nil || !slices.Equal(conns, []string{"t1", "t2"}) {
		t.Errorf("connections of %d = %v (%v)", twoConns, conns, err)
	}
	members, err := e.rdb.SMembers(ctx, k.instanceConns(tr.id)).Result()
	want := []string{"1:w", "2:b", "3:t1", "3:t2", "4:s", "5:f"}
	if slices.Sort(members); err != nil || !slices.Equal(members, want) {
		t.Errorf("the instance's connections = %v (%v), want %v", members, err, want)
	}
	minute := e.now(t).Unix() / 60
	active, _ := e.rdb.SMembers(ctx, k.activeUsers(minute)).Result()
	for _, u := range []int64{back, twoConns, steady, fresh} {
		if !slices.Contains(active, itoa(u)) && minute == before.Unix()/60 {
			t.Errorf("%d not in the active set of minute %d: %v", u, minute, active)
		}
	}
	if got := onlineFriends(t, tr, watcher); !slices.Equal(sortedInts(got), []int64{back, twoConns, steady, fresh}) {
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
	if err := tr.Heartbeats(ctx, many); err != nil {
		t.Fatal(err)
	}
	if n, err := e.rdb.ZCard(ctx, k.connected()).Result(); err != nil || n != int64(5+len(many)) {
		t.Errorf("connected holds %d (%v), want %d", n, err, 5+len(many))
	}
	if err := tr.Heartbeats(ctx, []Beat{{0, "x"}}); err == nil {
		t.Error("a beat of uid 0 was taken")
	}
}

// When Redis comes back from a restart (or a failover) without the writes
// of its last moments, its run_id has changed, and the next tick registers
// the instance's connections again, even though its lease survived: a user
// whose registration was lost is back in connected and announced. One
// redis-server of its own, which it restarts.
func TestRegisteredAgainAfterRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := env{rdb: redistest.ClientOf(t, srv.URL), prefix: redistest.Prefix()}
	tr, other := e.tracker(t, Options{}), e.tracker(t, Options{})
	ctx := ctxT(t)
	k := e.keys()
	const watcher, alice, bob = 1, 2, 3
	mustConnect(t, tr, alice, "a")
	mustConnect(t, tr, bob, "b")
	if err := tr.Heartbeats(ctx, nil); err != nil {
		t.Fatal(err)
	}

	// Restarted from a snapshot taken before bob connected: tr's lease
	// and alice's registration are there, bob's is not.
	srv.Stop()
	redistest.StartOnPort(t, srv.Port)
	waitFor(t, 5*time.Second, "Redis back", func() bool { return e.rdb.Ping(ctx).Err() == nil })
	e.befriend(t, watcher, alice)
	e.befriend(t, watcher, bob)
	pipe := e.rdb.Pipeline()
	pipe.ZAdd(ctx, k.instances(), redis.Z{Score: float64(e.now(t).Add(time.Minute).UnixMilli()), Member: tr.id})
	pipe.HSet(ctx, k.conns(alice), "a", tr.id)
	pipe.SAdd(ctx, k.instanceConns(tr.id), itoa(alice)+":a")
	pipe.ZAdd(ctx, k.connected(), redisZ(e.now(t), alice))
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	mustConnect(t, other, watcher, "w")
	events := e.subscribe(t, watcher)

	if err := tr.Heartbeats(ctx, []Beat{{alice, "a"}, {bob, "b"}}); err != nil {
		t.Fatal(err)
	}
	tr.registeredAgain()
	checkEvent(t, nextEvent(t, events, 2*time.Second), bob, true)
	noEvent(t, events, 200*time.Millisecond)
	if got := onlineFriends(t, other, watcher); !slices.Equal(sortedInts(got), []int64{alice, bob}) {
		t.Errorf("online friends of the watcher = %v, want alice and bob", got)
	}
	if id, err := e.rdb.HGet(ctx, k.conns(bob), "b").Result(); err != nil || id != tr.id {
		t.Errorf("bob's connection is held by %q (%v), want the instance %q", id, err, tr.id)
	}
}

// A tick of an instance whose lease ran out, and whose users a sweep took
// out meanwhile (their friends told offline), puts back in the online copy
// only those still connected, until registering again brings the others
// back and announces them: here it fails, tick after tick, so alice,
// swept, stays offline everywhere (the ticks after the first, which renewed
// the lease, too), while carol, connected on another instance too, is
// online with the tick's time.
func TestTickAfterLostLeaseLeavesSweptUsersOffline(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		var failing atomic.Bool
		e.rdb.AddHook(failRegister{&failing})
		ctx := ctxT(t)
		k := e.keys()
		stalled := e.tracker(t, Options{CountsTTL: -1})
		sweeper := e.tracker(t, Options{CountsTTL: -1})
		const alice, bob, carol = 1, 2, 3
		e.befriend(t, alice, bob)
		e.befriend(t, carol, bob)
		mustConnect(t, sweeper, bob, "bob")
		mustConnect(t, sweeper, carol, "c1")
		mustConnect(t, stalled, alice, "a")
		mustConnect(t, stalled, carol, "c2")
		onlineFriends(t, sweeper, bob) // the copy exists

		// The stalled instance's lease runs out, and the sweep takes alice.
		if err := e.rdb.ZAdd(ctx, k.instances(), redis.Z{Score: 1, Member: stalled.id}).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := sweeper.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("sweep = %d, %v; want alice taken out", n, err)
		}
		before := e.now(t)
		failing.Store(true)
		for range 2 {
			if err := stalled.Heartbeats(ctx, []Beat{{alice, "a"}, {carol, "c2"}}); err != nil {
				t.Fatal(err)
			}
			stalled.registeredAgain() // failed, and logged
		}
		failing.Store(false)

		if online, _ := presenceOf(t, sweeper, alice); online {
			t.Error("alice's presence is online, without a registered connection")
		}
		if got := onlineFriends(t, sweeper, bob); !slices.Equal(got, []int64{carol}) {
			t.Errorf("bob's online friends = %v, want carol alone", got)
		}
		if c := counts(t, sweeper); c.Online != 2 {
			t.Errorf("counts online = %d, want bob and carol", c.Online)
		}
		for uid, inCopy := range map[int64]bool{alice: false, carol: true} {
			at, err := e.rdb.ZScore(ctx, k.onlineCopy(), itoa(uid)).Result()
			if got := err == nil; got != inCopy {
				t.Errorf("user %d in the online copy: %v (%v), want %v", uid, got, err, inCopy)
			}
			if inCopy && at < float64(before.UnixMilli()) {
				t.Errorf("user %d's time in the copy %v is before the tick", uid, at)
			}
			if seen, err := e.rdb.ZScore(ctx, k.lastSeen(), itoa(uid)).Result(); err != nil || seen < float64(before.UnixMilli()) {
				t.Errorf("user %d's last.seen = %v (%v), want the tick's time", uid, seen, err)
			}
		}
	})
}

func sortedInts(v []int64) []int64 {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}

// A user joins a minute's active set and HyperLogLog once: later ticks of
// the same minute write only last.seen and the copy for them. One
// redis-server of its own, whose command statistics it counts.
func TestActiveSetWrittenOncePerMinute(t *testing.T) {
	t.Parallel()
	e := newPrivateEnv(t)
	tr := e.tracker(t, Options{})
	ctx := ctxT(t)
	beats := make([]Beat, 50)
	for i := range beats {
		beats[i] = Beat{UID: int64(i + 1), ConnID: "c"}
	}
	clearOfMinuteEdge(t, e)
	if err := tr.Heartbeats(ctx, beats); err != nil {
		t.Fatal(err)
	}
	sadds, pfadds := commandCalls(t, e, "sadd"), commandCalls(t, e, "pfadd")
	for range 3 {
		if err := tr.Heartbeats(ctx, beats); err != nil {
			t.Fatal(err)
		}
	}
	if n := commandCalls(t, e, "sadd") - sadds; n != 0 {
		t.Errorf("%d SADDs in later ticks of the minute, want none", n)
	}
	if n := commandCalls(t, e, "pfadd") - pfadds; n != 0 {
		t.Errorf("%d PFADDs in later ticks of the minute, want none", n)
	}

	// A connection's registration writes its user's minute: their first
	// tick has nothing more to write there.
	mustConnect(t, tr, 100, "c")
	sadds = commandCalls(t, e, "sadd")
	if err := tr.Heartbeats(ctx, append(beats, Beat{UID: 100, ConnID: "c"})); err != nil {
		t.Fatal(err)
	}
	if n := commandCalls(t, e, "sadd") - sadds; n != 0 {
		t.Errorf("%d SADDs in the first tick after a connect of the minute, want none", n)
	}
}

// While a user is online, ticks after their first of the minute write their
// time to the shared copy only; readers see it there, and whatever takes
// the user out of the copy (a disconnect, the sweep, the trim) moves it into
// last.seen first, so the last activity is never lost.
func TestLastSeenCatchesUpWithTheCopy(t *testing.T) {
	t.Parallel()
	const w = 400 * time.Millisecond
	for _, leave := range []string{"disconnect", "sweep", "trim"} {
		t.Run(leave, func(t *testing.T) {
			t.Parallel()
			onBackends(t, func(t *testing.T, e env) {
				opts := Options{Window: w, CopyTTL: time.Millisecond}
				tr, watching := e.tracker(t, opts), e.tracker(t, opts)
				ctx := ctxT(t)
				k := e.keys()
				const alice, bob = 1, 2
				e.befriend(t, alice, bob)
				clearOfMinuteEdge(t, e)
				mustConnect(t, tr, alice, "a")
				mustConnect(t, watching, bob, "b")
				onlineFriends(t, watching, bob) // the copy
				beat := func() {
					time.Sleep(5 * time.Millisecond)
					if err := tr.Heartbeats(ctx, []Beat{{alice, "a"}}); err != nil {
						t.Fatal(err)
					}
				}
				beat() // alice's first tick of the minute: last.seen too
				beat() // the copy alone
				stored, _ := e.rdb.ZScore(ctx, k.lastSeen(), itoa(alice)).Result()
				latest, err := e.rdb.ZScore(ctx, k.onlineCopy(), itoa(alice)).Result()
				if err != nil || latest <= stored {
					t.Fatalf("copy %v (%v), last.seen %v: want the copy ahead", latest, err, stored)
				}
				if _, seen := presenceOf(t, watching, alice); seen == nil || seen.UnixMilli() != int64(latest) {
					t.Fatalf("alice's presence says last seen %v, want the copy's %v", seen, unixMilli(int64(latest)))
				}

				events := e.subscribe(t, bob)
				switch leave {
				case "disconnect":
					mustDisconnect(t, tr, alice, "a")
				case "sweep": // tr goes away; bob's instance lives on
					time.Sleep(w + 50*time.Millisecond)
					if err := watching.Heartbeats(ctx, nil); err != nil {
						t.Fatal(err)
					}
					if n, err := watching.Sweep(ctx); err != nil || n != 1 {
						t.Fatalf("sweep = %d, %v; want alice", n, err)
					}
				case "trim": // alice idles past W, her connection still open
					time.Sleep(w + 50*time.Millisecond)
					if err := watching.Heartbeats(ctx, []Beat{{bob, "b"}}); err != nil {
						t.Fatal(err)
					}
					if n, err := watching.TrimCopy(ctx); err != nil || n != 1 {
						t.Fatalf("trim = %d, %v; want alice out", n, err)
					}
					if _, err := e.rdb.ZScore(ctx, k.onlineCopy(), itoa(alice)).Result(); err != redis.Nil {
						t.Fatalf("alice still in the copy after the trim: %v", err)
					}
				}
				if leave != "trim" {
					ev := nextEvent(t, events, 2*time.Second)
					checkEvent(t, ev, alice, false)
					if ev.LastSeen.UnixMilli() != int64(latest) {
						t.Errorf("offline event last_seen %v, want the last tick's %v", ev.LastSeen, unixMilli(int64(latest)))
					}
				}
				if got, err := e.rdb.ZScore(ctx, k.lastSeen(), itoa(alice)).Result(); err != nil || got != latest {
					t.Errorf("last.seen of alice after %s = %v (%v), want the last tick's %v", leave, got, err, latest)
				}
				if _, seen := presenceOf(t, watching, alice); seen == nil || seen.UnixMilli() != int64(latest) {
					t.Errorf("alice's presence after %s says last seen %v, want %v", leave, seen, unixMilli(int64(latest)))
				}
			})
		})
	}
}
