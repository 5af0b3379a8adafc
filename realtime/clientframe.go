package realtime

import (
	"encoding/json"
	"strconv"

	"chorus/protocol"
)

// FrameError is a client frame refused: its error code and message, sent as
// an error frame on the stream it came on, or the answer to the REST call
// that carried it (Hub.Send).
type FrameError struct {
	Code    string // a protocol.Code* error code
	Message string
}

func (e *FrameError) Error() string { return e.Code + ": " + e.Message }

// checkFrame says what is wrong with a client frame, or nil when the stream
// can act on it.
func checkFrame(f protocol.ClientFrame) *FrameError {
	switch f.Type {
	case protocol.TypeHeartbeat:
	case protocol.TypeResume:
		if _, ok := parseAfter(f.After); !ok {
			return &FrameError{protocol.CodeInvalidResume, `"after" must be a status id, a whole number from 0.`}
		}
	case protocol.TypeWatch, protocol.TypeUnwatch:
		switch f.Timeline {
		case protocol.TimelineGlobal:
		case protocol.TimelineThread:
			if _, ok := parseThread(f.Thread); !ok && (f.Type == protocol.TypeWatch || f.Thread != nil) {
				return &FrameError{protocol.CodeInvalidWatch, `"thread" must be a status id, a whole number from 1.`}
			}
		default:
			return &FrameError{protocol.CodeInvalidWatch, `"timeline" must be "global" or "thread", the timelines a stream may watch.`}
		}
	default:
		return &FrameError{protocol.CodeUnknownType, "Unknown frame type " + strconv.Quote(f.Type) + "; expected heartbeat, resume, watch or unwatch."}
	}
	return nil
}

// handle acts on a frame the client sent, read from its WebSocket or posted
// by REST for its stream: what fails is told on the stream as an error
// frame, which leaves the stream open. It may call Redis (a resume's
// budget), so the router never calls it itself.
func (c *conn) handle(f protocol.ClientFrame) {
	h := c.hub
	if e := checkFrame(f); e != nil {
		c.enqueue(outgoing{frame: errorFrameJSON(e.Code, e.Message)})
		return
	}
	switch f.Type {
	case protocol.TypeHeartbeat:
		// Every frame counts as activity; this one does no more.
		h.Stats.Heartbeats.Add(1)
	case protocol.TypeResume:
		after, _ := parseAfter(f.After)
		c.resume(after)
	case protocol.TypeWatch, protocol.TypeUnwatch:
		on := f.Type == protocol.TypeWatch
		if f.Timeline == protocol.TimelineThread {
			thread, _ := parseThread(f.Thread)
			h.watchThread(c, thread, on)
			return
		}
		h.watch(c, on)
	}
}

// parseThread reads a thread watch's "thread": a status id, from 1.
func parseThread(raw *json.RawMessage) (int64, bool) {
	n, ok := parseAfter(raw)
	return n, ok && n > 0
}

// resume queues a resume after `after`, once the user's resume budget
// allows it; else the client is told why not.
func (c *conn) resume(after int64) {
	if c.payResume() {
		c.enqueue(outgoing{resume: true, after: after})
	}
}
