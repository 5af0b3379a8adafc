package realtime

import (
	"log/slog"
	"sync/atomic"

	"chorus/protocol"

	"github.com/coder/websocket"
)

// closeReason is why a stream closed. Each reason names, in closeRules, its
// close code, its text, the counter of Stats it adds one to and the level
// of its "stream closed" line, so that a close is told the same way on the
// wire, in the metrics and in the log; conn.end is the one place that closes
// a stream for one.
type closeReason uint8

const (
	// notClosed: the stream has not closed.
	notClosed closeReason = iota
	// closeClient: the client sent its close frame, or its connection ended
	// without one; the code is the client's (1000 when it sent none).
	closeClient
	// closeShutdown: the instance is shutting down (Hub.Shutdown).
	closeShutdown
	// closeSlow: the stream's queue overflowed (conn.enqueue).
	closeSlow
	// closeWriteFailed: a frame's write failed or ran past WriteTimeout.
	closeWriteFailed
	// closeTooBig: the client sent a frame over protocol.MaxFrameBytes.
	closeTooBig
	// closeFlood: the client sent frames faster than
	// Options.FrameRate allows (meteredConn).
	closeFlood
	// closeUnmasked: the client sent a frame it did not mask (meteredConn).
	closeUnmasked
	// closeNotUTF8: the client sent a text frame that is not UTF-8.
	closeNotUTF8
	// closeIdle: no frame and no pong for three heartbeat intervals.
	closeIdle
	// closeSignedOut: the stream's session was signed out.
	closeSignedOut
	// closeSessionEnded: the stream's session was found gone by a check,
	// was ended by a change to its account (a new password), or predates a
	// user created anew under its uid.
	closeSessionEnded
	// closeSuspended: an admin suspended the stream's account.
	closeSuspended
	// closeDrain: the instance is draining (Hub.Drain); the client was
	// sent a reconnect frame first.
	closeDrain
)

// closeRule is how one reason closes a stream.
type closeRule struct {
	code websocket.StatusCode // the close frame's code
	text string               // the close frame's reason
	// counter is the counter of Stats the close adds one to; nil: none.
	counter func(*Stats) *atomic.Int64
	level   slog.Level // of the stream's closing line
}

// closeRules are the reasons' rules. Every close logs at Info: a client that
// misbehaves or a network too slow is nothing for an operator to act on one
// by one; the counters show a trend.
var closeRules = [...]closeRule{
	notClosed:         {},
	closeClient:       {code: websocket.StatusNormalClosure, level: slog.LevelInfo},
	closeShutdown:     {code: protocol.CloseGoingAway, text: "server shutting down", level: slog.LevelInfo},
	closeSlow:         {code: protocol.CloseTryLater, text: "too slow: reconnect and resume", counter: func(s *Stats) *atomic.Int64 { return &s.SlowClosed }, level: slog.LevelInfo},
	closeWriteFailed:  {code: protocol.CloseTryLater, text: "write failed", level: slog.LevelInfo},
	closeTooBig:       {code: protocol.CloseTooBig, text: "frame over the size limit", level: slog.LevelInfo},
	closeFlood:        {code: protocol.ClosePolicy, text: protocol.ReasonTooManyFrames, counter: func(s *Stats) *atomic.Int64 { return &s.FloodClosed }, level: slog.LevelInfo},
	closeUnmasked:     {code: protocol.CloseProtocolError, text: "unmasked frame", counter: func(s *Stats) *atomic.Int64 { return &s.ProtocolClosed }, level: slog.LevelInfo},
	closeNotUTF8:      {code: protocol.CloseBadData, text: "text frame not UTF-8", counter: func(s *Stats) *atomic.Int64 { return &s.ProtocolClosed }, level: slog.LevelInfo},
	closeIdle:         {code: protocol.CloseHeartbeatTimeout, text: "no heartbeat", counter: func(s *Stats) *atomic.Int64 { return &s.IdleClosed }, level: slog.LevelInfo},
	closeSignedOut:    {code: protocol.ClosePolicy, text: protocol.ReasonSignedOut, counter: func(s *Stats) *atomic.Int64 { return &s.SessionClosed }, level: slog.LevelInfo},
	closeSessionEnded: {code: protocol.ClosePolicy, text: protocol.ReasonSessionEnded, counter: func(s *Stats) *atomic.Int64 { return &s.SessionClosed }, level: slog.LevelInfo},
	closeSuspended:    {code: protocol.ClosePolicy, text: protocol.ReasonSuspended, counter: func(s *Stats) *atomic.Int64 { return &s.SessionClosed }, level: slog.LevelInfo},
	closeDrain:        {code: protocol.CloseGoingAway, text: protocol.ReasonDraining, counter: func(s *Stats) *atomic.Int64 { return &s.Drained }, level: slog.LevelInfo},
}

// rule is how r closes a stream.
func (r closeReason) rule() closeRule { return closeRules[r] }

// closeError is the close frame r sends.
func (r closeReason) closeError() websocket.CloseError {
	return websocket.CloseError{Code: r.rule().code, Reason: r.rule().text}
}
