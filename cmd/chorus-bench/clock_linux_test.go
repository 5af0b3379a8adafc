//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"
)

// monotonic reads CLOCK_MONOTONIC for the tests, apart from monoNow.
func monotonic(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

// The moments latencies are taken from are read on CLOCK_MONOTONIC, which
// a step of the wall clock leaves alone: a post's send and answer, a
// stream's ready frame and a status frame's receipt all fall between two
// readings of that clock taken around them.
func TestTimesOnMonotonicClock(t *testing.T) {
	t.Parallel()
	const runID = "clk1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"type":"ready","heartbeat_interval_ms":60000}`))
		frame := fmt.Sprintf(`{"type":"status","status":{"id":7,"message":%q}}`, marker(runID, 0))
		_ = ws.Write(ctx, websocket.MessageText, []byte(frame))
		_, _, _ = ws.Read(ctx) // until the tool closes
	}))
	defer srv.Close()

	lo := monotonic(t)
	var mu sync.Mutex
	var got []message
	stop := make(chan struct{})
	done := make(chan struct{})
	spec := connSpec{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Token: "x"}
	opts := shardOptions{RunID: runID, DialConcurrency: 1, DialTimeout: 10 * time.Second, Lifetime: time.Minute}
	go func() {
		defer close(done)
		runShard(context.Background(), []connSpec{spec}, opts, stop, func(m message) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, m)
		})
	}()
	deadline := time.Now().Add(30 * time.Second)
	var ready, frame int64
	for (ready == 0 || frame == 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		for _, m := range got {
			for _, e := range m.Ready {
				ready = e.At
			}
			for _, d := range m.Frames {
				frame = d.At
			}
		}
		mu.Unlock()
	}
	close(stop)
	<-done
	hi := monotonic(t)
	if ready < lo || ready > hi || frame < lo || frame > hi {
		t.Errorf("ready at %d, frame at %d; want both within CLOCK_MONOTONIC's [%d, %d]", ready, frame, lo, hi)
	}

	cfg := &config{Rate: 100, Duration: 50 * time.Millisecond, Authors: 1, MaxInFlight: 4}
	lo = monotonic(t)
	recs, _ := runPosts(context.Background(), cfg, 1, func(context.Context, int, int) (int64, error) { return 1, nil },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	hi = monotonic(t)
	for k, r := range recs {
		if r.Sent < lo || r.Answered < r.Sent || r.Answered > hi {
			t.Errorf("post %d sent at %d, answered at %d; want within CLOCK_MONOTONIC's [%d, %d]", k, r.Sent, r.Answered, lo, hi)
		}
	}
}
