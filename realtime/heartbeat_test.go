package realtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"

	"github.com/coder/websocket"
)

func TestHeartbeatWindow(t *testing.T) {
	const i = 10 * time.Second
	cases := []struct {
		elapsed time.Duration
		want    int64
	}{
		{0, 0},
		{4 * time.Second, 0},  // early: still the window of the connect
		{5 * time.Second, 1},  // half an interval in
		{9 * time.Second, 1},  // a timer running early
		{14 * time.Second, 1}, // a timer running late
		{15 * time.Second, 2},
		{21 * time.Second, 2},
		{100 * time.Second, 10},
	}
	for _, tc := range cases {
		if got := heartbeatWindow(tc.elapsed, i); got != tc.want {
			t.Errorf("heartbeatWindow(%s, %s) = %d, want %d", tc.elapsed, i, got, tc.want)
		}
	}
}

// A flood of heartbeats costs Redis next to nothing, and the stream sending
// it is closed with 1008; one beating at the pace it was told stays open.
func TestHeartbeatFlood(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	interval := 200 * time.Millisecond
	e := newEnv(t, envOptions{rdb: rdb, hub: Options{HeartbeatInterval: interval, FrameRate: 10}})
	flooder, pacer := e.signUp("flooder"), e.signUp("pacer")

	s := e.connect(flooder)
	recorded, flushes, start := e.hub.Stats.HeartbeatsRecorded.Load(), e.hub.Stats.BeatFlushes.Load(), time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for range 2000 {
		if err := s.ws.Write(ctx, websocket.MessageText, []byte(`{"type":"heartbeat"}`)); err != nil {
			break // closed under us
		}
	}
	if code, _ := s.closed(5 * time.Second); code != websocket.StatusPolicyViolation {
		t.Fatalf("flooding stream closed with %v, want 1008", code)
	}
	// Heartbeat windows start half an interval off the connect, so a flood
	// straddles one more window than it lasts intervals.
	windows := int64(time.Since(start)/interval) + 2
	testio.Eventually(t, 5*time.Second, func() string { // its presence is undone
		if n := e.hub.Stats.Open.Load(); n != 0 {
			return fmt.Sprintf("%d streams open", n)
		}
		return ""
	})
	// One heartbeat at most per window the flood lasted reaches Redis, in
	// one script call at most: the rest is dropped before Redis. (The hub's
	// lease renewal, one script per flush tick with beats or without, is no
	// cost of the flood's.) A slow machine stretches the flood over a few
	// windows, never more than that.
	if n := e.hub.Stats.HeartbeatsRecorded.Load() - recorded; n > windows {
		t.Fatalf("%d heartbeats of a flood over %d windows recorded, want at most %d", n, windows, windows)
	}
	if n := e.hub.Stats.BeatFlushes.Load() - flushes; n > windows {
		t.Fatalf("%d script calls wrote the beats of a flood over %d windows, want at most %d", n, windows, windows)
	}
	if n := e.hub.Stats.FloodClosed.Load(); n != 1 {
		t.Fatalf("FloodClosed = %d, want 1", n)
	}

	p := e.connect(pacer)
	recorded = e.hub.Stats.HeartbeatsRecorded.Load()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range 6 {
		<-tick.C
		p.send(map[string]string{"type": "heartbeat"})
	}
	p.ping()
	p.until("unknown_type", 5*time.Second)
	if !p.isOpen() {
		t.Fatalf("a stream beating at its pace was closed: %v", p.closeErr)
	}
	if n := e.hub.Stats.HeartbeatsRecorded.Load() - recorded; n == 0 {
		t.Fatal("no heartbeat at the pace asked for was recorded")
	}
	if n := e.hub.Stats.FloodClosed.Load(); n != 1 {
		t.Fatalf("FloodClosed = %d, want 1", n)
	}
}
