package social

import (
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
