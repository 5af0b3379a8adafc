package realtime

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"
)

// WebSocket opcodes, for clients that write frames by hand.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// rawClient is a stream's client that writes its frames by hand on a plain
// TCP connection, as a hostile one would: what the WebSocket library of a
// well-behaved client never sends.
type rawClient struct {
	tb   testing.TB
	conn net.Conn
	r    *bufio.Reader
}

// dialRaw opens a stream of u with a handshake written by hand.
func (e *env) dialRaw(u user) *rawClient {
	e.tb.Helper()
	return e.dialRawWith(u, nil)
}

// dialRawWith is dialRaw, with early, the client's first frames, sent with
// the handshake in one write, before the server has answered it.
func (e *env) dialRawWith(u user, early []byte) *rawClient {
	e.tb.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(e.url, "ws://"), "/stream")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		e.tb.Fatalf("dial %s: %v", addr, err)
	}
	e.tb.Cleanup(func() { conn.Close() })
	req := fmt.Appendf(nil, "GET /stream HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s: %s\r\n\r\n", addr, tokenHeader, u.token)
	conn.Write(append(req, early...))
	c := &rawClient{tb: e.tb, conn: conn, r: bufio.NewReader(conn)}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(c.r, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		e.tb.Fatalf("handshake: %v %v", res, err)
	}
	return c
}

// frame builds one client frame: final, masked unless unmasked says not.
func clientFrame(op byte, payload []byte, unmasked bool) []byte {
	b := []byte{0x80 | op}
	mask := byte(0x80)
	if unmasked {
		mask = 0
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, mask|byte(n))
	case n <= 0xffff:
		b = append(b, mask|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, mask|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if unmasked {
		return append(b, payload...)
	}
	key := [4]byte{0x12, 0x34, 0x56, 0x78}
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// write sends bytes, which may be refused midway: the server closes.
func (c *rawClient) write(b []byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err := c.conn.Write(b)
	return err
}

// serverFrames reads the server's frames until it closes the connection,
// and returns how many of each opcode came, and the close frame's code
// (0 when none came).
func (c *rawClient) serverFrames() (counts map[byte]int, code websocket.StatusCode) {
	c.tb.Helper()
	counts = map[byte]int{}
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		op, payload, err := c.nextFrame()
		if err != nil {
			return counts, code
		}
		counts[op]++
		if op == opClose && len(payload) >= 2 {
			code = websocket.StatusCode(binary.BigEndian.Uint16(payload))
		}
	}
}

// untilClose reads the server's frames until its close frame, and returns
// the frame's code.
func (c *rawClient) untilClose() websocket.StatusCode {
	c.tb.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		op, payload, err := c.nextFrame()
		if err != nil {
			c.tb.Fatalf("no close frame: %v", err)
		}
		if op == opClose && len(payload) >= 2 {
			return websocket.StatusCode(binary.BigEndian.Uint16(payload))
		}
	}
}

// nextFrame reads one of the server's frames (unmasked, as a server's are).
func (c *rawClient) nextFrame() (op byte, payload []byte, err error) {
	var head [2]byte
	if _, err := io.ReadFull(c.r, head[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(c.r, ext[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(c.r, ext[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return 0, nil, err
	}
	return head[0] & 0x0f, payload, nil
}

// A client flooding pings is failed with 1008 once past its frame burst:
// it gets a pong for each ping up to the burst, none after, and its stream
// is counted as flooding. Other streams are not disturbed. The close frame
// reaches the client whether or not the server's connections can
// half-close.
func TestPingFloodFailsTheStream(t *testing.T) {
	t.Parallel()
	for _, limited := range []bool{false, true} {
		t.Run(fmt.Sprintf("limited listener %v", limited), func(t *testing.T) {
			t.Parallel()
			const burst = 20
			// No refill: what the client may send is the burst, however
			// long the flood takes on a slow machine.
			e := newEnv(t, envOptions{hub: Options{FrameRate: rate.Every(time.Hour), FrameBurst: burst}, limited: limited})
			u, other := e.signUp("pinger"), e.signUp("bystander")
			calm := e.connect(other)
			c := e.dialRaw(u)

			// Pings until the server stops reading: more than the socket
			// buffers hold, so that the server's close finds bytes unread.
			var flood []byte
			for i := range 4096 {
				flood = append(flood, clientFrame(opPing, fmt.Appendf(nil, "%d", i), false)...)
			}
			go func() {
				for c.write(flood) == nil {
				}
			}()
			counts, code := c.serverFrames()
			if code != websocket.StatusPolicyViolation {
				t.Fatalf("the flooding stream closed with %v (frames %v), want 1008", code, counts)
			}
			if counts[opPong] != burst {
				t.Fatalf("%d pongs to a flood of pings, want the burst, %d", counts[opPong], burst)
			}
			if n := e.hub.Stats.FloodClosed.Load(); n != 1 {
				t.Fatalf("FloodClosed = %d, want 1", n)
			}
			calm.ping()
			calm.until("unknown_type", 10*time.Second)
			if !calm.isOpen() {
				t.Fatalf("another user's stream closed: %v", calm.closeErr)
			}
		})
	}
}

// Frames sent with the handshake, which the HTTP server reads before the
// upgrade, are counted as the others are.
func TestFramesWithTheHandshakeCount(t *testing.T) {
	t.Parallel()
	const burst = 20
	e := newEnv(t, envOptions{hub: Options{FrameRate: rate.Every(time.Hour), FrameBurst: burst}})
	c := e.dialRawWith(e.signUp("eager"), bytes.Join(repeat(clientFrame(opPing, nil, false), 2*burst), nil))
	counts, code := c.serverFrames()
	if code != websocket.StatusPolicyViolation || counts[opPong] != burst {
		t.Fatalf("closed with %v after %d pongs, want 1008 after %d", code, counts[opPong], burst)
	}
}

// Pongs nobody asked for, and the client's close frame, count as frames too.
func TestEveryControlFrameCounts(t *testing.T) {
	t.Parallel()
	const burst = 10
	e := newEnv(t, envOptions{hub: Options{FrameRate: rate.Every(time.Hour), FrameBurst: burst}})
	for _, tc := range []struct {
		name   string
		frames [][]byte
		want   websocket.StatusCode
	}{
		{"pongs", repeat(clientFrame(opPong, nil, false), 1000), websocket.StatusPolicyViolation},
		// One message in a thousand fragments, each a frame: the library
		// would read them as one message, never done.
		{"fragments", append([][]byte{fragment(opText, []byte(`{"type":`))}, repeat(fragment(opContinuation, nil), 1000)...),
			websocket.StatusPolicyViolation},
		// The burst's frames, then a close over it: failed, not answered
		// with the client's own code.
		{"a close past the burst", append(repeat(clientFrame(opPong, nil, false), burst),
			clientFrame(opClose, []byte{0x03, 0xe8}, false)), websocket.StatusPolicyViolation},
		// Within the burst, the close is answered as sent.
		{"a close within the burst", [][]byte{clientFrame(opClose, []byte{0x03, 0xe8}, false)}, websocket.StatusNormalClosure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.dialRaw(e.signUp(loginOf(tc.name)))
			go c.write(bytes.Join(tc.frames, nil))
			if counts, code := c.serverFrames(); code != tc.want {
				t.Fatalf("closed with %v (frames %v), want %v", code, counts, tc.want)
			}
		})
	}
}

// fragment is a client frame that is not the last of its message.
func fragment(op byte, payload []byte) []byte {
	b := clientFrame(op, payload, false)
	b[0] &^= 0x80
	return b
}

func repeat(frame []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = frame
	}
	return out
}

// A frame the protocol refuses fails the stream with its code, counted,
// and nothing after it is read: an unmasked frame 1002, a text frame that
// is not UTF-8 1007. A lone surrogate escaped in a frame's JSON is refused
// with an error frame rather than read as U+FFFD.
func TestRefusedFrames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		name  string
		frame []byte
		want  websocket.StatusCode
	}{
		{"unmasked", clientFrame(opText, []byte(`{"type":"heartbeat"}`), true), websocket.StatusProtocolError},
		{"not UTF-8", clientFrame(opText, []byte("{\"type\":\"heartbeat\xff\"}"), false), websocket.StatusInvalidFramePayloadData},
		{"UTF-8 cut short", clientFrame(opText, []byte("{\"type\":\"\xe2\x82\"}"), false), websocket.StatusInvalidFramePayloadData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.hub.Stats.ProtocolClosed.Load()
			c := e.dialRaw(e.signUp(loginOf(tc.name)))
			// Pings after the bad frame would be answered were they read.
			go c.write(append(tc.frame, bytes.Join(repeat(clientFrame(opPing, nil, false), 5), nil)...))
			counts, code := c.serverFrames()
			if code != tc.want {
				t.Fatalf("closed with %v (frames %v), want %v", code, counts, tc.want)
			}
			if counts[opPong] != 0 {
				t.Fatalf("%d pings after the refused frame answered, want none read", counts[opPong])
			}
			if n := e.hub.Stats.ProtocolClosed.Load() - before; n != 1 {
				t.Fatalf("ProtocolClosed grew by %d, want 1", n)
			}
		})
	}

	s := e.connect(e.signUp("surrogate"))
	if err := s.ws.Write(t.Context(), websocket.MessageText, []byte(`{"type":"heartbeat","x":"\ud800"}`)); err != nil {
		t.Fatalf("write: %v", err)
	}
	f := s.next(10 * time.Second)
	if f.Type != "error" || f.Code != "invalid_json" || !strings.Contains(f.Message, "surrogate") {
		t.Fatalf("a frame with a lone surrogate got %v %q, want an invalid_json error naming it", f, f.Message)
	}
}

// loginOf is a login made from a subtest's name.
func loginOf(name string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// The meter finds every frame's start however the bytes are split across
// reads, with payload lengths of each size (7 bits, 16, 64), passes no
// more than one frame's end at a time, and refuses the first frame past the
// burst at its first byte.
func TestMeterScan(t *testing.T) {
	frames := [][]byte{
		clientFrame(opPing, nil, false),
		clientFrame(opText, bytes.Repeat([]byte("a"), 125), false),
		clientFrame(opText, bytes.Repeat([]byte("b"), 126), false),
		clientFrame(opBinary, bytes.Repeat([]byte("c"), 70000), false),
		clientFrame(opPong, nil, false),
	}
	all := bytes.Join(frames, nil)
	allowed := len(all) - len(frames[4])
	for _, chunk := range []int{1, 2, 7, 4096, len(all)} {
		t.Run(fmt.Sprintf("reads of %d", chunk), func(t *testing.T) {
			m := &meteredConn{frames: rate.NewLimiter(rate.Every(time.Hour), 4)}
			passed, ends := 0, []int{}
		read:
			for off := 0; off < len(all); off += chunk {
				for b := all[off:min(off+chunk, len(all))]; len(b) > 0; {
					ok, fail := m.scan(b)
					passed += ok
					if fail != notClosed {
						if code := fail.rule().code; code != websocket.StatusPolicyViolation {
							t.Fatalf("refused with %v, want 1008", code)
						}
						break read
					}
					if ok < len(b) {
						ends = append(ends, passed)
					}
					b = b[ok:]
				}
			}
			if passed != allowed {
				t.Fatalf("%d bytes passed, want the %d of the first four frames", passed, allowed)
			}
			// A scan stopped short of its bytes only at a frame's end.
			var frameEnds []int
			for i, end := 0, 0; i < len(frames)-1; i++ {
				end += len(frames[i])
				frameEnds = append(frameEnds, end)
			}
			for _, e := range ends {
				if !slices.Contains(frameEnds, e) {
					t.Fatalf("a scan stopped at byte %d, not a frame's end (%v)", e, frameEnds)
				}
			}
		})
	}
}

// A client that stops within a frame's payload, its connection left open,
// does not hold its stream past the close handshake's bound: not after a
// frame over the size limit (closed by the reader, 1009), nor after the
// server closed the stream for a reason of its own (here no heartbeat,
// 4000) and the client answered with the start of a data frame rather
// than its close frame. The stream ends, and gives back its place.
func TestCloseHandshakeOfAStalledFrame(t *testing.T) {
	t.Parallel()
	stall := map[string]func(e *env, c *rawClient){
		"over the size limit": func(e *env, c *rawClient) {
			// Declared 70,000 bytes; sent just past the limit.
			b := []byte{0x80 | opText, 0x80 | 127}
			b = binary.BigEndian.AppendUint64(b, 70_000)
			b = append(b, 1, 2, 3, 4)
			if err := c.write(append(b, make([]byte, protocol.MaxFrameBytes+1)...)); err != nil {
				e.tb.Fatal(err)
			}
		},
		"after the server's close": func(e *env, c *rawClient) {
			if code := c.untilClose(); code != protocol.CloseHeartbeatTimeout {
				e.tb.Fatalf("closed with %d, want %d (no heartbeat)", code, protocol.CloseHeartbeatTimeout)
			}
			// A text frame declared 1,000 bytes long, two of them sent.
			b := []byte{0x80 | opText, 0x80 | 126}
			b = binary.BigEndian.AppendUint16(b, 1000)
			if err := c.write(append(b, 1, 2, 3, 4, 'x', 'x')); err != nil {
				e.tb.Fatal(err)
			}
		},
	}
	for name, stall := range stall {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{hub: Options{HeartbeatInterval: 300 * time.Millisecond}})
			c := e.dialRaw(e.signUp(loginOf("stall")))
			testio.Eventually(t, 30*time.Second, func() string {
				if n := e.hub.Stats.Open.Load(); n != 1 {
					return fmt.Sprintf("%d streams open, want the one", n)
				}
				return ""
			})
			stall(e, c)
			// The client's side stays open all along (closed at cleanup).
			testio.Eventually(t, closeReadLimit+30*time.Second, func() string {
				if n, held := e.hub.Stats.Open.Load(), e.hub.admitted.Load(); n != 0 || held != 0 {
					return fmt.Sprintf("%d streams open and %d places held, want none: the close handshake waits on the stalled frame", n, held)
				}
				return ""
			})
		})
	}
}
