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
