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
// The parser's state is the reader's: the library reads under one lock.
type meteredConn struct {
	net.Conn
	pending []byte // bytes the HTTP server read past the handshake, read first
	frames  *rate.Limiter

	head    [14]byte // the header of the frame being read: at most 2+8+4 bytes
	headLen int      // bytes of head read so far; 0 between frames
	headAll int      // the header's length, known from its second byte
	payload uint64   // bytes of the frame's payload still to pass

	failure atomic.Uint32 // why the connection failed, a closeReason; notClosed while it has not

	writing sync.Mutex // a frame's write under its deadline (webSocket.write)
}

// Read reads the client's bytes up to the first refused frame.
func (m *meteredConn) Read(p []byte) (int, error) {
	if m.failed() != notClosed {
		return 0, errConnFailed
	}
	var n int
	var err error
	if len(m.pending) > 0 {
		n = copy(p, m.pending)
		m.pending = m.pending[n:]
	} else {
		n, err = m.Conn.Read(p)
	}
	if ok, fail := m.scan(p[:n]); fail != notClosed {
		m.failure.Store(uint32(fail))
		return ok, errConnFailed
	}
	return n, err
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
// each frame as it begins. It returns how many of the bytes may be read and,
// when a frame is refused, why (else notClosed): the bytes of that frame are
// not among them.
func (m *meteredConn) scan(b []byte) (int, closeReason) {
	for i := 0; i < len(b); {
		if m.payload > 0 {
			step := min(m.payload, uint64(len(b)-i))
			i += int(step)
			m.payload -= step
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
		}
	}
	return len(b), notClosed
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
