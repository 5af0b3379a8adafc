package social

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A worker removes the consumers of dead instances, those idle past
// ConsumerIdle with nothing pending, and keeps the others and itself; it
// does so at most once a minute.
func TestWorkerRemovesDeadConsumers(t *testing.T) {
	t.Parallel()
	const idle = 50 * time.Millisecond
	s, rdb := newService(t, Options{ConsumerIdle: idle, JobClaimIdle: time.Hour})
	ctx := ctxT(t)
	stream := s.keys.jobs()
	if err := rdb.XGroupCreateMkStream(ctx, stream, jobGroup, "$").Err(); err != nil {
		t.Fatal(err)
	}
	// "dead" read nothing; "holding" read a job it never finished; "me" is
	// the worker's own name.
	for _, c := range []string{"dead", "me"} {
		if err := rdb.XGroupCreateConsumer(ctx, stream, jobGroup, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"job", s.keys.job("refill:1")}})
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: jobGroup, Consumer: "holding", Streams: []string{stream, ">"}, Count: 1,
	}).Err(); err != nil {
		t.Fatal(err)
	}
	consumers := func() []string {
		t.Helper()
		cs, err := rdb.XInfoConsumers(ctx, stream, jobGroup).Result()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		slices.Sort(names)
		return names
	}
	time.Sleep(2 * idle) // all three are idle longer than ConsumerIdle

	w := s.NewWorker("me", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.reapConsumers(ctx)
	if got, want := consumers(), []string{"holding", "me"}; !slices.Equal(got, want) {
		t.Fatalf("consumers after removing the dead = %v, want %v", got, want)
	}

	// Another dead one, within the minute: left for the next round.
	rdb.XGroupCreateConsumer(ctx, stream, jobGroup, "dead-later")
	time.Sleep(2 * idle)
	w.reapConsumers(ctx)
	if got, want := consumers(), []string{"dead-later", "holding", "me"}; !slices.Equal(got, want) {
		t.Fatalf("consumers after a second round within a minute = %v, want %v", got, want)
	}
	w.lastReap = w.lastReap.Add(-consumerReapEvery)
	w.reapConsumers(ctx)
	if got, want := consumers(), []string{"holding", "me"}; !slices.Equal(got, want) {
		t.Fatalf("consumers a minute later = %v, want %v", got, want)
	}
}

// A worker whose job stream and group were deleted under it makes them
// again and goes on with the jobs that come after.
func TestWorkerRecreatesItsGroup(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	var followers []User
	for i := range 5 {
		f := signUp(t, s, fmt.Sprintf("fan%d", i))
		if _, _, err := s.Follow(ctx, f.ID, author.Login); err != nil {
			t.Fatal(err)
		}
		followers = append(followers, f)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.NewWorker("w", slog.New(slog.NewTextHandler(io.Discard, nil))).Run(wctx)
	reachedAll := func(id int64) func() bool {
		return func() bool {
			for _, f := range followers {
				if rdb.ZScore(ctx, s.keys.home(f.ID), itoa(id)).Err() != nil {
					return false
				}
			}
			return true
		}
	}
	first, err := s.Post(ctx, author.ID, "before")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, reachedAll(first.ID))

	if err := rdb.Del(ctx, s.keys.jobs()).Err(); err != nil {
		t.Fatal(err)
	}
	second, err := s.Post(ctx, author.ID, "after the stream was deleted")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, reachedAll(second.ID))
}
