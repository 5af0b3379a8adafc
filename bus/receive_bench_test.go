package bus_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/bus"
	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// BenchmarkReceive is the bus's cost a message received on one Redis: a
// publisher sends b.N messages of a frame's size on one channel, in
// pipelines of 100, and the subscriber's Incoming hands them over; an op
// is one message received.
func BenchmarkReceive(b *testing.B) {
	rdb := redistest.ClientOf(b, redistest.URL(b))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var commands atomic.Int64
	sub := bus.New(rdb, redistest.Prefix()).Subscribe(ctx, &commands, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer sub.Close()
	const channel = "bench:receive"
	if err := sub.Subscribe(ctx, channel); err != nil {
		b.Fatal(err)
	}
	for m := range sub.Incoming() { // the confirmation
		if _, ok := m.(*redis.Subscription); ok {
			break
		}
	}
	frame := strings.Repeat("x", 300)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for sent := 0; sent < b.N; {
			pipe := rdb.Pipeline()
			for range min(100, b.N-sent) {
				pipe.Publish(ctx, channel, frame)
				sent++
			}
			if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
				b.Error(err)
				return
			}
		}
	}()
	timeout := time.After(time.Minute)
	for got := 0; got < b.N; {
		select {
		case m := <-sub.Incoming():
			if _, ok := m.(*redis.Message); ok {
				got++
			}
		case <-timeout:
			b.Fatalf("%d of %d messages received", got, b.N)
		}
	}
}
