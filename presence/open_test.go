package presence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// Open registers as Connect does and lists the friends online as
// OnlineFriends does, in its order, for a user with few friends (read one
// by one) and one with many (intersected).
func TestOpenIsConnectThenOnlineFriends(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{MaxConnsPerUser: 2})
		const few, many = 1, 2
		for f := int64(10); f < 10+smallFriendSet+20; f++ {
			if f < 15 {
				e.befriend(t, few, f)
			}
			e.befriend(t, many, f)
			if f%3 == 0 {
				mustConnect(t, tr, f, fmt.Sprintf("c%d", f))
			}
		}
		for _, uid := range []int64{few, many} {
			o, err := tr.Open(ctxT(t), uid, "first")
			if err != nil {
				t.Fatalf("open %d: %v", uid, err)
			}
			if !o.First || o.Seen.IsZero() {
				t.Errorf("user %d: first %v, seen %v; want first, seen now", uid, o.First, o.Seen)
			}
			if got, want := uids(o.Friends), onlineFriends(t, tr, uid); !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("user %d: Open's friends %v, OnlineFriends %v", uid, got, want)
			}
			if online, _ := presenceOf(t, tr, uid); !online {
				t.Errorf("user %d not online after Open", uid)
			}
			if o, err := tr.Open(ctxT(t), uid, "second"); err != nil || o.First {
				t.Errorf("user %d's second open: first %v, %v; want not first", uid, o.First, err)
			}
			if _, err := tr.Open(ctxT(t), uid, "third"); !errors.Is(err, ErrTooManyConnections) {
				t.Errorf("user %d's third open: %v, want ErrTooManyConnections", uid, err)
			}
		}
	})
}

// One friends_many.lua call reads the friends of many users together, in
// ZMSCORE chunks: 50 users with 120 friends each, a quarter shared with the
// next user, more friends than one chunk holds, are listed as OnlineFriends
// lists each one's.
func TestOnlineFriendsOfManyUsersTogether(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		const users, each = 50, 120
		ctx := ctxT(t)
		pipe := e.rdb.Pipeline()
		now := float64(time.Now().UnixMilli())
		var batch []int64
		var online []Beat
		friends := map[int64]bool{}
		for u := range int64(users) {
			uid := 1 + u
			batch = append(batch, uid)
			for j := range int64(each) {
				f := 1000 + u*each*3/4 + j // the last quarter is the next user's first
				pipe.ZAdd(ctx, e.friendsKey(uid), redis.Z{Score: now, Member: itoa(f)})
				if !friends[f] && f%3 != 0 {
					online = append(online, Beat{UID: f, ConnID: "c"})
				}
				friends[f] = true
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if len(friends) <= 4000 {
			t.Fatalf("%d friends in all; want more than one ZMSCORE chunk", len(friends))
		}
		if _, err := tr.register(ctx, online, 0); err != nil {
			t.Fatal(err)
		}
		got, err := tr.onlineFriendsOf(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, uid := range batch {
			want := onlineFriends(t, tr, uid)
			if g := uids(got[uid]); !slices.Equal(g, want) || len(want) == 0 {
				t.Errorf("user %d: %d friends online together, %d alone; want the same", uid, len(g), len(want))
			}
		}
	})
}

// The online friends of many users are read in calls whose users' friend
// sets hold friendsReadPerCall friends together at most, or one user alone
// who has more: users with large sets, a reconnect storm of them, never
// hold Redis for long in one call. Each still gets what OnlineFriends
// lists alone.
func TestOnlineFriendsOfManyUsersBoundedByTheirFriends(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		calls := &scriptReplies{script: friendsManyScript}
		e.rdb.AddHook(calls)
		tr := e.tracker(t, Options{})
		k := e.keys()
		ctx := ctxT(t)
		const pool = 30_000 // the friends' ids, 1 to pool
		now := e.now(t)
		var planted []redis.Z
		for f := int64(1); f <= pool; f++ {
			if f%3 != 0 {
				planted = append(planted, redisZ(now.Add(-time.Duration(f%5000)*time.Millisecond), f))
			}
		}
		for _, key := range []string{k.lastSeen(), k.connected(), k.onlineCopy()} {
			if err := e.rdb.ZAdd(ctx, key, planted...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// Small sets, then large ones between them, and one over the
		// bound alone.
		sizes := []int{10, 10, 5_000, 10, 5_000, 5_000, friendsReadPerCall + 5_000, 5_000, 10,
			5_000, 5_000, 5_000, 5_000, 10, 10}
		friendsOf := map[string]int{}
		var batch []int64
		for i, size := range sizes {
			uid := int64(pool + 1 + i)
			batch = append(batch, uid)
			friendsOf[e.friendsKey(uid)] = size
			set := make([]redis.Z, size)
			for j := range size {
				set[j] = redis.Z{Score: 1, Member: itoa(int64((i*7919+j*31)%pool + 1))}
			}
			if err := e.rdb.ZAdd(ctx, e.friendsKey(uid), set...).Err(); err != nil {
				t.Fatal(err)
			}
		}

		got, err := tr.onlineFriendsOf(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		answered := 0
		for _, c := range calls.all() {
			// The reply starts with how many of the sets, KEYS[5..], it
			// answered.
			reply, _ := c.reply.([]any)
			n, _ := reply[0].(int64)
			sum := 0
			for _, key := range c.keys[4 : 4+n] {
				sum += friendsOf[key]
			}
			if sum > friendsReadPerCall && n > 1 {
				t.Errorf("one call read %d users of %d friends together, over %d", n, sum, friendsReadPerCall)
			}
			answered += int(n)
		}
		if answered != len(batch) {
			t.Errorf("%d users answered in %d calls, want %d", answered, len(calls.all()), len(batch))
		}
		for _, uid := range batch {
			want := onlineFriends(t, tr, uid)
			if g := uids(got[uid]); !slices.Equal(g, want) || len(want) == 0 {
				t.Errorf("user %d: %d friends online together, %d alone; want the same", uid, len(g), len(want))
			}
		}
	})
}

// Opens that come while a batch is written go together in the next: a
// hundred streams opening at once cost four script calls, not two hundred.
// The test's own Redis is paused while they queue behind the first.
func TestOpensAtOnceShareTheirScriptCalls(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.ClientOf(t, srv.URL)
	scripts := &scriptCounter{}
	rdb.AddHook(scripts)
	e := env{rdb: rdb, prefix: redistest.Prefix()}
	tr := e.tracker(t, Options{})
	const opens = 100
	for uid := int64(1); uid <= opens; uid++ {
		e.befriend(t, uid, uid+1000)
	}
	mustConnect(t, tr, 1001, "friend") // loads the register script

	scripts.calls.Store(0)
	srv.Pause(t)
	var wg sync.WaitGroup
	errs := make(chan error, opens)
	open := func(uid int64) {
		wg.Go(func() {
			o, err := tr.Open(context.Background(), uid, "c")
			if err == nil && uid == 1 && (len(o.Friends) != 1 || o.Friends[0].UID != 1001) {
				err = fmt.Errorf("user 1's friends online: %v, want 1001", o.Friends)
			}
			errs <- err
		})
	}
	// The first open's batch is under way, its register call sent to the
	// paused Redis, before the others come: they wait together for the next.
	open(1)
	waitFor(t, time.Minute, "the first open's register call", func() bool { return scripts.calls.Load() == 1 })
	for uid := int64(2); uid <= opens; uid++ {
		open(uid)
	}
	waitFor(t, time.Minute, "the opens to queue behind the first", func() bool {
		return tr.opens.Waiting() == opens-1
	})
	srv.Resume()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Two batches, each a register and a friends call.
	if n := scripts.calls.Load(); n != 4 {
		t.Fatalf("%d register and friends calls for %d opens at once, want 4", n, opens)
	}
	if n := e.rdb.ZCard(ctxT(t), e.keys().connected()).Val(); n != opens+1 {
		t.Fatalf("%d users connected, want %d", n, opens+1)
	}
}

// scriptCounter counts the calls of the register and friends scripts a
// client makes (as EVALSHA; a server that does not know one is then sent it
// whole, which is not counted again).
type scriptCounter struct{ calls atomic.Int64 }

func (s *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); strings.ToLower(cmd.Name()) == "evalsha" && len(args) > 1 &&
			(args[1] == registerScript.Hash() || args[1] == friendsManyScript.Hash()) {
			s.calls.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (s *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// An Open that fails leaves nothing of its connection registered, nor held
// by the instance: when the friends cannot be read, the registration is
// undone at once; when the register call fails after it ran (a timeout on
// the way back), at the next tick.
func TestFailedOpenLeavesNothingRegistered(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	fail := &failScript{}
	rdb.AddHook(fail)
	e := env{rdb: rdb, prefix: prefix}
	tr := e.tracker(t, Options{})
	ctx := ctxT(t)
	k := e.keys()
	const alice, bob = 1, 2
	e.befriend(t, alice, bob)
	mustConnect(t, tr, bob, "bob")

	gone := func(uid int64) string {
		if n := e.rdb.HLen(ctx, k.conns(uid)).Val(); n != 0 {
			return fmt.Sprintf("user %d's registry holds %d connections", uid, n)
		}
		if online, _ := presenceOf(t, tr, uid); online {
			return fmt.Sprintf("user %d is online", uid)
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for c := range tr.held {
			if c.UID == uid {
				return fmt.Sprintf("the instance holds user %d's connection %s", uid, c.ConnID)
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name   string
		script *redis.Script
		tick   bool // undone at the next tick, not at once
	}{
		{"friends read failed", friendsManyScript, false},
		{"register answer lost", registerScript, true},
	} {
		fail.set(tc.script)
		_, err := tr.Open(ctx, alice, "alice "+tc.name)
		fail.set(nil)
		if err == nil {
			t.Fatalf("%s: Open succeeded", tc.name)
		}
		if tc.tick {
			if n := e.rdb.HLen(ctx, k.conns(alice)).Val(); n != 1 {
				t.Fatalf("%s: alice's registry holds %d connections, want the one the failed call wrote", tc.name, n)
			}
			if err := tr.Heartbeats(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		if why := gone(alice); why != "" {
			t.Errorf("%s: %s", tc.name, why)
		}
		tr.mu.Lock()
		leaving := len(tr.leaving)
		tr.mu.Unlock()
		if leaving != 0 {
			t.Errorf("%s: %d disconnects left to retry", tc.name, leaving)
		}
	}
	// Bob stays as he was, and alice opens once Redis answers.
	if online, _ := presenceOf(t, tr, bob); !online {
		t.Error("bob went offline")
	}
	if o, err := tr.Open(ctx, alice, "alice"); err != nil || !o.First || len(o.Friends) != 1 {
		t.Errorf("alice's open after the failures: %+v, %v; want first, with bob", o, err)
	}
}

// When an Open finds the instance's lease lost, its own connection is
// registered, and the instance's others are registered again at the next
// tick.
func TestOpenAfterLostLeaseRegistersTheOthersAtTheNextTick(t *testing.T) {
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		ctx := ctxT(t)
		k := e.keys()
		const alice, bob = 1, 2
		mustConnect(t, tr, alice, "a")
		// A sweep took alice's connection out, and the lease with it.
		if err := e.rdb.Del(ctx, k.conns(alice), k.instances(), k.instanceConns(tr.id)).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Open(ctx, bob, "b"); err != nil {
			t.Fatal(err)
		}
		if err := tr.Heartbeats(ctx, nil); err != nil {
			t.Fatal(err)
		}
		tr.registeredAgain()
		for uid, conn := range map[int64]string{alice: "a", bob: "b"} {
			if id, err := e.rdb.HGet(ctx, k.conns(uid), conn).Result(); err != nil || id != tr.id {
				t.Errorf("user %d's connection is held by %q (%v), want the instance %q", uid, id, err, tr.id)
			}
		}
		if n := tr.again.Load(); n != 0 {
			t.Errorf("registering again still due (%d) after the tick", n)
		}
	})
}

// failScript fails the calls of one script, after they ran, while it is
// set: as a reply lost on the way back.
type failScript struct {
	mu     sync.Mutex
	script *redis.Script
}

func (f *failScript) set(s *redis.Script) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = s
}

func (f *failScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		f.mu.Lock()
		s := f.script
		f.mu.Unlock()
		if s != nil && runs(cmd, s) && err == nil {
			err = errors.New("reply lost by the test")
			cmd.SetErr(err)
		}
		return err
	}
}

func (f *failScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
