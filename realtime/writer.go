package realtime

import (
	"context"

	"github.com/coder/websocket"
)

// frameWriter is what a stream's frames go out on: a WebSocket (webSocket)
// or a Server-Sent Events response (eventStream, events.go). The hub's
// machinery, its queue, the writer that drains it, the pinger, the close
// with its reason, is the same for both; only the bytes on the wire differ.
type frameWriter interface {
	// write sends one frame within ctx; a status frame comes with its
	// status's id (0 for any other frame), from which an event stream
	// makes the event's id.
	write(ctx context.Context, frame []byte, statusID int64) error
	// ping proves the client still there, or the way to it open: a
	// WebSocket ping answered, or an event stream's keepalive comment
	// written.
	ping(ctx context.Context) error
	// close ends the stream, telling the client code and reason.
	close(code websocket.StatusCode, reason string) error
}

// webSocket is a stream's upgraded WebSocket as a frameWriter. One
// pointer, it fits in the interface without an allocation of its own.
type webSocket struct{ *websocket.Conn }

var (
	_ frameWriter = webSocket{}
	_ frameWriter = (*eventStream)(nil)
)

func (w webSocket) write(ctx context.Context, frame []byte, _ int64) error {
	return w.Write(ctx, websocket.MessageText, frame)
}

func (w webSocket) ping(ctx context.Context) error { return w.Ping(ctx) }

func (w webSocket) close(code websocket.StatusCode, reason string) error {
	return w.Close(code, reason)
}
