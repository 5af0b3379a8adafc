package realtime

import (
	"encoding/json"
	"time"

	"chorus/social"
)

// Close codes of the stream, beyond those of RFC 6455 the API names.
const (
	// StatusHeartbeatTimeout closes a connection silent for three
	// heartbeat intervals.
	StatusHeartbeatTimeout = 4000
)

// FriendUser is the short form of a user in presence items.
type FriendUser struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name"`
}

// OnlineFriend is one item of the online-friends list, in the ready frame and
// in GET /friends/online.
type OnlineFriend struct {
	User     FriendUser `json:"user"`
	LastSeen time.Time  `json:"last_seen"`
}

// readyFrame is the first frame of every connection.
type readyFrame struct {
	Type                string         `json:"type"`
	User                any            `json:"user"`
	HeartbeatIntervalMS int64          `json:"heartbeat_interval_ms"`
	OnlineFriends       []OnlineFriend `json:"online_friends"`
}

type errorFrame struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func errorFrameJSON(code, message string) []byte {
	b, _ := json.Marshal(errorFrame{Type: "error", Code: code, Message: message})
	return b
}

func statusFrameJSON(st social.Status) []byte {
	b, _ := json.Marshal(social.Event{Type: social.EventStatus, Status: &st})
	return b
}

// clientFrame is any frame a client sends.
type clientFrame struct {
	Type  string           `json:"type"`
	After *json.RawMessage `json:"after"`
}

// event is what the router needs to know of a message on a user's channel.
type event struct {
	Type   string `json:"type"`
	Status *struct {
		ID int64 `json:"id"`
	} `json:"status"`
	Session string `json:"session"`
	// User and Online are a presence frame's.
	User *struct {
		ID int64 `json:"id"`
	} `json:"user"`
	Online bool `json:"online"`
}

// Internal event types, handled by the hub and never forwarded.
const eventSessionEnded = "session_ended"
