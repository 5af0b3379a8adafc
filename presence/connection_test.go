package presence

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"chorus/internal/redistest"
	"chorus/internal/testio"
)

func TestTwoConnectionsOfOneUser(t *testing.T) {
	t.Parallel()
	onBackends(t, twoConnections)
}

// twoConnections runs on any backend: a user with two connections is one
// presence, online until both are gone, and a clean sign-off is seen at once.
func twoConnections(t *testing.T, e env) {
	tr := e.tracker(t, Options{})
	const alice, bob = 1, 2
	e.befriend(t, alice, bob)
	mustConnect(t, tr, bob, "bob-1")
	events := e.subscribe(t, bob)

	if first := mustConnect(t, tr, alice, "tab-1"); !first {
		t.Fatalf("first connection: first = false")
	}
	checkEvent(t, nextEvent(t, events, 2*time.Second), alice, true)
	if first := mustConnect(t, tr, alice, "tab-2"); first {
		t.Fatalf("second connection: first = true")
	}
	if got := onlineFriends(t, tr, bob); !slices.Equal(got, []int64{alice}) {
		t.Fatalf("online friends of bob = %v, want [alice]", got)
	}

	if last := mustDisconnect(t, tr, alice, "tab-1"); last {
		t.Fatalf("closing one of two tabs: last = true")
	}
	noEvent(t, events, 200*time.Millisecond)
	if online, _ := presenceOf(t, tr, alice); !online {
		t.Fatalf("alice offline with a tab still open")
	}
	if got := onlineFriends(t, tr, bob); !slices.Equal(got, []int64{alice}) {
		t.Fatalf("online friends of bob with one tab = %v, want [alice]", got)
	}
	if err := tr.Heartbeat(ctxT(t), alice, "tab-2"); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	_, seenBefore := presenceOf(t, tr, alice)

	signOff := time.Now()
	if last := mustDisconnect(t, tr, alice, "tab-2"); !last {
		t.Fatalf("closing the last tab: last = false")
	}
	ev := nextEvent(t, events, 5*time.Second)
	checkEvent(t, ev, alice, false)
	if !ev.LastSeen.Equal(*seenBefore) {
		t.Fatalf("offline event last_seen = %v, want the last heartbeat %v", ev.LastSeen, *seenBefore)
	}
	// The shared copy is current: no wait for a rebuild.
	if got := onlineFriends(t, tr, bob); len(got) != 0 {
		t.Fatalf("online friends of bob after sign-off = %v, want none", got)
	}
	if d := time.Since(signOff); d > 5*time.Second {
		t.Fatalf("sign-off seen after %s, want within 5s", d)
	}
	online, seen := presenceOf(t, tr, alice)
	if online || seen == nil || !seen.Equal(*seenBefore) {
		t.Fatalf("alice after sign-off: online=%v last_seen=%v, want offline, %v", online, seen, *seenBefore)
	}

	// Closing again, or a connection never opened, changes nothing.
	if last := mustDisconnect(t, tr, alice, "tab-2"); last {
		t.Fatalf("second disconnect: last = true")
	}
	if last := mustDisconnect(t, tr, alice, "never"); last {
		t.Fatalf("unknown connection: last = true")
	}
	noEvent(t, events, 200*time.Millisecond)

	if c := counts(t, tr); c.Online != 1 || c.ActiveLast10m != 2 {
		t.Fatalf("counts = %+v, want 1 online (bob), 2 active", c)
	}
}

func TestVanishedInstance(t *testing.T) {
	t.Parallel()
	onBackends(t, vanishedInstance)
}

// vanishedInstance runs on any backend: a user whose instance dies (no
// disconnect) drops out of online friends after W and is announced offline,
// once, within W and one heartbeat interval.
func vanishedInstance(t *testing.T, e env) {
	// W is far longer than the heartbeat, so that bob's beats, late on a
	// busy machine, still come within it.
	const w, hb = 3 * time.Second, 200 * time.Millisecond
	// What a busy machine may add to any wait below.
	const slack = 10 * time.Second
	opts := Options{Window: w, HeartbeatInterval: hb}
	dying, b, c := e.tracker(t, opts), e.tracker(t, opts), e.tracker(t, opts)
	const alice, bob = 1, 2
	e.befriend(t, alice, bob)

	mustConnect(t, b, bob, "bob")
	ctx := ctxT(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // bob's connection lives on
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(hb):
				if err := b.Heartbeat(ctx, bob, "bob"); err != nil {
					t.Errorf("heartbeat: %v", err)
					return
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	events := e.subscribe(t, bob)
	runSweeper(t, b)
	runSweeper(t, c) // two sweepers: still one announcement

	mustConnect(t, dying, alice, "alice")
	vanished := time.Now()
	checkEvent(t, nextEvent(t, events, slack), alice, true)
	_, seen := presenceOf(t, b, alice)

	waitFor(t, w+hb+slack, "alice out of online friends", func() bool {
		return len(onlineFriends(t, b, bob)) == 0
	})
	ev := nextEvent(t, events, w+hb+slack)
	checkEvent(t, ev, alice, false)
	// Within W and a heartbeat of the instance's lease running out (on a
	// calm machine; slack on a busy one).
	if d := time.Since(vanished); d > w+hb+slack {
		t.Errorf("offline announced %s after the instance vanished, want within W+heartbeat (%s)", d, w+hb)
	}
	if !ev.LastSeen.Equal(*seen) {
		t.Errorf("offline last_seen = %v, want the last activity %v", ev.LastSeen, *seen)
	}
	noEvent(t, events, 3*hb)

	// The instance comes back and closes its connection: nothing to tell.
	if last := mustDisconnect(t, dying, alice, "alice"); last {
		t.Errorf("disconnect after the sweep: last = true")
	}
	noEvent(t, events, 2*hb)
	if online, _ := presenceOf(t, b, alice); online {
		t.Errorf("alice online after the sweep")
	}
	if online, _ := presenceOf(t, b, bob); !online {
		t.Errorf("bob, still heartbeating, swept")
	}
}

func TestHeartbeatRevivesSweptConnection(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{Window: 300 * time.Millisecond})
		const alice, bob = 1, 2
		events := friendComesOnline(t, e, tr, alice, bob)

		time.Sleep(400 * time.Millisecond) // a long pause: both expire
		if n, err := tr.Sweep(ctxT(t)); err != nil || n != 2 {
			t.Fatalf("sweep = %d, %v; want 2 users", n, err)
		}
		mustConnect(t, tr, bob, "bob")
		if err := tr.Heartbeat(ctxT(t), alice, "a"); err != nil {
			t.Fatal(err)
		}
		checkEvent(t, nextEvent(t, events, 2*time.Second), alice, true)
		if online, _ := presenceOf(t, tr, alice); !online {
			t.Fatalf("alice offline after a heartbeat")
		}
	})
}

// friendComesOnline makes a and b friends, connects b ("bob"), then a
// ("a"), and returns b's events after the one telling b that a is online.
func friendComesOnline(t *testing.T, e env, tr *Tracker, a, b int64) <-chan *redis.Message {
	t.Helper()
	e.befriend(t, a, b)
	mustConnect(t, tr, b, "bob")
	events := e.subscribe(t, b)
	mustConnect(t, tr, a, "a")
	checkEvent(t, nextEvent(t, events, 2*time.Second), a, true)
	return events
}

func TestStaleAnnouncementIsDropped(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		const alice, bob = 1, 2
		events := friendComesOnline(t, e, tr, alice, bob)

		// An "offline" that reaches Redis after alice is back (a tab reloaded
		// onto another instance) is not published.
		if err := tr.publish(ctxT(t), alice, false, time.Now()); err != nil {
			t.Fatal(err)
		}
		noEvent(t, events, 200*time.Millisecond)
	})
}

// A Disconnect that fails (Redis stalled) is retried at the next ticks: the
// connection would live on with the instance's lease otherwise. One
// redis-server of its own, which it pauses.
func TestFailedDisconnectIsRetried(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := env{rdb: redistest.ClientOf(t, srv.URL), prefix: redistest.Prefix()}
	tr, other := e.tracker(t, Options{}), e.tracker(t, Options{})
	const alice, bob = 1, 2
	e.befriend(t, alice, bob)
	mustConnect(t, other, bob, "b")
	mustConnect(t, tr, alice, "a")
	events := e.subscribe(t, bob)

	srv.Pause(t)
	ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
	_, err := tr.Disconnect(ctx, alice, "a")
	cancel()
	srv.Resume()
	if err == nil {
		t.Fatal("disconnect with Redis stalled: no error")
	}
	if online, _ := presenceOf(t, other, alice); !online {
		t.Fatal("alice offline before the retry: the test stalled nothing")
	}
	if err := tr.Heartbeats(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	checkEvent(t, nextEvent(t, events, 2*time.Second), alice, false)
	if online, _ := presenceOf(t, other, alice); online {
		t.Error("alice online after the retried disconnect")
	}
	if err := tr.Heartbeats(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	noEvent(t, events, 200*time.Millisecond)
}

// Connections registered together, as after a lost lease or a Redis
// restart, announce each of their users once, to every connected friend:
// the announcements run several at a time (announceAll), none lost, none
// doubled.
func TestRegisteredTogetherAnnouncedOnce(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		const observer, users = 1, 3 * announceParallel
		mustConnect(t, tr, observer, "o")
		events := e.subscribe(t, observer)
		var beats []Beat
		for uid := int64(100); uid < 100+users; uid++ {
			e.befriend(t, observer, uid)
			beats = append(beats, Beat{UID: uid, ConnID: "c" + itoa(uid)})
		}
		// A second connection of one user, in the same call: still one
		// announcement of that user.
		beats = append(beats, Beat{UID: 100, ConnID: "c100b"})
		if err := tr.Heartbeats(ctxT(t), beats); err != nil {
			t.Fatal(err)
		}
		told := map[int64]int{}
		for range users {
			ev := nextEvent(t, events, 5*time.Second)
			checkEvent(t, ev, ev.User.ID, true)
			told[ev.User.ID]++
		}
		for uid := int64(100); uid < 100+users; uid++ {
			if told[uid] != 1 {
				t.Errorf("user %d announced %d times, want once", uid, told[uid])
			}
		}
		select {
		case m := <-events:
			t.Errorf("an announcement too many: %s", m.Payload)
		case <-time.After(200 * time.Millisecond):
		}
	})
}

// Connections that close while the instance registers all of its own again
// (after a lost lease) end up unregistered, and those that stay end up
// registered: the registration holds no lock over the Disconnects, and
// disconnects again, after it, the connections that closed meanwhile. A
// registration that outlasts its deadline (registerCallTimeout per call; a
// busy machine can make that) is made again at the next tick, whose retried
// disconnects take out what it registered of the closed ones, as the hub's
// ticks would.
func TestDisconnectsDuringRegistrationAgain(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		// Registering 5,000 connections, twice, and announcing them: tens of
		// seconds under the race detector on a busy machine.
		ctx := ctxLong(t)
		k := e.keys()
		const users = 5 * MaxBeatsPerCall // several register calls
		var all []Beat
		for uid := int64(1); uid <= users; uid++ {
			all = append(all, Beat{UID: uid, ConnID: "c" + itoa(uid)})
		}
		if err := tr.Heartbeats(ctx, all); err != nil {
			t.Fatal(err)
		}
		// The lease ran out and a sweep took the connections out: the next
		// tick registers every one again, a call of MaxBeatsPerCall at a
		// time, which the instance's connection set shows as it grows.
		pipe := e.rdb.Pipeline()
		pipe.ZRem(ctx, k.instances(), tr.id)
		pipe.Del(ctx, k.instanceConns(tr.id), k.connected())
		for _, c := range all {
			pipe.Del(ctx, k.conns(c.UID))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := tr.Heartbeats(ctx, nil); err != nil {
				t.Error(err)
			}
		})
		// Half the connections close once the registration has begun.
		waitFor(t, 10*time.Second, "the registration under way", func() bool {
			return e.rdb.SCard(ctx, k.instanceConns(tr.id)).Val() > 0
		})
		// By a few streams at a time, fewer than the client's pool serves
		// at once (10 per CPU): thousands waiting on its connections at
		// once would outwait its pool timeout on a busy machine.
		closing := make(chan Beat)
		for range 8 {
			wg.Go(func() {
				for c := range closing {
					if _, err := tr.Disconnect(ctx, c.UID, c.ConnID); err != nil {
						t.Error(err)
					}
				}
			})
		}
		for _, c := range all {
			if c.UID%2 == 0 {
				closing <- c
			}
		}
		close(closing)
		wg.Wait()
		tr.registeredAgain()
		// The next ticks, while the registration is still due or closed
		// connections wait to be disconnected again.
		for tick := 0; ; tick++ {
			tr.mu.Lock()
			pending := len(tr.leaving)
			tr.mu.Unlock()
			if tr.again.Load() == 0 && pending == 0 {
				break
			}
			if tick == 20 {
				t.Fatalf("still due after %d ticks: registration %d, %d disconnects", tick, tr.again.Load(), pending)
			}
			t.Logf("tick %d: the registration was not done (%d disconnects to retry)", tick+1, pending)
			if err := tr.Heartbeats(ctx, nil); err != nil {
				t.Fatal(err)
			}
			tr.registeredAgain()
		}
		connected, err := e.rdb.ZRange(ctx, k.connected(), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(connected) != users/2 {
			t.Errorf("%d users connected, want the %d that stayed", len(connected), users/2)
		}
		closedOnline := 0
		for _, m := range connected {
			if uid, _ := strconv.ParseInt(m, 10, 64); uid%2 == 0 {
				closedOnline++
			}
		}
		if closedOnline > 0 {
			t.Errorf("%d users connected after their connection closed", closedOnline)
		}
		if n, err := e.rdb.SCard(ctx, k.instanceConns(tr.id)).Result(); err != nil || n != users/2 {
			t.Errorf("the instance holds %d connections (%v), want %d", n, err, users/2)
		}
	})
}

// A tick that finds the lease lost starts registering the instance's
// connections again and returns without waiting for it: the realtime hub
// makes the tick holding the lock every stream closing waits on, so a
// stream closing during a long registration again (here one held until the
// test lets it go) is not held behind it. Its connection is disconnected at
// once, and stays so after the registration; the others are registered.
func TestTickDoesNotWaitForRegistrationAgain(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		hold := &holdScript{script: registerScript, release: make(chan struct{}), held: make(chan struct{})}
		e.rdb.AddHook(hold)
		tr := e.tracker(t, Options{})
		ctx := ctxT(t)
		k := e.keys()
		const alice, bob = 1, 2
		mustConnect(t, tr, alice, "a")
		mustConnect(t, tr, bob, "b")
		// The lease ran out and a sweep took the connections out.
		pipe := e.rdb.Pipeline()
		pipe.ZRem(ctx, k.instances(), tr.id)
		pipe.Del(ctx, k.instanceConns(tr.id), k.connected(), k.conns(alice), k.conns(bob))
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		hold.on.Store(true)
		t.Cleanup(func() { hold.on.Store(false) })

		if err := tr.Heartbeats(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if hold.expired.Load() {
			t.Fatal("the tick returned once the registration again it waited for failed")
		}
		select {
		case <-hold.held:
		case <-ctx.Done():
			t.Fatal("no registration again under way")
		}
		if _, err := tr.Disconnect(ctx, alice, "a"); err != nil {
			t.Fatal(err)
		}
		close(hold.release)
		tr.registeredAgain()
		if hold.expired.Load() {
			t.Fatal("the registration again failed: held past its deadline")
		}

		if n := e.rdb.HLen(ctx, k.conns(alice)).Val(); n != 0 {
			t.Errorf("alice's registry holds %d connections after hers closed", n)
		}
		if _, err := e.rdb.ZScore(ctx, k.connected(), itoa(alice)).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("alice is connected after her only connection closed (%v)", err)
		}
		if id, err := e.rdb.HGet(ctx, k.conns(bob), "b").Result(); err != nil || id != tr.id {
			t.Errorf("bob's connection is held by %q (%v), want the instance %q", id, err, tr.id)
		}
	})
}

// A registration again that fails stays due: the next tick tries it again,
// though the lease it renewed no longer says it was lost, until it is done.
func TestRegistrationAgainRetriedUntilDone(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	var failing atomic.Bool
	rdb.AddHook(failRegister{&failing})
	e := env{rdb: rdb, prefix: prefix}
	tr := e.tracker(t, Options{})
	ctx := ctxT(t)
	k := e.keys()
	const alice = 1
	mustConnect(t, tr, alice, "a")
	// Alice's registration is lost, and the lease with it.
	if err := e.rdb.Del(ctx, k.conns(alice), k.instances()).Err(); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if err := tr.Heartbeats(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tr.registeredAgain()
	if n := e.rdb.HLen(ctx, k.conns(alice)).Val(); n != 0 {
		t.Fatalf("alice's registry holds %d connections while registering fails", n)
	}
	failing.Store(false)
	for range 2 { // the retry, and a tick with nothing left to do
		if err := tr.Heartbeats(ctx, nil); err != nil {
			t.Fatal(err)
		}
		tr.registeredAgain()
	}
	if id, err := e.rdb.HGet(ctx, k.conns(alice), "a").Result(); err != nil || id != tr.id {
		t.Errorf("alice's connection is held by %q (%v), want the instance %q", id, err, tr.id)
	}
	if n := tr.again.Load(); n != 0 {
		t.Errorf("registering again still due (%d) after it succeeded", n)
	}
}

// failRegister fails the register script's calls while it is set.
type failRegister struct{ on *atomic.Bool }

func (failRegister) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f failRegister) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.on.Load() && len(cmd.Args()) > 1 && cmd.Args()[1] == registerScript.Hash() {
			err := errors.New("register refused by the test")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (failRegister) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A fresh instance has no lease yet, which is no lease lost: the streams
// that open at its start, all at once, are registered once each, and
// nothing is registered again nor logged as such; nor when its first tick
// carries connections it never registered, nor when a stream opens after
// the instance held none until its lease ran out. A lease that runs
// out while the instance holds connections is: they are registered again,
// and the log says so.
func TestNoLeaseYetIsNoLeaseLost(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	var calls atomic.Int64
	rdb.AddHook(countRegister{&calls})
	var logs testio.Buffer
	e := env{rdb: rdb, prefix: prefix}
	tr := e.tracker(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := ctxT(t)
	k := e.keys()
	const again = "connections registered again"

	const streams = 20
	var wg sync.WaitGroup
	var beats []Beat
	for uid := int64(1); uid <= streams; uid++ {
		beats = append(beats, Beat{UID: uid, ConnID: "c" + itoa(uid)})
		wg.Go(func() { mustConnect(t, tr, uid, "c"+itoa(uid)) })
	}
	wg.Wait()
	if err := tr.Heartbeats(ctx, beats); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != streams {
		t.Errorf("%d register calls for %d streams opening on a fresh instance, want one each", n, streams)
	}
	if strings.Contains(logs.String(), again) {
		t.Errorf("a fresh start logged a registration again:\n%s", logs.String())
	}

	// A fresh instance whose first tick carries connections it never
	// registered registers them, once.
	fresh := e.tracker(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	calls.Store(0)
	if err := fresh.Heartbeats(ctx, []Beat{{UID: 50, ConnID: "f1"}, {UID: 51, ConnID: "f2"}}); err != nil {
		t.Fatal(err)
	}
	fresh.registeredAgain()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d register calls for a fresh instance's first tick, want 1", n)
	}
	if strings.Contains(logs.String(), again) {
		t.Errorf("a fresh instance's first tick logged a registration again:\n%s", logs.String())
	}

	// Every stream closes, and the lease runs out while the instance holds
	// none; then one opens.
	for _, b := range beats {
		if _, err := tr.Disconnect(ctx, b.UID, b.ConnID); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.ZAdd(ctx, k.instances(), redis.Z{Score: 1, Member: tr.id}).Err(); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	mustConnect(t, tr, 1, "again")
	if n := calls.Load(); n != 1 {
		t.Errorf("%d register calls for a stream opening on an instance that held none, want 1", n)
	}
	if strings.Contains(logs.String(), again) {
		t.Errorf("opening a stream on an instance that held none logged a registration again:\n%s", logs.String())
	}

	// The lease is lost while the instance holds a connection.
	if err := rdb.ZRem(ctx, k.instances(), tr.id).Err(); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	if err := tr.Heartbeats(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tr.registeredAgain()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d register calls after a lost lease, want 1", n)
	}
	if !strings.Contains(logs.String(), again) {
		t.Errorf("a lost lease was not logged:\n%s", logs.String())
	}
}

// runs reports whether cmd runs script, by EVALSHA or EVAL.
func runs(cmd redis.Cmder, script *redis.Script) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	body, _ := args[1].(string)
	switch cmd.Name() {
	case "evalsha":
		return body == script.Hash()
	case "eval":
		return fmt.Sprintf("%x", sha1.Sum([]byte(body))) == script.Hash()
	}
	return false
}

// countRegister counts the register script's calls that ran.
type countRegister struct{ n *atomic.Int64 }

func (countRegister) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c countRegister) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && runs(cmd, registerScript) {
			c.n.Add(1)
		}
		return err
	}
}

func (countRegister) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A tick renews the lease before it retries the disconnects that failed:
// retries that take the whole call's time (a Redis slow after a storm of
// reconnects) do not let the lease run out, which would get the instance's
// own users swept.
func TestLeaseRenewedBeforeFailedDisconnectsAreRetried(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	stalling := &holdScript{script: disconnectScript}
	rdb.AddHook(stalling)
	e := env{rdb: rdb, prefix: prefix}
	tr := e.tracker(t, Options{})
	ctx := ctxT(t)
	k := e.keys()
	mustConnect(t, tr, 1, "a")
	mustConnect(t, tr, 2, "b")
	if err := tr.Heartbeats(ctx, nil); err != nil {
		t.Fatal(err)
	}
	stalling.on.Store(true)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := tr.Disconnect(short, 1, "a")
	cancel()
	if err == nil {
		t.Fatal("a disconnect that stalled past its deadline succeeded")
	}
	before := e.rdb.ZScore(ctx, k.instances(), tr.id).Val()
	time.Sleep(20 * time.Millisecond) // the lease renewed is later
	tick, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := tr.Heartbeats(tick, nil); err != nil {
		t.Fatalf("a tick whose disconnects stalled: %v", err)
	}
	if after := e.rdb.ZScore(ctx, k.instances(), tr.id).Val(); after <= before {
		t.Errorf("the lease ends at %v after the tick, %v before: not renewed", after, before)
	}
	tr.mu.Lock()
	left := len(tr.leaving)
	tr.mu.Unlock()
	if left != 1 {
		t.Errorf("%d disconnects left to retry, want the stalled one", left)
	}
}

// holdScript holds the calls of one script, while on, until release is
// closed (never when nil) or their context ends, which fails them.
type holdScript struct {
	script   *redis.Script
	on       atomic.Bool
	release  chan struct{}
	held     chan struct{} // closed once a call is held, when not nil
	heldOnce sync.Once
	expired  atomic.Bool // a held call ended with its context
}

func (h *holdScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.on.Load() || !runs(cmd, h.script) {
			return next(ctx, cmd)
		}
		if h.held != nil {
			h.heldOnce.Do(func() { close(h.held) })
		}
		select {
		case <-h.release:
			return next(ctx, cmd)
		case <-ctx.Done():
			h.expired.Store(true)
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
	}
}

func (h *holdScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A registration again whose answer is lost, though Redis ran it, after a
// connection of its list closed: the registration wrote that connection
// after its Disconnect, and the next ticks disconnect it again, as they
// do a failed disconnect. It never stays registered.
func TestConnectionClosedDuringAFailedRegistrationAgain(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	e := env{rdb: rdb, prefix: prefix}
	tr := e.tracker(t, Options{})
	ctx := ctxT(t)
	k := e.keys()
	const alice = 1
	mustConnect(t, tr, alice, "a")
	if err := e.rdb.Del(ctx, k.conns(alice), k.instances()).Err(); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	rdb.AddHook(lostRegister{armed: &armed, before: func() {
		if _, err := tr.Disconnect(ctx, alice, "a"); err != nil {
			t.Error(err)
		}
	}})
	if err := tr.Heartbeats(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tr.registeredAgain()
	if n := e.rdb.HLen(ctx, k.conns(alice)).Val(); n != 1 {
		t.Fatalf("alice's registry holds %d connections, want the one the lost registration wrote", n)
	}
	for range 2 { // the retries, and a tick with nothing left to do
		if err := tr.Heartbeats(ctx, nil); err != nil {
			t.Fatal(err)
		}
		tr.registeredAgain()
	}
	if n := e.rdb.HLen(ctx, k.conns(alice)).Val(); n != 0 {
		t.Errorf("alice's registry holds %d connections after hers closed", n)
	}
	if _, err := e.rdb.ZScore(ctx, k.connected(), itoa(alice)).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("alice is connected after her only connection closed (%v)", err)
	}
}

// lostRegister, once, runs before, then the register script's call, and
// answers an error as though its answer were lost.
type lostRegister struct {
	armed  *atomic.Bool
	before func()
}

func (lostRegister) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h lostRegister) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if len(cmd.Args()) > 1 && cmd.Args()[1] == registerScript.Hash() && h.armed.CompareAndSwap(true, false) {
			h.before()
			_ = next(ctx, cmd)
			err := errors.New("the register script's answer lost by the test")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (lostRegister) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// onNthRegister runs fn before the at-th call of the register script
// through the client it hooks, once armed.
type onNthRegister struct {
	n     atomic.Int64
	at    int64
	armed atomic.Bool
	fn    func()
}

func (h *onNthRegister) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *onNthRegister) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.Load() && runs(cmd, registerScript) && h.n.Add(1) == h.at {
			h.fn()
		}
		return next(ctx, cmd)
	}
}
func (h *onNthRegister) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A lease that runs out, and is swept, between two calls of a registration
// made again (more connections than one call takes) leaves the
// registration due: the next tick makes it again, and every connection is
// registered, every user connected and counted once.
func TestLeaseLostWhileRegisteringAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := env{rdb: redistest.ClientOf(t, redistest.URL(t)), prefix: e.prefix}
	ctx := ctxT(t)
	k := e.keys()
	hook := &onNthRegister{at: 2}
	e.rdb.AddHook(hook)
	tr := e.tracker(t, Options{CountsTTL: -1})
	sweeper := other.tracker(t, Options{CountsTTL: -1})
	mustConnect(t, sweeper, 99999, "keeps-the-copy")
	counts(t, sweeper) // the copy exists
	const users = MaxBeatsPerCall + 500
	var all []Beat
	for uid := int64(1); uid <= users; uid++ {
		all = append(all, Beat{UID: uid, ConnID: "c" + itoa(uid)})
	}
	if err := tr.Heartbeats(ctx, all); err != nil {
		t.Fatal(err)
	}
	// The lease runs out (a stall): the next tick registers all again, and
	// between its two calls the instance stalls past its lease again and
	// is swept.
	if err := e.rdb.ZAdd(ctx, k.instances(), redis.Z{Score: 1, Member: tr.id}).Err(); err != nil {
		t.Fatal(err)
	}
	hook.fn = func() {
		other.rdb.ZAdd(ctx, k.instances(), redis.Z{Score: 1, Member: tr.id})
		if _, err := sweeper.Sweep(ctx); err != nil {
			t.Error(err)
		}
	}
	hook.armed.Store(true)
	if err := tr.Heartbeats(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tr.registeredAgain()
	for range 2 {
		if err := tr.Heartbeats(ctx, all); err != nil {
			t.Fatal(err)
		}
		tr.registeredAgain()
	}
	connected := other.rdb.ZCard(ctx, k.connected()).Val() - 1 // the other instance's user
	registered := other.rdb.SCard(ctx, k.instanceConns(tr.id)).Val()
	if connected != users || registered != users {
		t.Errorf("%d users connected, %d connections registered; want %d each", connected, registered, users)
	}
	if c := counts(t, sweeper); c.Online != users+1 {
		t.Errorf("counts online %d, want %d", c.Online, users+1)
	}
	if online, _ := presenceOf(t, sweeper, 1); !online {
		t.Error("user 1, connected and registered, is offline")
	}
}

// replyLost runs the next call of script through the client it hooks, then
// fails it as a timeout whose command Redis ran would.
type replyLost struct {
	script *redis.Script
	armed  atomic.Bool
}

func (h *replyLost) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *replyLost) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if runs(cmd, h.script) && h.armed.CompareAndSwap(true, false) {
			_ = next(ctx, cmd)
			cmd.SetErr(context.DeadlineExceeded)
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (h *replyLost) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A last connection's Disconnect whose answer is lost after Redis ran it
// (the user out of connected, nobody told): the tick's retry finds the user
// with no live connection and tells the friends they are offline.
func TestDisconnectAnswerLostStillAnnouncesOffline(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		h := &replyLost{script: disconnectScript}
		e.rdb.AddHook(h)
		tr := e.tracker(t, Options{})
		const alice, bob = 1, 2
		e.befriend(t, alice, bob)
		mustConnect(t, tr, bob, "bob")
		events := e.subscribe(t, bob)
		mustConnect(t, tr, alice, "a")
		checkEvent(t, nextEvent(t, events, 10*time.Second), alice, true)
		h.armed.Store(true)
		if _, err := tr.Disconnect(ctxT(t), alice, "a"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the disconnect: %v, want its answer lost", err)
		}
		if err := tr.Heartbeats(ctxT(t), []Beat{{bob, "bob"}}); err != nil { // retries it
			t.Fatal(err)
		}
		if online, _ := presenceOf(t, tr, alice); online {
			t.Fatal("alice is online, with no connection")
		}
		checkEvent(t, nextEvent(t, events, 10*time.Second), alice, false)
	})
}

// A connection released as its instance drains counts no longer against
// its user's cap, and leaves the user online with no frame; a user who
// does not come back is taken out by the sweep of the instance once its
// lease runs out, and the friends are told then.
func TestReleasedConnectionLeftToTheSweep(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		ctx := ctxT(t)
		k := e.keys()
		draining := e.tracker(t, Options{CountsTTL: -1, MaxConnsPerUser: 1})
		sweeper := e.tracker(t, Options{CountsTTL: -1, MaxConnsPerUser: 1})
		const alice, bob = 1, 2
		e.befriend(t, alice, bob)
		mustConnect(t, sweeper, bob, "bob")
		events := e.subscribe(t, bob)
		mustConnect(t, draining, alice, "a")
		checkEvent(t, nextEvent(t, events, 10*time.Second), alice, true)
		if err := draining.Release(ctx, alice, "a"); err != nil {
			t.Fatal(err)
		}
		if online, _ := presenceOf(t, sweeper, alice); !online {
			t.Error("alice, released, is offline before her instance's lease ran out")
		}
		// Her place is free: a connection elsewhere is taken, not refused.
		if _, err := sweeper.Open(ctx, alice, "a2"); err != nil {
			t.Fatalf("alice's reconnection elsewhere: %v", err)
		}
		if _, err := sweeper.Disconnect(ctx, alice, "a2"); err != nil {
			t.Fatal(err)
		}
		checkEvent(t, nextEvent(t, events, 10*time.Second), alice, false)
		// Connected again, released again, and gone: the sweep tells bob.
		mustConnect(t, draining, alice, "a3")
		checkEvent(t, nextEvent(t, events, 10*time.Second), alice, true)
		if err := draining.Release(ctx, alice, "a3"); err != nil {
			t.Fatal(err)
		}
		if err := e.rdb.ZAdd(ctx, k.instances(), redis.Z{Score: 1, Member: draining.id}).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := sweeper.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("sweep = %d, %v; want alice taken out", n, err)
		}
		checkEvent(t, nextEvent(t, events, 10*time.Second), alice, false)
		if online, _ := presenceOf(t, sweeper, alice); online {
			t.Error("alice, released and swept, is online")
		}
	})
}

// A stream's registration whose answer is lost after Redis ran it (the
// user connected, nobody told) leaves the user's next stream counting them
// told already: the tick that retries the lost one's disconnect announces
// them online, since they still are.
func TestOpenAnswerLostStillAnnouncesOnline(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		h := &replyLost{script: registerScript}
		e.rdb.AddHook(h)
		tr := e.tracker(t, Options{})
		const alice, bob = 1, 2
		e.befriend(t, alice, bob)
		mustConnect(t, tr, bob, "bob")
		events := e.subscribe(t, bob)
		h.armed.Store(true)
		if _, err := tr.Open(ctxT(t), alice, "a1"); err == nil {
			t.Fatal("the first stream's registration did not fail")
		}
		if _, err := tr.Open(ctxT(t), alice, "a2"); err != nil { // the client tries again
			t.Fatal(err)
		}
		if err := tr.Heartbeats(ctxT(t), []Beat{{bob, "bob"}, {alice, "a2"}}); err != nil {
			t.Fatal(err)
		}
		if online, _ := presenceOf(t, tr, alice); !online {
			t.Fatal("alice, with a stream, is offline")
		}
		checkEvent(t, nextEvent(t, events, 10*time.Second), alice, true)
	})
}
