package realtime

import (
	"encoding/json"

	"chorus/protocol"
)

// The stream's frames and close codes are protocol's; these build the
// frames the hub makes itself.

// watchingGlobalFrame answers a watch of the global timeline once it is
// live.
var watchingGlobalFrame, _ = json.Marshal(protocol.Watching{Type: protocol.TypeWatching, Timeline: protocol.TimelineGlobal})

func errorFrameJSON(code, message string) []byte {
	b, _ := json.Marshal(protocol.ErrorFrame{Type: protocol.TypeError, Error: protocol.Error{Code: code, Message: message}})
	return b
}

func statusFrameJSON(st protocol.Status) []byte {
	b, _ := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: st})
	return b
}

func serviceFrameJSON(available bool) []byte {
	b, _ := json.Marshal(protocol.Service{Type: protocol.TypeService, Available: available})
	return b
}

// event is what the router needs to know of a message on a user's channel,
// whatever its type.
type event struct {
	Type   string `json:"type"`
	Status *struct {
		ID int64 `json:"id"`
	} `json:"status"`
	Session string `json:"session"` // protocol.TypeSessionEnded's
	Ended   bool   `json:"ended"`   // protocol.TypeSessionEnded's: ended by its account, not signed out
	Author  int64  `json:"author"`  // protocol.TypePullAdded's and TypePullRemoved's
	// User and Online are a presence frame's.
	User *struct {
		ID int64 `json:"id"`
	} `json:"user"`
	Online bool `json:"online"`
	// Stream and Frame are a typePostedFrame's (events.go).
	Stream string                `json:"stream"`
	Frame  *protocol.ClientFrame `json:"frame"`
}
