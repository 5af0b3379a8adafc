package realtime

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"

	"github.com/coder/websocket"
)

// A client that stops reading is closed with 1013 once its queue
// overflows, and counted, while the other streams, its user's own among
// them, are sent every frame meanwhile and stay open.
func TestSlowClientClosed(t *testing.T) {
	t.Parallel()
	const queue, burst = 64, 16 // a burst fits the queue of a client that reads
	e := newEnv(t, envOptions{hub: Options{
		QueueSize: queue,
		// The write the slow client holds up still waits when it reads
		// again, so that the close frame reaches it.
		WriteTimeout: time.Minute,
	}})
	u, other := e.signUp("two_tabs"), e.signUp("other")
	ws, res, err := e.dial(u, nil) // read by nobody until it is closed
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, res)
	}
	reading, others := e.connect(u), e.connect(other)

	// Frames big enough to fill the socket's buffers soon, until the hub
	// gives up on the client.
	pad := strings.Repeat("x", 32<<10)
	published := 0
	testio.Eventually(t, time.Minute, func() string {
		if e.hub.Stats.SlowClosed.Load() > 0 {
			return ""
		}
		for range burst {
			published++
			e.publish(u, map[string]any{"type": "filler", "seq": published, "pad": pad})
		}
		return fmt.Sprintf("a stream that does not read is still open after %d frames", published)
	})

	code, frames := newStream(t, ws).closed(10 * time.Second)
	if code != websocket.StatusTryAgainLater {
		t.Fatalf("the slow stream closed with %v, want 1013", code)
	}
	if len(frames) == 0 || frames[0].Type != "ready" {
		t.Fatalf("the slow stream's frames begin %v, want ready", describe(frames[:min(1, len(frames))]))
	}
	for i, f := range frames[1:] {
		if f.Type != "filler" || f.Seq != i+1 {
			t.Fatalf("the slow stream's frame %d is %v %d, want filler %d: each in order, up to where it was closed", i+1, f, f.Seq, i+1)
		}
	}
	if n := e.hub.Stats.SlowClosed.Load(); n != 1 {
		t.Fatalf("SlowClosed = %d, want 1", n)
	}

	got := e.routed(u, reading)
	if len(got) != published {
		t.Fatalf("the stream that reads got %d frames, want the %d published", len(got), published)
	}
	for i, f := range got {
		if f.Type != "filler" || f.Seq != i+1 {
			t.Fatalf("the stream that reads got %v %d as frame %d, want filler %d", f, f.Seq, i, i+1)
		}
	}
	for _, s := range []struct {
		name string
		s    *stream
		u    user
	}{{"the user's other stream", reading, u}, {"another user's stream", others, other}} {
		st := e.post(s.u, "still live")
		if f := s.s.next(5 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
			t.Fatalf("%s got %v, want status %d", s.name, f, st.ID)
		}
	}
}

// A client that stops reading is closed once a frame's write runs past
// WriteTimeout, well before its queue could overflow.
func TestWriteTimeoutCloses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{hub: Options{
		QueueSize: 1 << 16, WriteTimeout: time.Second,
		HeartbeatInterval: time.Hour, // not closed as idle meanwhile
	}})
	u := e.signUp("stuck")
	if _, res, err := e.dial(u, nil); err != nil { // read by nobody
		t.Fatalf("dial: %v (%v)", err, res)
	}
	testio.Eventually(t, time.Minute, func() string {
		if e.hub.Stats.Open.Load() != 1 {
			return "the stream did not open"
		}
		return ""
	})
	pad := strings.Repeat("x", 32<<10)
	published := 0
	testio.Eventually(t, time.Minute, func() string {
		if e.hub.Stats.Open.Load() == 0 {
			return ""
		}
		for range 16 {
			published++
			e.publish(u, map[string]any{"type": "filler", "seq": published, "pad": pad})
		}
		return fmt.Sprintf("a stream that does not read is still open after %d frames", published)
	})
	if n := e.hub.Stats.SlowClosed.Load(); n != 0 {
		t.Fatalf("SlowClosed = %d, want 0: the write's deadline, not the queue, closes it", n)
	}
}
