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
	before := scriptCalls(t, rdb)
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
	testio.Eventually(t, 5*time.Second, func() string { // its presence is undone
		if n := e.hub.Stats.Open.Load(); n != 0 {
			return fmt.Sprintf("%d streams open", n)
		}
		return ""
	})
	// The disconnect script, and a heartbeat or two were the machine slow
	// enough for the flood to reach the next window.
	if n := scriptCalls(t, rdb) - before; n > 5 {
		t.Fatalf("Redis ran %d scripts for a flood of heartbeats, want a handful", n)
	}
	if n := e.hub.Stats.FloodClosed.Load(); n != 1 {
		t.Fatalf("FloodClosed = %d, want 1", n)
	}

	p := e.connect(pacer)
	recorded := e.hub.Stats.HeartbeatsRecorded.Load()
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
