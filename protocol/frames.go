package protocol

import (
	"encoding/json"
	"time"
)

// Every frame is one JSON object in a text frame, with its type in "type".

// Frames the server sends, in the order docs/API.md gives them.
const (
	TypeReady         = "ready"
	TypeStatus        = "status"
	TypeStatusDeleted = "status_deleted"
	TypePresence      = "presence"
	TypeFriendRemoved = "friend_removed"
	TypeFollowed      = "followed"
	TypeProfile       = "profile"
	// TypeRelation: a block or mute of the user's was made or taken back,
	// on any of their devices.
	TypeRelation = "relation"
	TypeService  = "service"
	TypeError    = "error"

	TypeNotification        = "notification"
	TypeNotificationRemoved = "notification_removed"
	// TypeNotificationsRemoved: many notifications went at once, each
	// without a frame of its own (a block or a mute took the other's).
	TypeNotificationsRemoved = "notifications_removed"
	TypeNotificationsRead    = "notifications_read"

	TypeWatching            = "watching"
	TypeGlobalStatus        = "global_status"
	TypeGlobalStatusDeleted = "global_status_deleted"
	TypeThreadStatus        = "thread_status"
	TypeThreadStatusDeleted = "thread_status_deleted"

	TypeReconnect = "reconnect"
	// TypeClose is the last frame of an event stream (Server-Sent Events),
	// which has no close frame of its own.
	TypeClose = "close"
)

// Close ends an event stream: Code and Reason are those a WebSocket's close
// frame would carry.
type Close struct {
	Type   string `json:"type"`       // TypeClose
	Code   int    `json:"close_code"` // not "code": an error frame's is a string
	Reason string `json:"reason"`
}

// Ready is the first frame of every stream, once.
type Ready struct {
	Type                string         `json:"type"` // TypeReady
	User                UserView       `json:"user"` // with the user's own presence
	HeartbeatIntervalMS int64          `json:"heartbeat_interval_ms"`
	OnlineFriends       []OnlineFriend `json:"online_friends"`
	UnreadNotifications int64          `json:"unread_notifications"`
	// Stream is an event stream's id (Server-Sent Events only), which the
	// REST calls that stand in for client frames name.
	Stream string `json:"stream,omitempty"`
}

// StatusFrame: a status has just entered the user's home timeline.
type StatusFrame struct {
	Type   string `json:"type"` // TypeStatus
	Status Status `json:"status"`
}

// StatusDeleted: a status of the user's home timeline was deleted, or
// left it (an unfollow, a block). ReplyTo, for a deleted reply, is the
// status it answered, whose replies count went down.
type StatusDeleted struct {
	Type    string `json:"type"` // TypeStatusDeleted
	ID      int64  `json:"id"`
	ReplyTo int64  `json:"reply_to,omitempty"`
	// UID is the author's, on a deletion by its author; none on a status
	// that left a timeline without being deleted.
	UID int64 `json:"uid,omitempty"`
}

// PresenceFrame: a friend came online or went offline, or a follow has just
// made someone a friend (LastSeen nil for someone never seen).
type PresenceFrame struct {
	Type     string     `json:"type"` // TypePresence
	User     UserRef    `json:"user"`
	Online   bool       `json:"online"`
	LastSeen *time.Time `json:"last_seen"`
}

// FriendRemoved: an unfollow ended a friendship; User leaves the friends
// list.
type FriendRemoved struct {
	Type string  `json:"type"` // TypeFriendRemoved
	User UserRef `json:"user"`
}

// Relation: the user blocked or muted User (On), or took it back (Kind
// RelationBlock or RelationMute): their streams on every device are told,
// the one who is blocked or muted is not.
type Relation struct {
	Type string  `json:"type"` // TypeRelation
	Kind string  `json:"kind"`
	User UserRef `json:"user"`
	On   bool    `json:"on"`
}

// Relation kinds.
const (
	RelationBlock = "block"
	RelationMute  = "mute"
)

// Followed: someone started following the user; YouFollow says whether the
// user follows them already. social/follow_followee.lua publishes it.
type Followed struct {
	Type      string  `json:"type"` // TypeFollowed
	User      UserRef `json:"user"`
	YouFollow bool    `json:"you_follow"`
}

// ProfileFrame: a user (the stream's own, or a friend) changed their name.
type ProfileFrame struct {
	Type string  `json:"type"` // TypeProfile
	User UserRef `json:"user"`
}

// NotificationFrame: a notification was stored for the user.
type NotificationFrame struct {
	Type         string       `json:"type"` // TypeNotification
	Notification Notification `json:"notification"`
}

// NotificationRemoved: what a notification told of was undone (an unlike,
// an unfollow, a reply deleted); the notification is gone. CountsOf is
// the status whose counts the undoing changed: the status unliked or
// unreposted, the one a deleted reply answered (0 for none).
type NotificationRemoved struct {
	Type     string `json:"type"` // TypeNotificationRemoved
	ID       int64  `json:"id"`
	CountsOf int64  `json:"counts_of,omitempty"`
}

// NotificationsRemoved: the notifications IDs are gone, all at once (a
// block or a mute took those from the other account: at most the 1000 a
// user keeps, in no order).
type NotificationsRemoved struct {
	Type string  `json:"type"` // TypeNotificationsRemoved
	IDs  []int64 `json:"ids"`
}

// NotificationsRead: a session of the user moved the read marker to
// LastRead; every other session clears its unread marks up to it.
type NotificationsRead struct {
	Type     string `json:"type"` // TypeNotificationsRead
	LastRead int64  `json:"last_read"`
}

// Watching: the stream's watch of Timeline is live: every change to it from
// now on comes as a frame. The client reads what it missed before (the
// timeline after the newest status it holds) on each one, which also comes
// again after the instance's subscription was lost and made again.
type Watching struct {
	Type     string `json:"type"`             // TypeWatching
	Timeline string `json:"timeline"`         // TimelineGlobal or TimelineThread
	Thread   int64  `json:"thread,omitempty"` // TimelineThread's: the thread watched
}

// GlobalStatus: a status has just entered the global timeline. Sent to
// streams that watch it.
type GlobalStatus struct {
	Type   string `json:"type"` // TypeGlobalStatus
	Status Status `json:"status"`
}

// GlobalStatusDeleted: a status was deleted, and left the global timeline
// if it was there. Sent to streams that watch it.
type GlobalStatusDeleted struct {
	Type    string `json:"type"` // TypeGlobalStatusDeleted
	ID      int64  `json:"id"`
	ReplyTo int64  `json:"reply_to,omitempty"` // as StatusDeleted's
}

// ThreadStatus: a reply has just been posted in Thread, the conversation
// that starts with that status (its first status, which a thread's context
// names). Sent to streams that watch the thread.
type ThreadStatus struct {
	Type   string `json:"type"` // TypeThreadStatus
	Thread int64  `json:"thread"`
	Status Status `json:"status"`
}

// ThreadStatusDeleted: a status of Thread was deleted (Thread itself, or
// one of its replies). Sent to streams that watch the thread.
type ThreadStatusDeleted struct {
	Type    string `json:"type"` // TypeThreadStatusDeleted
	Thread  int64  `json:"thread"`
	ID      int64  `json:"id"`
	ReplyTo int64  `json:"reply_to,omitempty"` // as StatusDeleted's
}

// Service: whether the instance can serve (reach Redis). Sent on a change
// only; the ready frame means available.
type Service struct {
	Type      string `json:"type"` // TypeService
	Available bool   `json:"available"`
}

// Reconnect: the instance is draining and closes the stream next, with
// CloseGoingAway and ReasonDraining. The client reconnects after a delay
// drawn at random between 0 and WithinMS (0: at once), to whichever
// instance the load balancer picks, and resumes.
type Reconnect struct {
	Type     string `json:"type"` // TypeReconnect
	WithinMS int64  `json:"within_ms"`
}

// ErrorFrame: a frame the client sent was not acted on; the stream stays
// open. Its code is one of the Code constants.
type ErrorFrame struct {
	Type string `json:"type"` // TypeError
	Error
}

// Codes of error frames.
const (
	CodeInvalidJSON   = "invalid_json"   // not a JSON object
	CodeInvalidFrame  = "invalid_frame"  // a binary frame
	CodeUnknownType   = "unknown_type"   // a type not below
	CodeInvalidResume = "invalid_resume" // after missing, negative or not an integer
	CodeResumeFailed  = "resume_failed"  // the timeline could not be read
	CodeRateLimited   = "rate_limited"   // too many resumes
	CodeInvalidWatch  = "invalid_watch"  // a watch or unwatch of no timeline that can be watched
)

// Frames a client sends.
const (
	// TypeHeartbeat is accepted and counts as activity, like any frame;
	// WebSocket pongs keep a stream alive without it.
	TypeHeartbeat = "heartbeat"
	// TypeResume asks for every home-timeline status after After, oldest
	// first, then live, with no gap and no duplicate.
	TypeResume = "resume"
	// TypeWatch asks for the changes of Timeline (TimelineGlobal, or
	// TimelineThread with Thread) as frames, from the Watching frame that
	// answers it until TypeUnwatch.
	TypeWatch   = "watch"
	TypeUnwatch = "unwatch"
)

// The timelines a stream may watch: every user's statuses, and one
// conversation's replies and deletions (a stream watches one thread at a
// time).
const (
	TimelineGlobal = "global"
	TimelineThread = "thread"
)

// ClientFrame is any frame a client sends: {"type": "heartbeat"},
// {"type": "resume", "after": 41}, {"type": "watch", "timeline":
// "global"} or {"type": "watch", "timeline": "thread", "thread": 17}.
// After and Thread are left raw so that a bad value gets its own error
// code.
type ClientFrame struct {
	Type     string           `json:"type"`
	After    *json.RawMessage `json:"after,omitempty"`
	Timeline string           `json:"timeline,omitempty"` // TypeWatch's and TypeUnwatch's
	Thread   *json.RawMessage `json:"thread,omitempty"`   // a TimelineThread watch's: the thread's id
}

// Messages published on user channels for the instances alone, never sent
// to a client.
const (
	// TypeUserCreated is published on a new user's channel at sign-up: a
	// stream open under that uid predates the user (Redis lost its data
	// and gave the id again) and is closed.
	TypeUserCreated = "user_created"
	// TypeSessionEnded closes the streams opened with Session, on every
	// instance: the session signed out.
	TypeSessionEnded = "session_ended"
	// TypePullAdded tells the instances holding a user's streams that the
	// user now follows Author, whose statuses are pulled: the instances
	// subscribe to Author's channel (AuthorChannel) on the user's behalf.
	TypePullAdded = "pull_added"
	// TypePullRemoved: the user stopped following Author.
	TypePullRemoved = "pull_removed"
	// TypeHiddenChanged tells the instances holding a user's streams that
	// whose statuses the user may not see changed (a block or a mute, made
	// or taken back, by the user or a block of them): each of the user's
	// streams reads it again. To the one who made the change, a relation
	// frame follows it, for the client (announceRelation).
	TypeHiddenChanged = "hidden_changed"
	// TypeAccountSuspended closes every stream of the user, on every
	// instance: an admin suspended the account.
	TypeAccountSuspended = "account_suspended"
)

// Internal is a message of the internal types.
type Internal struct {
	Type    string `json:"type"`
	Session string `json:"session,omitempty"` // TypeSessionEnded's
	// Ended marks a TypeSessionEnded of a session ended by a change to its
	// account (a new password, a sign-in past the sessions a user holds)
	// rather than signed out: its streams close with ReasonSessionEnded.
	Ended  bool  `json:"ended,omitempty"`
	Author int64 `json:"author,omitempty"` // TypePullAdded's and TypePullRemoved's
}
