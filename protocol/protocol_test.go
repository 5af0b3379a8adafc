package protocol

import (
	"encoding/json"
	"go/build"
	"strings"
	"testing"
	"time"
)

// Every frame and body marshals to the JSON docs/API.md gives for it.
func TestWireShapes(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)
	ada := User{ID: 7, Login: "ada", Name: "Ada", Followers: 1, Following: 2, Posts: 3, Signup: at}
	adaJSON := `"id":7,"login":"ada","name":"Ada","bio":"","followers":1,"following":2,"posts":3,"signup":"2030-01-02T03:04:05.006Z"`
	ref := `{"id":7,"login":"ada","name":"Ada"}`
	yes, no := true, false
	after := json.RawMessage("41")
	thread := json.RawMessage("17")
	for _, c := range []struct {
		name  string
		value any
		want  string
	}{
		{"ready", Ready{Type: TypeReady, User: UserView{User: ada, Presence: &Presence{Online: true, LastSeen: &at}},
			HeartbeatIntervalMS: 10000, OnlineFriends: []OnlineFriend{{User: ada.Ref(), LastSeen: at}}, UnreadNotifications: 3},
			`{"type":"ready","user":{` + adaJSON + `,"online":true,"last_seen":"2030-01-02T03:04:05.006Z"},` +
				`"heartbeat_interval_ms":10000,"online_friends":[{"user":` + ref + `,"last_seen":"2030-01-02T03:04:05.006Z"}],` +
				`"unread_notifications":3}`},
		{"status", StatusFrame{Type: TypeStatus, Status: Status{ID: 42, UID: 7, Login: "ada", Message: "hi", Posted: at,
			Mentions: []Mention{}}},
			`{"type":"status","status":{"id":42,"uid":7,"login":"ada","message":"hi","posted":"2030-01-02T03:04:05.006Z",` +
				`"reply_to":null,"mentions":[],"replies":0,"likes":0,"reposts":0}}`},
		{"reply", StatusFrame{Type: TypeStatus, Status: Status{ID: 43, UID: 7, Login: "ada", Message: "@bob yes", Posted: at,
			ReplyTo: &StatusRef{ID: 41, UID: 8, Login: "bob"}, Mentions: []Mention{{UID: 8, Login: "bob"}}}},
			`{"type":"status","status":{"id":43,"uid":7,"login":"ada","message":"@bob yes","posted":"2030-01-02T03:04:05.006Z",` +
				`"reply_to":{"id":41,"uid":8,"login":"bob"},"mentions":[{"uid":8,"login":"bob"}],"replies":0,"likes":0,"reposts":0}}`},
		{"status deleted", StatusDeleted{Type: TypeStatusDeleted, ID: 42}, `{"type":"status_deleted","id":42}`},
		{"status deleted by its author", StatusDeleted{Type: TypeStatusDeleted, ID: 43, ReplyTo: 42, UID: 7},
			`{"type":"status_deleted","id":43,"reply_to":42,"uid":7}`},
		{"presence", PresenceFrame{Type: TypePresence, User: ada.Ref(), Online: true, LastSeen: &at},
			`{"type":"presence","user":` + ref + `,"online":true,"last_seen":"2030-01-02T03:04:05.006Z"}`},
		{"presence of someone never seen", PresenceFrame{Type: TypePresence, User: ada.Ref()},
			`{"type":"presence","user":` + ref + `,"online":false,"last_seen":null}`},
		{"friend removed", FriendRemoved{Type: TypeFriendRemoved, User: ada.Ref()}, `{"type":"friend_removed","user":` + ref + `}`},
		{"followed", Followed{Type: TypeFollowed, User: ada.Ref(), YouFollow: false},
			`{"type":"followed","user":` + ref + `,"you_follow":false}`},
		{"profile", ProfileFrame{Type: TypeProfile, User: ada.Ref()},
			`{"type":"profile","user":` + ref + `}`},
		{"service", Service{Type: TypeService, Available: false}, `{"type":"service","available":false}`},
		{"error frame", ErrorFrame{Type: TypeError, Error: Error{Code: CodeUnknownType, Message: "Unknown."}},
			`{"type":"error","code":"unknown_type","message":"Unknown."}`},
		{"watching", Watching{Type: TypeWatching, Timeline: TimelineGlobal}, `{"type":"watching","timeline":"global"}`},
		{"global status deleted", GlobalStatusDeleted{Type: TypeGlobalStatusDeleted, ID: 42}, `{"type":"global_status_deleted","id":42}`},
		{"watching a thread", Watching{Type: TypeWatching, Timeline: TimelineThread, Thread: 17},
			`{"type":"watching","timeline":"thread","thread":17}`},
		{"thread status deleted", ThreadStatusDeleted{Type: TypeThreadStatusDeleted, Thread: 17, ID: 42, ReplyTo: 40},
			`{"type":"thread_status_deleted","thread":17,"id":42,"reply_to":40}`},
		{"thread's first status deleted", ThreadStatusDeleted{Type: TypeThreadStatusDeleted, Thread: 17, ID: 17},
			`{"type":"thread_status_deleted","thread":17,"id":17}`},
		{"resume", ClientFrame{Type: TypeResume, After: &after}, `{"type":"resume","after":41}`},
		{"watch", ClientFrame{Type: TypeWatch, Timeline: TimelineGlobal}, `{"type":"watch","timeline":"global"}`},
		{"watch a thread", ClientFrame{Type: TypeWatch, Timeline: TimelineThread, Thread: &thread}, `{"type":"watch","timeline":"thread","thread":17}`},
		{"heartbeat", ClientFrame{Type: TypeHeartbeat}, `{"type":"heartbeat"}`},
		{"session ended", Internal{Type: TypeSessionEnded, Session: "s1"}, `{"type":"session_ended","session":"s1"}`},
		{"user created", Internal{Type: TypeUserCreated}, `{"type":"user_created"}`},
		{"error body", ErrorBody{Error: Error{Code: "not_found", Message: "No such user."}},
			`{"error":{"code":"not_found","message":"No such user."}}`},
		{"list", List{ID: 5, Name: "Engines", Owner: ada.Ref(), Members: 2, Created: at},
			`{"id":5,"name":"Engines","owner":` + ref + `,"members":2,"created":"2030-01-02T03:04:05.006Z"}`},
		{"user seen by a stranger", UserView{User: ada}, `{` + adaJSON + `}`},
		{"user seen by a signed-in friend", UserView{User: ada, Presence: &Presence{}, YouFollow: &yes, FollowsYou: &no},
			`{` + adaJSON + `,"online":false,"last_seen":null,"you_follow":true,"follows_you":false}`},
	} {
		got, err := json.Marshal(c.value)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// The protocol is the bottom floor: it imports the standard library alone,
// so that any package, and any Go client, may import it.
func TestImportsStandardLibraryOnly(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") || first == "chorus" {
			t.Errorf("protocol imports %s", path)
		}
	}
}
