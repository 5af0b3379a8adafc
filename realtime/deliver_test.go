package realtime

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/protocol"
)

// rawStream opens u's stream over a plain TCP connection, with no
// WebSocket library on the client's side, reads its ready frame and
// returns the reader of the frames after it: reading them allocates
// nothing.
func (e *env) rawStream(u user) io.Reader {
	e.tb.Helper()
	addr := strings.TrimPrefix(strings.TrimSuffix(e.url, "/stream"), "ws://")
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		e.tb.Fatal(err)
	}
	e.tb.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(nc, "GET /stream HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n%s: %s\r\n\r\n", addr, tokenHeader, u.token)
	br := bufio.NewReader(nc)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		e.tb.Fatalf("upgrade: %v %v", res, err)
	}
	if f := readServerFrame(e.tb, br, make([]byte, 64<<10)); !strings.Contains(string(f), `"type":"ready"`) {
		e.tb.Fatalf("first frame %q, want ready", f)
	}
	return br
}

// readServerFrame reads one unmasked, unfragmented frame into buf and
// returns its payload.
func readServerFrame(tb testing.TB, r io.Reader, buf []byte) []byte {
	if _, err := io.ReadFull(r, buf[:2]); err != nil {
		tb.Fatalf("frame header: %v", err)
	}
	n := int(buf[1] & 0x7f)
	switch n {
	case 126:
		if _, err := io.ReadFull(r, buf[:2]); err != nil {
			tb.Fatalf("frame length: %v", err)
		}
		n = int(binary.BigEndian.Uint16(buf[:2]))
	case 127:
		if _, err := io.ReadFull(r, buf[:8]); err != nil {
			tb.Fatalf("frame length: %v", err)
		}
		n = int(binary.BigEndian.Uint64(buf[:8]))
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		tb.Fatalf("frame payload: %v", err)
	}
	return buf[:n]
}

// maxDeliveryAllocs is what routing one status frame from the bus to a
// stream and writing it may allocate: the start of the drainer goroutine
// that writes it (an idle stream has none). The frame is not decoded,
// copied, queued in a buffer of its own or written under a timer of its
// own (23 allocations a delivery before they were taken out).
const maxDeliveryAllocs = 1

// The delivery path, from a status frame on a user's channel to its bytes
// on the user's stream, allocates at most maxDeliveryAllocs a frame.
func TestDeliveryAllocations(t *testing.T) {
	// Not parallel: the count is the process's, and other tests' work would
	// be counted.
	e := newEnv(t, envOptions{hub: Options{
		// Nothing of the hub's own runs during the count.
		HeartbeatInterval: time.Hour, BeatFlushInterval: time.Hour, HealthInterval: time.Hour,
		SessionCheckInterval: time.Hour,
	}})
	u := e.signUp("allocs")
	stream := e.rawStream(u)
	// The count is the whole process's: work of other goroutines (the Redis
	// client's own, a cluster's state read again; what earlier tests left
	// winding down) may fall in a round and add to it. The fewest of up to
	// twenty short rounds is the delivery's.
	const rounds, runs = 20, 50
	payloads := make([][]byte, rounds*(runs+1))
	for i := range payloads {
		p, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: protocol.Status{
			ID: int64(1_000_000 + i), UID: u.id, Login: u.login, Message: strings.Repeat("m", 200),
			Posted: time.Now(), Mentions: []protocol.Mention{},
		}})
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = p
	}
	channel := e.hub.bus.UserChannel(u.id)
	buf := make([]byte, 64<<10)
	next := 0
	allocs := math.Inf(1)
	for range rounds {
		allocs = min(allocs, testing.AllocsPerRun(runs, func() {
			want := payloads[next]
			next++
			e.hub.dispatch(channel, want)
			if got := readServerFrame(t, stream, buf); string(got) != string(want) {
				t.Fatalf("frame %q, want %q", got, want)
			}
		}))
		if allocs <= maxDeliveryAllocs {
			break
		}
	}
	if allocs > maxDeliveryAllocs {
		t.Fatalf("a delivery allocates %.2f times, want at most %d", allocs, maxDeliveryAllocs)
	}
	t.Logf("%.2f allocations a delivery", allocs)
}

// A stream's frames are written on the writers' pool (conn.drain), whose
// goroutines stay for the next stream's writes once the frames are out:
// a write then starts on a grown stack, not a new goroutine's.
func TestWritesOnPooledGoroutines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	u := e.signUp("pooled")
	s := e.connect(u)
	for i := range 3 {
		e.publish(u, map[string]any{"type": "filler", "seq": i + 1})
		s.upTo(func(f frame) bool { return f.Type == "filler" && f.Seq == i+1 }, time.Minute)
	}
	testio.Eventually(t, 10*time.Second, func() string {
		if n := IdleWriters(); n == 0 {
			return "no goroutine kept for the next writes after three frames went out"
		}
		return ""
	})
}
