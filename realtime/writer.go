package realtime

import (
	"context"
	"time"

	"github.com/coder/websocket"
)

// frameWriter is what a stream's frames go out on: a WebSocket (webSocket)
// or a Server-Sent Events response (eventStream, events.go). The hub's
// machinery, its queue, the writer that drains it, the pinger, the close
// with its reason, is the same for both; only the bytes on the wire differ.
type frameWriter interface {
	// write sends one frame by deadline; a status frame comes with its
	// status's id (0 for any other frame), from which an event stream
	// makes the event's id. The deadline is the socket's, not a context's:
	// a context with a timer, and the library's watch over it, would cost
	// each frame six allocations.
	write(deadline time.Time, frame []byte, statusID int64) error
	// ping proves the client still there, or the way to it open: a
	// WebSocket ping answered, or an event stream's keepalive comment
	// written.
	ping(ctx context.Context) error
	// close ends the stream, telling the client code and reason.
	close(code websocket.StatusCode, reason string) error
}

// webSocket is a stream's upgraded WebSocket as a frameWriter, with the
// socket under it (wire), whose write deadline bounds a write.
type webSocket struct {
	*websocket.Conn
	wire *meteredConn
}

var (
	_ frameWriter = webSocket{}
	_ frameWriter = (*eventStream)(nil)
)

// write takes the deadline off after the frame, as pings and the close
// frame have limits of their own. Frames may be written from two
// goroutines at once (the queue's writer, and a drain's reconnect frame):
// each holds the socket's deadline for its own frame only.
func (w webSocket) write(deadline time.Time, frame []byte, _ int64) error {
	w.wire.writing.Lock()
	defer w.wire.writing.Unlock()
	_ = w.wire.SetWriteDeadline(deadline) // an error: the socket is closed, and so the write fails
	err := w.Write(context.Background(), websocket.MessageText, frame)
	_ = w.wire.SetWriteDeadline(time.Time{})
	return err
}

func (w webSocket) ping(ctx context.Context) error { return w.Ping(ctx) }

// closeReadLimit bounds the reads of a close handshake. The library reads
// the rest of the frame being read, and of any data frame that comes before
// the client's close frame, with no limit of its own (its five seconds
// bound frame headers only): a client that stopped within a frame's
// payload would hold its stream, and the stream's place, for good. It
// covers the library's five seconds to write the close frame and five for
// the client's answer.
const closeReadLimit = 10 * time.Second

func (w webSocket) close(code websocket.StatusCode, reason string) error {
	_ = w.wire.SetReadDeadline(time.Now().Add(closeReadLimit)) // an error: the socket is closed, and its reads fail anyway
	return w.Close(code, reason)
}
