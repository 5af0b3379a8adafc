package realtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"chorus/protocol"

	"github.com/coder/websocket"
)

// A stream can also be Server-Sent Events: GET /api/v1/stream with Accept:
// text/event-stream, for clients whose WebSockets are blocked. It is the
// same stream in every way but the wire: the same open (subscribe, session,
// presence, ready), queue, writer, limits, session checks, slow-client rule
// and close reasons, through an eventStream in place of the WebSocket
// (frameWriter). Each frame is one event of the default type, its JSON as
// the data, so that a browser's EventSource hands every frame to onmessage;
// a status's event carries the newest status id sent on the stream as its
// id, which a client reconnecting gives back as Last-Event-ID to resume.
// The keepalive comment written every heartbeat interval stands in for the
// WebSocket's ping: a stream whose writes succeed is active. The close is
// a last frame, {"type": "close", "code", "reason"}, with the WebSocket's
// close code, then the end of the response. What a client would send on a
// WebSocket comes by REST (Send), to whichever instance holds the stream.

// eventStream is a stream's HTTP response, written as Server-Sent Events.
// The handler that opened it waits in conn.awaitEnd until it ends, since
// the response ends with the handler.
type eventStream struct {
	mu      sync.Mutex // one write at a time: the writer's, the pinger's, the close
	w       http.ResponseWriter
	rc      *http.ResponseController
	client  context.Context // done when the client's connection ends
	timeout time.Duration   // the close frame's write
	closed  bool            // nothing more is written: the handler may have returned
	newest  int64           // the newest status id written
	done    chan struct{}   // closed by close
}

var errEventStreamClosed = errors.New("event stream closed")

// The bytes of an event, and of the keepalive comment.
var (
	eventID   = []byte("id: ")
	eventData = []byte("data: ")
	eventEnd  = []byte("\n\n")
	keepalive = []byte(":\n\n")
)

func (e *eventStream) write(ctx context.Context, frame []byte, statusID int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errEventStreamClosed
	}
	if d, ok := ctx.Deadline(); ok {
		if err := e.rc.SetWriteDeadline(d); err != nil {
			return err
		}
	}
	id := int64(0)
	if statusID > 0 {
		// The newest status sent, should one come out of order (a publish
		// that waited out a failover): a client that gives it back as
		// Last-Event-ID holds every status the stream sent up to it.
		e.newest = max(e.newest, statusID)
		id = e.newest
	}
	return e.writeEvent(frame, id)
}

// writeEvent writes one frame as an event, with e.mu held.
func (e *eventStream) writeEvent(frame []byte, id int64) error {
	if bytes.ContainsAny(frame, "\r\n") {
		// A line break ends a data line: JSON can lose every one it holds
		// between its tokens, and has none inside a string.
		var b bytes.Buffer
		if err := json.Compact(&b, frame); err != nil {
			return fmt.Errorf("frame for an event stream: %w", err)
		}
		frame = b.Bytes()
	}
	if id > 0 {
		_, _ = e.w.Write(eventID)
		_, _ = e.w.Write(strconv.AppendInt(nil, id, 10))
		_, _ = e.w.Write([]byte("\n"))
	}
	_, _ = e.w.Write(eventData)
	_, _ = e.w.Write(frame)
	_, _ = e.w.Write(eventEnd)
	return e.rc.Flush() // the writes' error, if any, comes back here
}

func (e *eventStream) ping(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errEventStreamClosed
	}
	if d, ok := ctx.Deadline(); ok {
		if err := e.rc.SetWriteDeadline(d); err != nil {
			return err
		}
	}
	_, _ = e.w.Write(keepalive)
	return e.rc.Flush()
}

// close writes the close frame, unless the client is gone, and lets the
// handler end the response.
func (e *eventStream) close(code websocket.StatusCode, reason string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	defer close(e.done)
	if e.client.Err() != nil {
		return e.client.Err()
	}
	frame, _ := json.Marshal(protocol.Close{Type: protocol.TypeClose, Code: int(code), Reason: reason})
	if err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout)); err != nil {
		return err
	}
	return e.writeEvent(frame, 0)
}

// awaitEnd waits until the stream ends, reading the client's frames if it
// is a WebSocket (read), and returns how the client ended it, as read does.
func (c *conn) awaitEnd() websocket.CloseError {
	e, ok := c.ws.(*eventStream)
	if !ok {
		return c.read(c.life)
	}
	select {
	case <-e.client.Done():
		return websocket.CloseError{Code: websocket.StatusAbnormalClosure, Reason: "client gone"}
	case <-e.done:
		return websocket.CloseError{} // this side closed it
	}
}

// acceptEvents starts the event stream's response. client ends when the
// client's connection does.
func acceptEvents(client context.Context, timeout time.Duration) acceptFunc {
	return func(w http.ResponseWriter, r *http.Request, c *conn) (frameWriter, error) {
		e := &eventStream{w: w, rc: http.NewResponseController(w), client: client, timeout: timeout, done: make(chan struct{})}
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
		if r.ProtoMajor == 1 {
			// An ended stream's connection is not used again: its write
			// deadline is the stream's.
			h.Set("Connection", "close")
		}
		w.WriteHeader(http.StatusOK)
		if err := e.rc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			return nil, fmt.Errorf("event stream: %w", err)
		}
		if err := e.rc.Flush(); err != nil {
			return nil, fmt.Errorf("event stream: %w", err)
		}
		return e, nil
	}
}

// ServeEvents runs one stream of uid, authenticated before the call with
// the session sessionID, as Server-Sent Events, until it ends: the handler
// calling it returns when the stream is over. client is the client's
// connection's context, without the request's deadline: the stream ends
// when it does. With resume set, the stream first sends the home timeline
// after `after`, as a resume frame would (Last-Event-ID), before any live
// frame. The caller has checked the request's Origin.
//
// When it does not open the stream, it answers nothing and returns why, as
// Serve does.
func (h *Hub) ServeEvents(client context.Context, w http.ResponseWriter, r *http.Request, uid int64, sessionID string, after int64, resume bool) error {
	c, ready, err := h.start(w, r, uid, sessionID, acceptEvents(client, h.opts.WriteTimeout), func(c *conn) {
		if resume {
			// Queued before the stream subscribes, so ahead of every live
			// frame: the event ids it sends grow, and one a client gives
			// back misses nothing older.
			c.resume(after)
		}
	})
	if c == nil {
		return err
	}
	h.Stats.EventStreams.Add(1)
	defer h.Stats.EventStreams.Add(-1)
	c.run(withStreamID(ready, c.id))
	return nil
}

// withStreamID adds the stream's id, which the REST calls for the stream
// name (Send), to its ready frame (protocol.Ready.Stream).
func withStreamID(ready []byte, id string) []byte {
	if len(ready) < 2 || ready[0] != '{' {
		return ready
	}
	field, _ := json.Marshal(id)
	out := make([]byte, 0, len(ready)+len(field)+12)
	out = append(out, `{"stream":`...)
	out = append(out, field...)
	out = append(out, ',')
	return append(out, ready[1:]...)
}

// ErrUnknownStream is Send's refusal when no instance holds a stream of the
// user.
const ErrUnknownStream Refusal = "no stream of the user by that id"

// typePostedFrame is the hub's own message on a user's channel: a client
// frame posted by REST for one of the user's streams, for the instance that
// holds it.
const typePostedFrame = "posted_frame"

// postedFrame is a typePostedFrame message.
type postedFrame struct {
	Type   string               `json:"type"`
	Stream string               `json:"stream"`
	Frame  protocol.ClientFrame `json:"frame"`
}

// Send hands stream, a stream of uid, a frame its client sent by REST (an
// event stream's client has no other way to send one): it is acted on as if
// the stream had read it, and counts as the stream's activity. A stream on
// this instance gets it at once; one on another instance through the user's
// channel, which only the hub publishes such frames on. What the frame
// asks fails on the stream as an error frame, as on a WebSocket.
//
// It returns a *FrameError for a frame the stream would refuse,
// ErrUnknownStream when no instance holds a stream of the user (a stale id
// of a user who has streams elsewhere is dropped there), or an error
// wrapping ErrUnavailable.
func (h *Hub) Send(ctx context.Context, uid int64, stream string, f protocol.ClientFrame) error {
	if e := checkFrame(f); e != nil {
		return e
	}
	if c := h.localStream(uid, stream); c != nil {
		c.active(time.Now())
		c.handle(f)
		return nil
	}
	payload, err := json.Marshal(postedFrame{Type: typePostedFrame, Stream: stream, Frame: f})
	if err != nil {
		return fmt.Errorf("frame for stream %s: %w", stream, err)
	}
	n, err := h.bus.Queue(ctx, h.rdb, h.bus.UserChannel(uid), payload).Result()
	if err != nil {
		return unavailable(fmt.Errorf("frame for stream %s: %w", stream, err))
	}
	if n == 0 {
		return ErrUnknownStream
	}
	return nil
}

// localStream is uid's stream of this instance by id, or nil.
func (h *Hub) localStream(uid int64, id string) *conn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if u := h.users[h.bus.UserChannel(uid)]; u != nil {
		for c := range u.conns {
			if c.id == id {
				return c
			}
		}
	}
	return nil
}

// posted acts on a frame posted for one of u's streams on another
// instance, if that stream is here. Called by the router with h.mu held:
// the frame is handled on a goroutine of its own, since a resume asks
// Redis for its budget.
func (h *Hub) posted(u *local, ev event) {
	if ev.Frame == nil {
		return
	}
	for c := range u.conns {
		if c.id == ev.Stream {
			f := *ev.Frame
			go func() {
				c.active(time.Now()) // not under h.mu (locks.go)
				c.handle(f)
			}()
			return
		}
	}
}
