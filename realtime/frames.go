package realtime

import (
	"bytes"
	"encoding/json"

	"chorus/protocol"
)

// The stream's frames and close codes are protocol's; these build the
// frames the hub makes itself.

// watchingGlobalFrame answers a watch of the global timeline once it is
// live.
var watchingGlobalFrame, _ = json.Marshal(protocol.Watching{Type: protocol.TypeWatching, Timeline: protocol.TimelineGlobal})

// watchingThreadFrame answers a watch of thread once it is live.
func watchingThreadFrame(thread int64) []byte {
	b, _ := json.Marshal(protocol.Watching{Type: protocol.TypeWatching, Timeline: protocol.TimelineThread, Thread: thread})
	return b
}

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
	Status struct {
		ID  int64 `json:"id"` // 0: no status
		UID int64 `json:"uid"`
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

// statusFrameHead begins every status frame as protocol's types encode it:
// StatusFrame's type, then its status, whose id comes first and its
// author's uid second (statusUIDField).
var (
	statusFrameHead = []byte(`{"type":"` + protocol.TypeStatus + `","status":{"id":`)
	statusUIDField  = []byte(`,"uid":`)
)

// parseEvent reads what the router needs of a message. A status frame,
// nearly every message, is read from its first bytes alone, the type, the
// status id and its author where protocol's encoding puts them: decoding
// the whole frame, once for each follower, was a fifth of the CPU a
// delivery cost. Any other message, a status frame in another shape among
// them, is decoded in full.
func parseEvent(payload []byte) (event, error) {
	if rest, ok := bytes.CutPrefix(payload, statusFrameHead); ok {
		id, rest, ok := leadingID(rest)
		if ok {
			rest, ok = bytes.CutPrefix(rest, statusUIDField)
		}
		var uid int64
		if ok {
			uid, _, ok = leadingID(rest)
		}
		if ok {
			var ev event
			ev.Type, ev.Status.ID, ev.Status.UID = protocol.TypeStatus, id, uid
			return ev, nil
		}
	}
	return decodeEvent(payload)
}

// leadingID reads the positive number b starts with, up to 18 digits
// (which no int64 overflows; an id has fewer), ended by ',' or '}', and
// returns it and what follows it.
func leadingID(b []byte) (int64, []byte, bool) {
	var id int64
	end := 0
	for ; end < len(b) && end < 18 && '0' <= b[end] && b[end] <= '9'; end++ {
		id = id*10 + int64(b[end]-'0')
	}
	if id > 0 && b[0] != '0' && end < len(b) && (b[end] == ',' || b[end] == '}') {
		return id, b[end:], true
	}
	return 0, nil, false
}

// repostOfField is in a status frame only as the key of a repost entry's
// original: a string holding it would hold its quotes escaped.
var repostOfField = []byte(`"repost_of":`)

// originalAuthor returns the author of a repost entry's original, read from
// its status frame; 0 for a frame of any other status. It looks through the
// whole frame, so only a stream whose user hides someone asks it.
func originalAuthor(frame []byte) int64 {
	if !bytes.Contains(frame, repostOfField) {
		return 0
	}
	var f struct {
		Status struct {
			RepostOf *struct {
				UID int64 `json:"uid"`
			} `json:"repost_of"`
		} `json:"status"`
	}
	if json.Unmarshal(frame, &f) != nil || f.Status.RepostOf == nil {
		return 0
	}
	return f.Status.RepostOf.UID
}

// decodeEvent decodes a message in full. It is a function of its own so
// that parseEvent's event, which json never sees, stays on the stack.
func decodeEvent(payload []byte) (event, error) {
	var ev event
	err := json.Unmarshal(payload, &ev)
	return ev, err
}
