//go:build linux

package realtime

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/testio"

	"github.com/coder/websocket"
)

// An idle WebSocket holds no goroutine reading it: the instance's poller
// waits for its socket, and a reader runs only while the client's bytes are
// read. Frames, the server's pings and their pongs, a close from either side
// all come through as before.
func TestIdleStreamsHoldNoReader(t *testing.T) {
	t.Parallel()
	const interval = 300 * time.Millisecond
	e := newEnv(t, envOptions{hub: Options{HeartbeatInterval: interval}})
	st := &e.hub.Stats
	const streams = 20
	users := make([]user, streams)
	conns := make([]*stream, streams)
	for i := range users {
		users[i] = e.signUp(fmt.Sprintf("idle%d", i))
		conns[i] = e.connect(users[i])
	}
	idle := func() string {
		if n, open := st.Readers.Load(), st.Open.Load(); n != 0 || open != streams {
			return fmt.Sprintf("%d readers for %d streams open, want none for %d", n, open, streams)
		}
		return ""
	}
	testio.Eventually(t, 30*time.Second, idle)

	// Each stream's frames are read and answered, in order.
	for _, s := range conns {
		s.send(map[string]string{"type": "heartbeat"})
		s.ping()
	}
	for i, s := range conns {
		if got := s.until("unknown_type", 10*time.Second); len(got) != 0 {
			t.Errorf("stream %d got %v before the answer to its ping", i, describe(got))
		}
	}
	// The server's pings are answered (by the clients' library), and the
	// pongs are read as they come, though nothing waits for them.
	pongs := st.Pongs.Load()
	testio.Eventually(t, 30*time.Second, func() string {
		if n := st.Pongs.Load() - pongs; n < 3*streams {
			return fmt.Sprintf("%d pongs counted, want %d", n, 3*streams)
		}
		return ""
	})
	testio.Eventually(t, 30*time.Second, idle)
	for i, s := range conns {
		if !s.isOpen() {
			t.Fatalf("stream %d closed: %v", i, s.closeErr)
		}
	}

	// The client closes one, the server another (its session ends): both
	// are done with, and nothing is left reading them.
	if err := conns[0].ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("client close: %v", err)
	}
	e.signOut(t.Context(), users[1])
	if code, _ := conns[1].closed(10 * time.Second); code != websocket.StatusPolicyViolation {
		t.Errorf("the signed-out stream closed with %v, want 1008", code)
	}
	testio.Eventually(t, 30*time.Second, func() string {
		if n, open := st.Readers.Load(), st.Open.Load(); n != 0 || open != streams-2 {
			return fmt.Sprintf("%d readers for %d streams open, want none for %d", n, open, streams-2)
		}
		return ""
	})
}

// A frame that comes in pieces, far apart, is read whole: the reader waits
// for the rest of a frame it has begun. A ping of the client's is answered
// between its frames, and the stream reads on.
func TestFrameInPiecesReadWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	c := e.dialRaw(e.signUp("pieces"))
	ready := c.readFrame()
	if !bytes.Contains(ready, []byte(`"type":"ready"`)) {
		t.Fatalf("first frame %q, want ready", ready)
	}
	frame := clientFrame(opText, []byte(`{"type":"nothing known"}`), false)
	for _, cut := range []int{1, 2, 6, 9, len(frame) - 1} {
		if err := c.write(frame[:cut]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := c.write(frame[cut:]); err != nil {
			t.Fatal(err)
		}
		if got := c.readFrame(); !bytes.Contains(got, []byte(`"unknown_type"`)) {
			t.Fatalf("cut at %d: the answer is %q, want an unknown_type error", cut, got)
		}
		if err := c.write(clientFrame(opPing, []byte("p"), false)); err != nil {
			t.Fatal(err)
		}
		if got := c.readFrame(); string(got) != "p" {
			t.Fatalf("cut at %d: the answer to a ping is %q, want its pong", cut, got)
		}
	}
	testio.Eventually(t, 30*time.Second, func() string {
		if n := e.hub.Stats.Readers.Load(); n != 0 {
			return fmt.Sprintf("%d readers of an idle stream, want none", n)
		}
		return ""
	})
}

// Where the poller cannot watch a socket (a listener whose connections hide
// it, as netutil.LimitListener's do), each stream waits for its client on
// a goroutine of its own, and works the same.
func TestUnwatchedStreamsHaveAReaderEach(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{limited: true})
	u := e.signUp("unwatched")
	s := e.connect(u)
	s.ping()
	if got := s.until("unknown_type", 10*time.Second); len(got) != 0 {
		t.Errorf("got %v before the answer to a ping", describe(got))
	}
	if n := e.hub.Stats.Readers.Load(); n != 1 {
		t.Errorf("%d readers of one stream, want 1", n)
	}
	e.signOut(t.Context(), u)
	if code, _ := s.closed(10 * time.Second); code != websocket.StatusPolicyViolation {
		t.Errorf("the signed-out stream closed with %v, want 1008", code)
	}
	testio.Eventually(t, 30*time.Second, func() string {
		if n := e.hub.Stats.Readers.Load(); n != 0 {
			return fmt.Sprintf("%d readers after the stream closed, want none", n)
		}
		return ""
	})
}

// readFrame reads the server's next frame and returns its payload.
func (c *rawClient) readFrame() []byte {
	c.tb.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, payload, err := c.nextFrame()
	if err != nil {
		c.tb.Fatalf("read a frame: %v", err)
	}
	return payload
}

// The readers' pool runs every function handed to it, on idle goroutines
// where there are, and keeps no more than maxIdle idle.
func TestReaderPool(t *testing.T) {
	p := &pool{work: make(chan func())}
	const n = 3 * maxIdle
	var wg sync.WaitGroup
	var ran atomic.Int64
	release := make(chan struct{})
	for range n {
		wg.Add(1)
		p.run(func() {
			defer wg.Done()
			ran.Add(1)
			<-release // all at once: each on a goroutine of its own
		})
	}
	close(release)
	wg.Wait()
	testio.Eventually(t, 10*time.Second, func() string {
		if idle := p.idle.Load(); idle != maxIdle {
			return fmt.Sprintf("%d goroutines idle, want %d", idle, maxIdle)
		}
		return ""
	})
	// The next ones run on those.
	for range n {
		wg.Add(1)
		p.run(func() { defer wg.Done(); ran.Add(1) })
	}
	wg.Wait()
	if got := ran.Load(); got != 2*n {
		t.Fatalf("%d functions ran, want %d", got, 2*n)
	}
	if idle := p.idle.Load(); idle > maxIdle {
		t.Fatalf("%d goroutines idle, want at most %d", idle, maxIdle)
	}
}
