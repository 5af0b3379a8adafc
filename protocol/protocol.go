// Package protocol is what Chorus says to its clients: the JSON of the REST
// API's users, statuses and errors, every frame of the stream in either
// direction with its type, and the stream's close codes. The channels that
// carry frames between instances are named by package bus.
//
// It is the bottom floor of the module: it imports the standard library
// alone, and every other package may import it. docs/API.md describes the
// stream in the order of frames.go.
package protocol

// Error is the API's one error shape, {"code", "message"}: code is stable
// and meant for programs, message is a sentence meant for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorBody is the body of every REST error answer, and of a stream request
// refused before its upgrade: {"error": {"code", "message"}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Close codes of the stream. Those below 4000 are RFC 6455's.
const (
	// CloseNormal: the client closed the stream.
	CloseNormal = 1000
	// CloseGoingAway: the instance is shutting down; reconnect (to
	// another) and resume. A drain's close (ReasonDraining) comes after a
	// Reconnect frame, which says when.
	CloseGoingAway = 1001
	// CloseProtocolError: the client sent a frame it did not mask.
	CloseProtocolError = 1002
	// CloseBadData: the client sent a text frame that is not UTF-8.
	CloseBadData = 1007
	// ClosePolicy: the session ended (reason ReasonSignedOut or
	// ReasonSessionEnded), the account was suspended (ReasonSuspended),
	// or the client sent too many frames, pings, pongs and its close
	// included (ReasonTooManyFrames).
	ClosePolicy = 1008
	// CloseTooBig: the client sent a frame over MaxFrameBytes.
	CloseTooBig = 1009
	// CloseTryLater: the client was too slow for its own stream (its queue
	// overflowed), or a write failed; reconnect and resume.
	CloseTryLater = 1013
	// CloseHeartbeatTimeout: no frame and no pong for three heartbeat
	// intervals.
	CloseHeartbeatTimeout = 4000
)

// Close reasons the API names.
const (
	ReasonSignedOut     = "signed out"
	ReasonSessionEnded  = "session ended"
	ReasonTooManyFrames = "too many frames"
	ReasonSuspended     = "account suspended"
	ReasonDraining      = "server draining: reconnect"
)

// MaxFrameBytes is the largest frame a client may send.
const MaxFrameBytes = 64 << 10
