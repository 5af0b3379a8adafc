package realtime

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// errConnFailed is what a failed connection's reads return: the frame that
// failed it and everything after are never read.
var errConnFailed = errors.New("connection failed: frame refused")

// meteredConn is a stream's hijacked connection, read through a parser of
// the client's frame headers. Every frame the client sends, each fragment of
// a message and every control frame (ping, pong, close) included, is counted
// against the stream's frame limit before the WebSocket library reads it,
// which answers pings by itself. A frame over the limit, or one the client
// did not mask, fails the connection (RFC 6455 §7.1.7): the bytes before it
// go to the library, none of it or after it do, and from then on every read
// fails at once, so that the closing handshake reads nothing more either.
// Only payload lengths are read: a flood costs a few header bytes a frame.
//
// It also hands the library the client's bytes one frame at most, never
// past a frame's end, reading ahead into a buffer of its own, so that when
// the library returns a message nothing of the next is left in its reader:
// the stream can then wait for its client outside the library, on the
// instance's poller (poll_linux.go), with no goroutine of its own. After a
// ping or a pong, which the library acts on and then reads on for the next
// message, a watched connection hands the library an empty message of its
// own making (synthetic) when nothing more came, so that the read returns
// rather than wait in the library.
//
// The parser's state is the reader's: the library reads under one lock.
// What was read ahead, and the poller's watch, are shared with the
// stream's reader between messages (hasPending, rearm), under mu.
type meteredConn struct {
	net.Conn
	frames *rate.Limiter

	mu      sync.Mutex
	poll    *pollWait // the poller's watch of the socket; nil: a goroutine waits (conn.read)
	closing bool      // Close was called: the socket is not watched
	// pending is what was read from the client and not yet handed to the
	// library: first what the HTTP server read past the handshake, then
	// what a read read ahead, in ahead.
	pending []byte
	ahead   [wireReadBuffer]byte
	// inject: the frame handed over last was a ping or a pong, and the
	// connection is watched; the library's next read, when nothing is
	// pending, gets a synthetic message, of which synth bytes are still
	// to hand over. injected: the library got one the stream has not taken.
	inject, injected bool
	synth            int

	head       [14]byte // the header of the frame being read: at most 2+8+4 bytes
	headLen    int      // bytes of head read so far; 0 between frames
	headAll    int      // the header's length, known from its second byte
	payload    uint64   // bytes of the frame's payload still to pass
	fragmented bool     // a data message's first fragment has passed, its last not yet

	failure atomic.Uint32 // why the connection failed, a closeReason; notClosed while it has not

	writing sync.Mutex // a frame's write under its deadline (webSocket.write)
}

// synthetic is the empty text message handed to the library after a
// control frame: a final text frame, masked (as a client's must be), of no
// payload, its mask key zero.
var synthetic = [6]byte{0x81, 0x80}

// Read hands the library the client's bytes, one frame at most, up to the
// first refused frame.
func (m *meteredConn) Read(p []byte) (int, error) {
	for {
		if m.failed() != notClosed {
			return 0, errConnFailed
		}
		m.mu.Lock()
		if m.inject && len(m.pending) == 0 && m.synth == 0 && m.headLen == 0 && m.payload == 0 && !m.fragmented {
			m.inject, m.synth, m.injected = false, len(synthetic), true
		}
		if m.synth > 0 { // not the client's bytes: not metered
			n := copy(p, synthetic[len(synthetic)-m.synth:])
			m.synth -= n
			m.mu.Unlock()
			return n, nil
		}
		if len(m.pending) > 0 {
			ok, fail := m.scan(m.pending[:min(len(p), len(m.pending))])
			copy(p, m.pending[:ok])
			m.pending = m.pending[ok:]
			m.mu.Unlock()
			if fail != notClosed {
				m.failure.Store(uint32(fail))
				return ok, errConnFailed
			}
			return ok, nil
		}
		m.mu.Unlock()
		if m.payload > 0 {
			// Within a frame's payload nothing of the next frame can come:
			// read into p, no further than the payload's end.
			n, err := m.Conn.Read(p[:min(uint64(len(p)), m.payload)])
			m.mu.Lock()
			m.scan(p[:n]) // passes payload bytes alone, none refused
			m.mu.Unlock()
			return n, err
		}
		n, err := m.Conn.Read(m.ahead[:])
		if n == 0 {
			return 0, err
		}
		// An error with bytes comes again at the next read.
		m.mu.Lock()
		m.pending = m.ahead[:n]
		m.mu.Unlock()
	}
}

// watch has ready run, on a goroutine of its own, each time the client
// has sent something, from now (at once if something waits) until the
// connection closes, and once more then (see poll_linux.go); ready arms
// the watch again (rearm) once it read what was pending. It reports false
// when the socket cannot be watched: not a plain socket, or closing.
func (m *meteredConn) watch(ready func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return false
	}
	m.poll = pollSocket(m.Conn, len(m.pending) > 0, ready)
	return m.poll != nil
}

// rearm has the poller watch the socket again, once ready read what was
// pending. It reports false when the connection is closing: the caller
// reads on, and finds it closed.
func (m *meteredConn) rearm() bool {
	m.mu.Lock()
	w := m.poll
	m.mu.Unlock()
	return w.rearm()
}

// hasPending reports whether the client's bytes wait, read ahead, that the
// library has not read.
func (m *meteredConn) hasPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending) > 0
}

// tookSynthetic reports whether the library read, since the last call, the
// empty message handed to it after a control frame.
func (m *meteredConn) tookSynthetic() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	took := m.injected && m.synth == 0
	if took {
		m.injected = false
	}
	return took
}

// How a failed connection lingers after its close frame (see Close).
const (
	lingerBytes = 64 << 10
	lingerTime  = time.Second
)

// Close closes the connection. A failed one lingers first, after the close
// frame: half-closed where the connection can be, it reads and drops what
// the client still sends, up to lingerBytes, until the client closes its
// side; a client that goes on sending past that is left unread until
// lingerTime is over. Closed at once with bytes of the client's unread,
// the kernel would answer with a reset, which drops what is still on its
// way to the client, the close frame that says why among it.
func (m *meteredConn) Close() error {
	m.mu.Lock()
	m.closing = true
	w := m.poll
	m.mu.Unlock()
	if w != nil {
		w.close() // before its descriptor can be another socket's
	}
	if m.failed() != notClosed {
		// Not every listener's connections can half-close (a limited
		// listener's cannot): then the client learns of the end from the
		// close frame alone.
		if hc, ok := m.Conn.(interface{ CloseWrite() error }); ok {
			_ = hc.CloseWrite() // failing, the client reads the close frame alone
		}
		end := time.Now().Add(lingerTime)
		if err := m.Conn.SetReadDeadline(end); err != nil {
			return m.Conn.Close()
		}
		if _, err := io.CopyN(io.Discard, m.Conn, lingerBytes); err == nil {
			time.Sleep(time.Until(end))
		}
	}
	return m.Conn.Close()
}

// fail fails the connection for why, found by the reader in a frame the
// meter let through (a text frame not UTF-8), unless it failed already:
// from now on reads fail at once.
func (m *meteredConn) fail(why closeReason) {
	m.failure.CompareAndSwap(uint32(notClosed), uint32(why))
}

// failed is why the connection failed, or notClosed.
func (m *meteredConn) failed() closeReason { return closeReason(m.failure.Load()) }

// scan walks the frame headers in b, the next bytes from the client, counting
// each frame as it begins. It returns how many of the bytes may be read, up
// to the end of the first frame that ends in b, and, when a frame is
// refused, why (else notClosed): the bytes of that frame are not among them.
func (m *meteredConn) scan(b []byte) (int, closeReason) {
	for i := 0; i < len(b); {
		if m.payload > 0 {
			step := min(m.payload, uint64(len(b)-i))
			i += int(step)
			m.payload -= step
			if m.payload == 0 {
				return i, notClosed
			}
			continue
		}
		if m.headLen == 0 && !m.frames.Allow() {
			return i, closeFlood
		}
		m.head[m.headLen] = b[i]
		m.headLen++
		i++
		switch {
		case m.headLen == 2:
			if m.head[1]&0x80 == 0 {
				// Byte 0 of this frame may have gone already: a header cut
				// short is all the library can have of it.
				return i - 1, closeUnmasked
			}
			switch m.head[1] & 0x7f {
			case 126:
				m.headAll = 2 + 2 + 4
			case 127:
				m.headAll = 2 + 8 + 4
			default:
				m.headAll = 2 + 4
			}
		case m.headLen > 2 && m.headLen == m.headAll:
			m.payload = payloadLen(m.head[:])
			m.headLen = 0
			m.frameBegun()
			if m.payload == 0 {
				return i, notClosed
			}
		}
	}
	return len(b), notClosed
}

// frameBegun notes the frame whose header was just read: whether it starts
// or ends a fragmented data message, and whether it is a ping or a pong,
// after which a watched connection's library gets a synthetic message.
func (m *meteredConn) frameBegun() {
	fin, opcode := m.head[0]&0x80 != 0, m.head[0]&0x0f
	switch opcode {
	case 0x1, 0x2: // text, binary
		m.fragmented = !fin
	case 0x0: // continuation
		m.fragmented = m.fragmented && !fin
	}
	m.inject = m.poll != nil && (opcode == 0x9 || opcode == 0xa)
}

// meteredWriter hands websocket.Accept the connection it hijacks as a
// meteredConn, with what the HTTP server read past the handshake moved
// into it, so that every byte from the client passes the meter.
type meteredWriter struct {
	http.ResponseWriter
	frames *rate.Limiter
	conn   *meteredConn // set once hijacked
}

// Hijack takes over the connection for the WebSocket.
func (w *meteredWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil { // the handshake's answer is out already
		return nil, nil, err
	}
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	pending = append([]byte(nil), pending...)
	_, _ = brw.Reader.Discard(len(pending)) // all of it is buffered
	w.conn = &meteredConn{Conn: nc, pending: pending, frames: w.frames}
	// net/http's buffers are let go: the stream reads and writes through
	// small ones of its own (wire.go).
	return w.conn, newWireReadWriter(w.conn), nil
}
