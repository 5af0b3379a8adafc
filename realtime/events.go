package realtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"chorus/protocol"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// A stream can also be Server-Sent Events: GET /api/v1/stream with Accept:
// text/event-stream, for clients whose WebSockets are blocked. It is the
// same stream in every way but the wire: the same open (subscribe, session,
// presence, ready), queue, writer, limits, session checks, slow-client rule
// and close reasons, through an eventStream in place of the WebSocket
// (frameWriter). Each frame is one event named after the frame's type
// (`event: status`), its JSON as the data, so that a browser's EventSource
// hands each type to its own listener; a status's event carries as its id
// a status id under which the stream sent every status (see write), which
// a client reconnecting gives back as Last-Event-ID to resume.
// The keepalive comment written every heartbeat interval stands in for the
// WebSocket's ping: a stream whose writes succeed is active. The close is
// a last frame, {"type": "close", "close_code", "reason"}, with the
// WebSocket's close code, then the end of the connection. What a client
// would send on a WebSocket comes by REST (Send), to whichever instance
// holds the stream.
//
// Like a WebSocket, an event stream takes its connection over from the
// HTTP server (Hijack): the request's goroutine, its deep stack and the
// server's buffers go, and one shallow goroutine per stream waits for the
// client to leave (awaitEnd).

// eventStream is a stream's connection, written as Server-Sent Events
// after the response's headers. The response has no length and is not
// chunked: it ends when the connection closes.
type eventStream struct {
	conn    net.Conn
	timeout time.Duration // the close frame's write

	mu     sync.Mutex // one write at a time: the writer's, the pinger's, the close
	closed bool       // by close: nothing more is written
	gone   bool       // the client closed its side first
	poll   *pollWait  // the poller's watch of the socket (watch); nil: a goroutine waits (wait)

	// The status events' ids (see write).
	newest  int64 // the newest status id written
	held    int64 // the id status events carry: every status up to it was sent
	told    int64 // the id of the last id line written
	filling bool  // a resume or a catch-up is writing, oldest first (fill)
	behind  bool  // since a fill began, until one ends whole: held may lag newest
}

var errEventStreamClosed = errors.New("event stream closed")

// The bytes of an event, and of the keepalive comment.
var (
	eventName = []byte("event: ")
	eventData = []byte("\ndata: ")
	eventEnd  = []byte("\n\n")
	keepalive = []byte(":\n\n")
)

func (e *eventStream) write(deadline time.Time, frame []byte, statusID int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errEventStreamClosed
	}
	id := int64(0)
	if statusID > 0 {
		// The newest status sent, should one come out of order (a publish
		// that waited out a failover): a client that gives it back as
		// Last-Event-ID holds every status the stream sent up to it. But a
		// resume or a catch-up sends older statuses after newer ones: each
		// of its events carries its own status's id, under which it sent
		// every one, and the newest is told once it is done (filled).
		e.newest = max(e.newest, statusID)
		switch {
		case e.filling:
			e.held = statusID
		case !e.behind:
			e.held = e.newest
		}
		id = e.held
	}
	return e.writeEvent(deadline, frame, id)
}

// fill says a resume or a catch-up begins writing: statuses oldest first,
// perhaps older than some written before.
func (e *eventStream) fill() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.filling, e.behind = true, true
}

// filled says the resume or catch-up under way ended: whole, when the
// stream has sent every status up to the newest it wrote, which it tells
// the client in an id line of its own (an EventSource takes the id without
// firing an event); else cut short, when the status events keep the id of
// the last status it wrote until a later one ends whole.
func (e *eventStream) filled(deadline time.Time, whole bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.filling = false
	if !whole {
		return nil
	}
	e.behind, e.held = false, e.newest
	if e.closed || e.told == e.newest {
		return nil
	}
	e.told = e.newest
	return e.send(deadline, append(strconv.AppendInt([]byte("id: "), e.newest, 10), eventEnd...))
}

// writeEvent writes one frame as an event by deadline, with e.mu held.
func (e *eventStream) writeEvent(deadline time.Time, frame []byte, id int64) error {
	if bytes.ContainsAny(frame, "\r\n") {
		// A line break ends a data line: JSON can lose every one it holds
		// between its tokens, and has none inside a string.
		var b bytes.Buffer
		if err := json.Compact(&b, frame); err != nil {
			return fmt.Errorf("frame for an event stream: %w", err)
		}
		frame = b.Bytes()
	}
	// One write: the connection under it is wrapped (the listener's
	// guards), so pieces would go as a write, and a packet, each.
	bp := framePool.Get().(*[]byte)
	out := (*bp)[:0]
	if id > 0 {
		out = strconv.AppendInt(append(out, "id: "...), id, 10)
		out = append(out, '\n')
		e.told = id
	}
	out = append(append(append(append(append(out, eventName...), frameType(frame)...), eventData...), frame...), eventEnd...)
	err := e.send(deadline, out)
	if cap(out) <= maxPooledFrame {
		*bp = out[:0]
		framePool.Put(bp)
	}
	return err
}

// frameType is the "type" of a frame, an event's name: what a frame made in
// Go starts with, else read from the top level of the object (a frame a
// Lua script encoded may list its keys in any order, and objects inside it
// have types of their own). A frame without one is a "message", the
// default event.
func frameType(frame []byte) []byte {
	const head = `{"type":"`
	if bytes.HasPrefix(frame, []byte(head)) {
		if n := bytes.IndexByte(frame[len(head):], '"'); n > 0 {
			if t := frame[len(head) : len(head)+n]; eventNameOK(t) {
				return t
			}
		}
	}
	var top struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(frame, &top) == nil && eventNameOK([]byte(top.Type)) {
		return []byte(top.Type)
	}
	return []byte("message")
}

// eventNameOK reports whether t names an event as the frame types do:
// lower-case letters and underscores.
func eventNameOK(t []byte) bool {
	for _, b := range t {
		if (b < 'a' || b > 'z') && b != '_' {
			return false
		}
	}
	return len(t) > 0
}

// send writes out by deadline, with e.mu held.
func (e *eventStream) send(deadline time.Time, out []byte) error {
	if err := e.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := e.conn.Write(out)
	return err
}

func (e *eventStream) ping(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errEventStreamClosed
	}
	d, _ := ctx.Deadline() // none: no deadline
	return e.send(d, keepalive)
}

// close writes the close frame, unless the client is gone, and closes the
// connection, which ends the response and awaitEnd's wait.
func (e *eventStream) close(code websocket.StatusCode, reason string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var err error
	if !e.gone {
		frame, _ := json.Marshal(protocol.Close{Type: protocol.TypeClose, Code: int(code), Reason: reason})
		err = e.writeEvent(time.Now().Add(e.timeout), frame, 0)
	}
	if e.poll != nil {
		e.poll.close() // before its descriptor can be another socket's
	}
	if cerr := e.conn.Close(); err == nil {
		err = cerr
	}
	return err
}

// watch has ended run, on a goroutine of its own, once the client leaves
// or sends anything, or the stream closes: ended waits (wait) no longer
// then, and until then no goroutine waits for the stream (see
// poll_linux.go). It reports false when the socket cannot be watched, or
// the stream closed already.
func (e *eventStream) watch(ended func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.poll = pollSocket(e.conn, false, ended)
	return e.poll != nil
}

// awaitEnd waits until the stream ends, reading the client's frames if it
// is a WebSocket (read), and returns how the client ended it, as read does.
func (c *conn) awaitEnd() websocket.CloseError {
	e, ok := c.ws.(*eventStream)
	if !ok {
		return c.read()
	}
	return e.wait()
}

// wait reads the connection until it ends: the client sends nothing after
// its request, so a read returns only when the client closes its side or
// this side closed the connection. A client that sends anything is ended
// as gone: nothing it sends is read.
func (e *eventStream) wait() websocket.CloseError {
	var b [1]byte
	_, _ = e.conn.Read(b[:])
	_ = e.conn.Close() // a byte came, or the connection ended: either way it is over
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return websocket.CloseError{} // this side closed it
	}
	e.gone = true
	return websocket.CloseError{Code: websocket.StatusAbnormalClosure, Reason: "client gone"}
}

// EventStreamHeader sets the headers of an event stream's answer in h:
// those the stream is sent with, and a HEAD of it answered.
func EventStreamHeader(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	h.Set("Connection", "close")     // the response ends with the connection
}

// acceptEvents answers the request with the event stream's headers and
// takes its connection over. The request is HTTP/1 (web answers any other
// before Serve).
func acceptEvents(timeout time.Duration) acceptFunc {
	return func(w http.ResponseWriter, r *http.Request, c *conn) (frameWriter, error) {
		h := w.Header()
		EventStreamHeader(h)
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
		nc, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "event streams need HTTP/1.1", http.StatusHTTPVersionNotSupported)
			return nil, fmt.Errorf("event stream: %w", err)
		}
		var head bytes.Buffer
		fmt.Fprintf(&head, "HTTP/%d.%d 200 OK\r\n", r.ProtoMajor, r.ProtoMinor)
		_ = h.Write(&head)
		head.WriteString("\r\n")
		e := &eventStream{conn: nc, timeout: timeout}
		// A client gone without closing fails a write once its keepalives
		// have gone unacknowledged as long as a WebSocket's missing pongs
		// take to close it.
		giveUpUnacked(nc, 3*c.hub.opts.HeartbeatInterval)
		// The server's read deadline is the request's; the stream's reads
		// wait for the client to leave.
		if err := nc.SetReadDeadline(time.Time{}); err != nil {
			nc.Close()
			return nil, fmt.Errorf("event stream: %w", err)
		}
		if err := e.send(time.Now().Add(timeout), head.Bytes()); err != nil {
			nc.Close()
			return nil, fmt.Errorf("event stream: %w", err)
		}
		return e, nil
	}
}

// ServeEvents opens one stream of uid, authenticated before the call with
// the session sessionID, as Server-Sent Events. With resume set, the stream
// first sends the home timeline after `after`, as a resume frame would
// (Last-Event-ID), before any live frame. The caller has checked the
// request's Origin, and that the request is HTTP/1.
//
// When it does not open the stream, it answers nothing and returns why, as
// Serve does; it returns nil once the request is answered.
func (h *Hub) ServeEvents(w http.ResponseWriter, r *http.Request, uid int64, sessionID string, after int64, resume bool) error {
	c, ready, err := h.start(w, r, uid, sessionID, acceptEvents(h.opts.WriteTimeout), func(c *conn) {
		if resume {
			// Queued before the stream subscribes, so ahead of every live
			// frame: the event ids it sends grow, and one a client gives
			// back misses nothing older. It is taken from the user's
			// resume budget only once the stream opened (payResume): a
			// stream refused spends none.
			c.enqueue(outgoing{resume: true, after: after, unpaid: true})
		}
	})
	if c == nil {
		return err
	}
	h.Stats.EventStreams.Add(1)
	// As Serve's: while idle the stream holds no goroutine of its own; the
	// instance's poller waits for the client to leave, and run then finds
	// it gone. Where the socket cannot be watched, run waits for it.
	run := func() {
		defer h.Stats.EventStreams.Add(-1)
		c.run()
	}
	go func() {
		c.start(withStreamID(ready, c.id))
		if !c.ws.(*eventStream).watch(run) {
			run()
		}
	}()
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
// the stream had read it, and counts as the stream's activity. It goes
// through the user's channel, which only the hub publishes such frames on,
// even to a stream of this instance: Redis orders the frames posted for a
// stream through every instance, and the instance that holds it acts on
// them in that order (posted), so that a frame answered 202 is never
// overtaken by one posted after it. What the frame asks fails on the
// stream as an error frame, as on a WebSocket.
//
// It returns a *FrameError for a frame the stream would refuse,
// ErrUnknownStream when no instance holds a stream of the user (a stale id
// of a user who has streams elsewhere is dropped there), or an error
// wrapping ErrUnavailable.
func (h *Hub) Send(ctx context.Context, uid int64, stream string, f protocol.ClientFrame) error {
	if e := checkFrame(f); e != nil {
		return e
	}
	id, err := uuid.Parse(stream)
	if err != nil { // every stream's id is one (newConn)
		return ErrUnknownStream
	}
	// As a stream's id is written (newConn): another form of it (upper
	// case, braces, a urn:uuid: prefix) names the same stream.
	stream = id.String()
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

// posted acts on a frame posted for one of u's streams (Send), if that
// stream is here. Called by the router with h.mu held:
// the frame is handled off the router, since a resume asks Redis for its
// budget, but after the frames posted for the stream before it, as a
// stream reads its own frames one after another (a watch, then an
// unwatch, ends unwatched).
func (h *Hub) posted(u *local, ev event) {
	if ev.Frame == nil {
		return
	}
	for c := range u.conns {
		if c.id == ev.Stream {
			h.postedMu.Lock()
			waiting, busy := h.posting[c]
			h.posting[c] = append(waiting, *ev.Frame)
			h.postedMu.Unlock()
			if !busy {
				go h.handlePosted(c)
			}
			return
		}
	}
}

// handlePosted handles the frames posted for c, in order, until none
// waits. One runs for a stream at a time: its entry in h.posting, empty or
// not, says it runs.
func (h *Hub) handlePosted(c *conn) {
	for {
		h.postedMu.Lock()
		frames := h.posting[c]
		if len(frames) == 0 {
			delete(h.posting, c)
			h.postedMu.Unlock()
			return
		}
		h.posting[c] = nil
		h.postedMu.Unlock()
		for _, f := range frames {
			c.active(time.Now()) // not under h.mu (locks.go)
			c.handle(f)
		}
	}
}
