package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/slots"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// newService returns a Service on the test backend: one Redis, or the shared
// cluster when redistest.BackendEnv says so.
func newService(tb testing.TB, opts Options) (*Service, redis.UniversalClient) {
	tb.Helper()
	rdb, prefix := redistest.Backend(tb)
	opts.Prefix = prefix
	opts.BcryptCost = 4 // the minimum: tests sign up many users
	if opts.HashWait == 0 {
		// Tests sign up users from many goroutines at once, on machines
		// that may be far busier than any server: none waits out the wait.
		opts.HashWait = time.Minute
	}
	return New(rdb, opts), rdb
}

// ctxT is a context for a test's calls, ending with the test. Its deadline
// only stops a test that hangs: some tests make thousands of calls under
// one, on machines far busier than any server.
func ctxT(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

func signUp(tb testing.TB, s *Service, login string) User {
	tb.Helper()
	u, _, err := s.SignUp(ctxT(tb), login, "Name of "+login, "password-"+login)
	if err != nil {
		tb.Fatalf("sign up %s: %v", login, err)
	}
	return u
}

func follow(tb testing.TB, s *Service, uid int64, login string) {
	tb.Helper()
	if _, _, err := s.Follow(ctxT(tb), uid, login); err != nil {
		tb.Fatalf("%d follows %s: %v", uid, login, err)
	}
}

// followersOf signs up n users, f00 to f(n-1), who follow login, in order.
func followersOf(tb testing.TB, s *Service, login string, n int) []User {
	tb.Helper()
	followers := make([]User, n)
	for i := range followers {
		followers[i] = signUp(tb, s, fmt.Sprintf("f%02d", i))
		follow(tb, s, followers[i].ID, login)
	}
	return followers
}

func post(tb testing.TB, s *Service, uid int64, message string) Status {
	tb.Helper()
	st, err := s.Post(ctxT(tb), uid, message)
	if err != nil {
		tb.Fatalf("post by %d: %v", uid, err)
	}
	return st
}

// zsetIDs returns the status ids in the timeline at key, oldest first, as
// Redis holds them (deleted statuses not yet cleaned out included).
func zsetIDs(tb testing.TB, s *Service, key string) []int64 {
	tb.Helper()
	members, err := s.rdb.ZRange(ctxT(tb), key, 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return parseIDs(members)
}

func statusIDs(sts []Status) []int64 {
	ids := make([]int64, len(sts))
	for i, st := range sts {
		ids[i] = st.ID
	}
	return ids
}

// newestOf returns the n highest of ids, oldest first.
func newestOf(n int, ids ...[]int64) []int64 {
	all := slices.Concat(ids...)
	slices.Sort(all)
	return all[max(0, len(all)-n):]
}

func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// jobsLeft is how many fan-out jobs are queued or under way: those in the
// job stream, and those being made with no entry yet.
func jobsLeft(tb testing.TB, ctx context.Context, rdb redis.UniversalClient, k keys) int64 {
	tb.Helper()
	pipe := rdb.Pipeline()
	n, making := pipe.XLen(ctx, k.jobs()), pipe.ZCard(ctx, k.making())
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("jobs left: %v", err)
	}
	return n.Val() + making.Val()
}

// startWorker runs a fan-out worker until the test ends.
func startWorker(tb testing.TB, s *Service, consumer string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.NewWorker(consumer, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
}

// listener is a test's subscription to some channels. On a cluster it
// holds one sharded subscription per slot, since one SSUBSCRIBE may not
// span slots; each has a marker channel in its slot.
type listener struct {
	rdb     redis.UniversalClient
	sharded bool
	subs    []*redis.PubSub
	mark    []string // marker channel of each of subs
}

// listen subscribes to channels and returns once Redis has confirmed every
// subscription; the subscription ends with the test.
func listen(tb testing.TB, s *Service, rdb redis.UniversalClient, channels ...string) *listener {
	tb.Helper()
	ctx := ctxT(tb)
	l := &listener{rdb: rdb, sharded: s.keys.cluster}
	groups := map[int][]string{}
	if s.keys.cluster {
		for _, ch := range channels {
			groups[slots.Of(ch)] = append(groups[slots.Of(ch)], ch)
		}
	} else {
		groups[0] = channels
	}
	for _, slot := range slices.Sorted(maps.Keys(groups)) {
		group := groups[slot]
		var sub *redis.PubSub
		if s.keys.cluster {
			// The marker takes the hash tag of its group's first channel.
			tag := group[0][strings.Index(group[0], "{"):]
			group = append(group, s.keys.prefix+"test:marker:"+tag)
			sub = rdb.SSubscribe(ctx, group...)
		} else {
			group = append(group, s.keys.prefix+"test:marker")
			sub = rdb.Subscribe(ctx, group...)
		}
		tb.Cleanup(func() { sub.Close() })
		for range group {
			msg, err := sub.Receive(ctx)
			if err != nil {
				tb.Fatal(err)
			}
			if _, ok := msg.(*redis.Subscription); !ok {
				tb.Fatalf("waiting for subscriptions, got %T", msg)
			}
		}
		l.subs = append(l.subs, sub)
		l.mark = append(l.mark, group[len(group)-1])
	}
	return l
}

// event is a frame published on a user's channel, as far as the tests
// read it: a status, the id of a deleted one, the author of a pull added
// or removed, or a new follower.
type event struct {
	Type      string            `json:"type"`
	Status    *protocol.Status  `json:"status"`
	ID        int64             `json:"id"`
	ReplyTo   int64             `json:"reply_to"` // status_deleted's, global_status_deleted's, thread_status_deleted's
	Thread    int64             `json:"thread"`   // thread_status's, thread_status_deleted's
	Author    int64             `json:"author"`
	User      *protocol.UserRef `json:"user"`
	YouFollow *bool             `json:"you_follow"`
	Session   string            `json:"session"`
}

// payloadsSoFar returns, by channel, the messages published on l's
// channels since the last call. It publishes a marker and reads up to it:
// Redis delivers one subscriber what it publishes in the order it
// publishes it.
func payloadsSoFar(tb testing.TB, l *listener) map[string][]string {
	tb.Helper()
	ctx := ctxT(tb)
	out := map[string][]string{}
	for i, sub := range l.subs {
		var err error
		if l.sharded {
			err = l.rdb.SPublish(ctx, l.mark[i], "marker").Err()
		} else {
			err = l.rdb.Publish(ctx, l.mark[i], "marker").Err()
		}
		if err != nil {
			tb.Fatal(err)
		}
		for {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				tb.Fatal(err)
			}
			if msg.Channel == l.mark[i] {
				break
			}
			out[msg.Channel] = append(out[msg.Channel], msg.Payload)
		}
	}
	return out
}

// eventsSoFar returns, by channel, the events published on l's channels
// since the last call (payloadsSoFar).
func eventsSoFar(tb testing.TB, l *listener) map[string][]event {
	tb.Helper()
	events := map[string][]event{}
	for channel, payloads := range payloadsSoFar(tb, l) {
		for _, p := range payloads {
			var ev event
			if err := json.Unmarshal([]byte(p), &ev); err != nil {
				tb.Fatalf("event on %s: %v: %s", channel, err, p)
			}
			events[channel] = append(events[channel], ev)
		}
	}
	return events
}

// eventsUntil gathers the events published on l's channels, by channel,
// until done says they are all there or timeout passes, and returns them
// (the caller checks what it got).
func eventsUntil(tb testing.TB, l *listener, timeout time.Duration, done func(map[string][]event) bool) map[string][]event {
	tb.Helper()
	all := map[string][]event{}
	deadline := time.Now().Add(timeout)
	for {
		for ch, evs := range eventsSoFar(tb, l) {
			all[ch] = append(all[ch], evs...)
		}
		if done(all) || time.Now().After(deadline) {
			return all
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventIDs returns the status ids events carry, for messages.
func eventIDs(events []event) []int64 {
	ids := make([]int64, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
		if ev.Status != nil {
			ids[i] = ev.Status.ID
		}
	}
	return ids
}

// ofType returns the events of type typ.
func ofType(events []event, typ string) []event {
	var out []event
	for _, ev := range events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func TestSignUpUniqueUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, taken := 0, 0
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			login := "Racer"
			if i%2 == 1 {
				login = "racer"
			}
			_, _, err := s.SignUp(ctx, login, "R", "kettle-drum-41")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrLoginTaken):
				taken++
			default:
				t.Errorf("sign up: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || taken != 39 {
		t.Fatalf("wins=%d taken=%d, want 1 and 39", wins, taken)
	}
	// The losers that got as far as a user hash took it back.
	var users []string
	for _, key := range scanKeys(t, s, rdb) {
		if strings.HasPrefix(key, s.keys.userPrefix()) && key != s.keys.userSeq() {
			users = append(users, key)
		}
	}
	won, err := s.UID(ctx, "RACER")
	if err != nil || !slices.Equal(users, []string{s.keys.user(won)}) {
		t.Fatalf("user hashes after the race: %v, want only the winner's (%d, %v)", users, won, err)
	}
}

func TestFanoutWorkerTakesOverDeadWorker(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 10, JobClaimIdle: 200 * time.Millisecond})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	const n = 55
	followers := followersOf(t, s, "author", n)
	channels := make([]string, n)
	for i, f := range followers {
		channels[i] = s.UserChannel(f.ID)
	}
	l := listen(t, s, rdb, channels...)

	st, err := s.Post(ctx, author.ID, "hello followers")
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))

	// Worker A dies after two passes of its own, leaving the job pending.
	ctxA, killA := context.WithCancel(ctx)
	a := s.NewWorker("a", discard)
	passes := 0
	a.afterPass = func() {
		passes++
		if passes == 2 {
			killA()
		}
	}
	a.Run(ctxA)
	if passes != 2 {
		t.Fatalf("worker A ran %d passes, want 2", passes)
	}
	reached := 0
	for _, f := range followers {
		if _, err := rdb.ZScore(ctx, s.keys.home(f.ID), itoa(st.ID)).Result(); err == nil {
			reached++
		}
	}
	if reached != 30 {
		t.Fatalf("after the inline pass and two of A's, %d followers have it, want 30", reached)
	}

	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	go s.NewWorker("b", discard).Run(ctxB)

	got := eventsUntil(t, l, 10*time.Second, func(got map[string][]event) bool { return len(got) == n })
	if len(got) != n {
		t.Fatalf("only %d of %d followers got the status", len(got), n)
	}
	// Anything published twice would arrive right behind the first copy.
	time.Sleep(300 * time.Millisecond)
	for ch, evs := range eventsSoFar(t, l) {
		got[ch] = append(got[ch], evs...)
	}
	for ch, evs := range got {
		if ids := eventIDs(evs); !slices.Equal(ids, []int64{st.ID}) {
			t.Fatalf("%s was told %v, want the status once", ch, ids)
		}
	}
	for _, f := range followers {
		page, err := s.HomeTimeline(ctx, f.ID, Cursor{Limit: 30})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Statuses) != 1 || page.Statuses[0].ID != st.ID {
			t.Fatalf("home of %s = %+v, want the one status", f.Login, page.Statuses)
		}
	}
	if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
		t.Fatalf("job stream holds %d entries after the job, want 0", n)
	}
}

// A session used within its lifetime lives on; one left unused ends.
func TestSessionsSlide(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{SessionTTL: 2 * time.Second})
	ctx := ctxT(t)
	_, used, err := s.SignUp(ctx, "slider", "S", "kettle-drum-41")
	if err != nil {
		t.Fatal(err)
	}
	_, unused, err := s.SignIn(ctx, "slider", "kettle-drum-41", "")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		time.Sleep(1200 * time.Millisecond)
		if _, err := s.Authenticate(ctx, used); err != nil {
			t.Fatalf("a session in use ended: %v", err)
		}
	}
	if _, err := s.Authenticate(ctx, unused); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a session unused for 2.4 s of a 2 s lifetime: %v, want ErrUnauthenticated", err)
	}
}
