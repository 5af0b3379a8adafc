// Package protocol is what Chorus says to its clients: the JSON of the REST
// API's users, statuses and errors, every frame of the stream in either
// direction with its type, the stream's close codes, and the name of the
// pub/sub channel that carries a user's frames between instances.
//
// It is the bottom floor of the module: it imports the standard library
// alone, and every other package may import it. docs/API.md describes the
// stream in the order of frames.go.
package protocol

import "strconv"

// UserChannel is the pub/sub channel, under a deployment's key prefix, on
// which every frame for uid's streams is published, by whichever instance
// makes it, and which the instances holding uid's streams subscribe to.
func UserChannel(prefix string, uid int64) string {
	return UserChannelPrefix(prefix) + strconv.FormatInt(uid, 10)
}

// UserChannelPrefix is what every user channel name starts with, for
// scripts that build them from a user id.
func UserChannelPrefix(prefix string) string { return prefix + "events:user:" }

// AuthorChannel is the pub/sub channel on which the statuses (and their
// deletions) of uid are published once each when uid's followers pull them
// rather than have them pushed: the instances subscribe to it on behalf of
// their streams' users who follow uid, and route its frames to them.
func AuthorChannel(prefix string, uid int64) string {
	return AuthorChannelPrefix(prefix) + strconv.FormatInt(uid, 10)
}

// AuthorChannelPrefix is what every author channel name starts with.
func AuthorChannelPrefix(prefix string) string { return prefix + "events:author:" }

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
	// another) and resume.
	CloseGoingAway = 1001
	// CloseProtocolError: the client sent a frame it did not mask.
	CloseProtocolError = 1002
	// CloseBadData: the client sent a text frame that is not UTF-8.
	CloseBadData = 1007
	// ClosePolicy: the session ended (reason ReasonSignedOut or
	// ReasonSessionEnded), or the client sent too many frames, pings,
	// pongs and its close included (ReasonTooManyFrames).
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
)

// MaxFrameBytes is the largest frame a client may send.
const MaxFrameBytes = 64 << 10
