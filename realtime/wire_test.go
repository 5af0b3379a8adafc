package realtime

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// writeLog records each write it is given.
type writeLog struct{ writes [][]byte }

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

// serverFrame is a server frame (unmasked, final) of the given opcode and
// payload length, written as the WebSocket library writes one through its
// buffer: the header a byte at a time and its length, then the payload,
// then a flush. It returns the frame's bytes.
func serverFrame(t *testing.T, bw *bufio.Writer, opcode byte, n int) []byte {
	t.Helper()
	var head []byte
	head = append(head, 0x80|opcode)
	switch {
	case n > 0xffff:
		head = append(head, 127)
		head = binary.BigEndian.AppendUint64(head, uint64(n))
	case n > 125:
		head = append(head, 126)
		head = binary.BigEndian.AppendUint16(head, uint16(n))
	default:
		head = append(head, byte(n))
	}
	payload := bytes.Repeat([]byte{'x'}, n)
	for _, b := range head[:2] {
		if err := bw.WriteByte(b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bw.Write(head[2:]); err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return append(head, payload...)
}

// Each frame leaves in one write, whatever its length against the small
// write buffer: a ping with no payload, frames that fit the buffer, fill it
// exactly or pass it by a byte, and the three header lengths.
func TestWireFramesOneWritePerFrame(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 13, 14, 15, 16, 17, 32, 100, 125, 126, 300, 1500, 0xffff, 0x10000, 100_000} {
		out := &writeLog{}
		bw := newWireReadWriter(struct {
			*bytes.Reader
			*writeLog
		}{bytes.NewReader(nil), out}).Writer
		var want [][]byte
		for _, op := range []byte{0x1, 0x9, 0x1} { // text, ping, text
			m := n
			if op == 0x9 {
				m = min(n, 125)
			}
			want = append(want, serverFrame(t, bw, op, m))
		}
		if len(out.writes) != len(want) {
			t.Fatalf("payload %d: %d writes for %d frames, want one each", n, len(out.writes), len(want))
		}
		for i := range want {
			if !bytes.Equal(out.writes[i], want[i]) {
				t.Fatalf("payload %d: write %d is %d bytes, want frame %d whole (%d bytes)", n, i, len(out.writes[i]), i, len(want[i]))
			}
		}
	}
}

// A stream's hijacked connection comes with small buffers of its own, not
// net/http's 4 KiB reader and writer, which it would hold for its life.
func TestHijackSmallBuffers(t *testing.T) {
	t.Parallel()
	type sizes struct{ read, write int }
	got := make(chan sizes, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw := &meteredWriter{ResponseWriter: w, frames: rate.NewLimiter(rate.Inf, 1)}
		nc, brw, err := mw.Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			got <- sizes{}
			return
		}
		defer nc.Close()
		got <- sizes{brw.Reader.Size(), brw.Writer.Size()}
	}))
	defer srv.Close()
	nc, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.URL, "http://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s.read > wireReadBuffer || s.write > wireWriteBuffer {
			t.Fatalf("hijacked buffers: reader %d, writer %d bytes; want at most %d and %d", s.read, s.write, wireReadBuffer, wireWriteBuffer)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler did not hijack")
	}
}
