package realtime

import (
	"sync/atomic"
	"testing"

	"chorus/protocol"

	"github.com/coder/websocket"
)

// A connection closes once, for the first reason given: that reason alone
// sets its close frame and adds one to its counter, and later closes do
// nothing.
func TestCloseReason(t *testing.T) {
	for _, c := range []struct {
		why     closeReason
		code    websocket.StatusCode
		text    string
		counter func(*Stats) *atomic.Int64
	}{
		{closeShutdown, protocol.CloseGoingAway, "server shutting down", nil},
		{closeSlow, protocol.CloseTryLater, "too slow: reconnect and resume", func(s *Stats) *atomic.Int64 { return &s.SlowClosed }},
		{closeWriteFailed, protocol.CloseTryLater, "write failed", nil},
		{closeTooBig, protocol.CloseTooBig, "frame over the size limit", nil},
		{closeFlood, protocol.ClosePolicy, protocol.ReasonTooManyFrames, func(s *Stats) *atomic.Int64 { return &s.FloodClosed }},
		{closeUnmasked, protocol.CloseProtocolError, "unmasked frame", func(s *Stats) *atomic.Int64 { return &s.ProtocolClosed }},
		{closeNotUTF8, protocol.CloseBadData, "text frame not UTF-8", func(s *Stats) *atomic.Int64 { return &s.ProtocolClosed }},
		{closeIdle, protocol.CloseHeartbeatTimeout, "no heartbeat", func(s *Stats) *atomic.Int64 { return &s.IdleClosed }},
		{closeSignedOut, protocol.ClosePolicy, protocol.ReasonSignedOut, func(s *Stats) *atomic.Int64 { return &s.SessionClosed }},
		{closeSessionEnded, protocol.ClosePolicy, protocol.ReasonSessionEnded, func(s *Stats) *atomic.Int64 { return &s.SessionClosed }},
		{closeSuspended, protocol.ClosePolicy, protocol.ReasonSuspended, func(s *Stats) *atomic.Int64 { return &s.SessionClosed }},
	} {
		t.Run(c.code.String()+" "+c.text, func(t *testing.T) {
			h := &Hub{opts: Options{QueueSize: 1, FrameRate: DefaultFrameRate, FrameBurst: DefaultFrameBurst}}
			conn := newConn(h, 1, "session")
			if !conn.closeSoon(c.why) {
				t.Fatal("the first close did not close the connection")
			}
			for _, again := range []closeReason{closeShutdown, closeSlow, closeIdle, c.why} {
				if conn.close(again) {
					t.Fatalf("a second close, for %v, closed it again", again)
				}
			}
			why, frame := conn.closedWith()
			if why != c.why || frame.Code != c.code || frame.Reason != c.text {
				t.Errorf("closed for %v with %d %q, want %v with %d %q", why, frame.Code, frame.Reason, c.why, c.code, c.text)
			}
			var counted int64
			for _, n := range []*atomic.Int64{&h.Stats.SlowClosed, &h.Stats.FloodClosed, &h.Stats.ProtocolClosed, &h.Stats.IdleClosed, &h.Stats.SessionClosed} {
				counted += n.Load()
			}
			switch {
			case c.counter == nil && counted != 0:
				t.Errorf("%d closes counted, want none", counted)
			case c.counter != nil && (counted != 1 || c.counter(&h.Stats).Load() != 1):
				t.Errorf("%d closes counted, want 1, in its own counter", counted)
			}
			if !conn.isClosed() {
				t.Error("the connection's life goes on after its close")
			}
		})
	}
}
