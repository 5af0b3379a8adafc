package realtime

import (
	"bufio"
	"encoding/binary"
	"io"
	"sync"
)

// The buffers a stream's WebSocket reads and writes through. net/http hands
// a hijacked connection over with a 4 KiB reader and a 4 KiB writer, which
// the WebSocket library would keep for the stream's life: 8 KiB per stream,
// idle or not, half of what a whole idle stream may cost. A stream is given
// small ones instead, and a frame's bytes are gathered only while it is
// being written.
const (
	// wireReadBuffer holds a client's usual frame whole (a heartbeat is 26
	// bytes with its header); a longer one is read in more calls.
	wireReadBuffer = 64
	// wireWriteBuffer is the library's write buffer: a frame header and the
	// first bytes of its payload. The rest of a payload passes through it
	// to wireFrames.
	wireWriteBuffer = 16
)

// newWireReadWriter is the reader and writer a stream's WebSocket is given
// over the hijacked connection rw.
func newWireReadWriter(rw io.ReadWriter) *bufio.ReadWriter {
	return bufio.NewReadWriter(bufio.NewReaderSize(rw, wireReadBuffer), bufio.NewWriterSize(&wireFrames{w: rw}, wireWriteBuffer))
}

// wireFrames writes the server's frames, which reach it from the
// library's small write buffer in pieces (the buffer's first bytes, then the
// rest of the payload), each frame whole in one write: a frame in two
// writes would cost two system calls and, without Nagle's delay, two
// packets. It follows the frame headers to tell where a frame ends, and
// holds the bytes of a frame under way until then, in held or, past that, a
// pooled buffer. The library writes under one lock, so wireFrames needs
// none.
type wireFrames struct {
	w    io.Writer
	held [2 * wireWriteBuffer]byte
	n    int // bytes in held

	head    [10]byte // the header being read: at most 2+8 bytes (the server does not mask)
	headLen int      // bytes of head so far; 0 between frames
	headAll int      // the header's length, known from its second byte
	payload uint64   // bytes of the frame's payload still to come
}

// Write writes p once it ends a frame, with what was held of the frame
// before it; until then it holds p.
func (f *wireFrames) Write(p []byte) (int, error) {
	f.scan(p)
	ended := f.headLen == 0 && f.payload == 0
	if !ended && f.n+len(p) <= len(f.held) {
		f.n += copy(f.held[f.n:], p)
		return len(p), nil
	}
	if f.n == 0 {
		return f.w.Write(p)
	}
	held := f.n
	f.n = 0
	bp := framePool.Get().(*[]byte)
	buf := append(append((*bp)[:0], f.held[:held]...), p...)
	n, err := f.w.Write(buf)
	if cap(buf) <= maxPooledFrame {
		*bp = buf[:0]
		framePool.Put(bp)
	}
	return min(max(n-held, 0), len(p)), err
}

// scan follows the frame headers in b, the next bytes written.
func (f *wireFrames) scan(b []byte) {
	for i := 0; i < len(b); {
		if f.payload > 0 {
			step := min(f.payload, uint64(len(b)-i))
			i += int(step)
			f.payload -= step
			continue
		}
		f.head[f.headLen] = b[i]
		f.headLen++
		i++
		if f.headLen == 2 {
			switch f.head[1] & 0x7f {
			case 126:
				f.headAll = 2 + 2
			case 127:
				f.headAll = 2 + 8
			default:
				f.headAll = 2
			}
		}
		if f.headLen < 2 || f.headLen < f.headAll {
			continue
		}
		f.payload = payloadLen(f.head[:])
		f.headLen = 0
	}
}

// maxPooledFrame is the largest buffer framePool keeps: a frame longer than
// that is rare (a status is well under it), and its buffer is let go.
const maxPooledFrame = 16 << 10

// framePool holds the buffers frames are gathered in, shared by every
// stream of the instance: only the streams writing at the moment hold one.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// payloadLen is the payload length a whole WebSocket frame header head
// gives (RFC 6455, 5.2): the 7-bit length, or the 16- or 64-bit one after it.
func payloadLen(head []byte) uint64 {
	switch n := head[1] & 0x7f; n {
	case 126:
		return uint64(binary.BigEndian.Uint16(head[2:4]))
	case 127:
		return binary.BigEndian.Uint64(head[2:10])
	default:
		return uint64(n)
	}
}
