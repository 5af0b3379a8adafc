package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/social"
)

// notificationJSON is a notification as the API shows it.
type notificationJSON struct {
	ID      int64       `json:"id"`
	Type    string      `json:"type"`
	From    userJSON    `json:"from"`
	Status  *statusJSON `json:"status"`
	Created time.Time   `json:"created"`
}

type notificationPageJSON struct {
	Notifications []notificationJSON `json:"notifications"`
	NextBefore    *int64             `json:"next_before"`
	UpTo          *int64             `json:"up_to"`
}

type unreadJSON struct {
	Count    int64  `json:"count"`
	LastRead *int64 `json:"last_read"`
}

func (c *client) notifications(query string) notificationPageJSON {
	c.tb.Helper()
	var out notificationPageJSON
	c.must(http.StatusOK, "GET", "/api/v1/notifications"+query, nil, &out)
	return out
}

func (c *client) unread() unreadJSON {
	c.tb.Helper()
	var out unreadJSON
	c.must(http.StatusOK, "GET", "/api/v1/notifications/unread", nil, &out)
	return out
}

func notificationIDs(ns []notificationJSON) []int64 {
	out := make([]int64, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// The notifications endpoints: a follow is a notification that lasts, with
// who and when; pages go newest first with an exact cursor; the read
// marker moves forward only.
func TestNotificationsAPI(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ann := in.signUp(t, "ann")
	var followers []*client
	for i := range 3 {
		f := in.signUp(t, fmt.Sprintf("fan%d", i))
		f.follow("ann")
		followers = append(followers, f)
	}
	if got := ann.unread(); got.Count != 3 || got.LastRead != nil {
		t.Fatalf("unread %+v, want 3 and none read", got)
	}
	page := ann.notifications("?limit=2")
	if got := notificationIDs(page.Notifications); !slices.Equal(got, []int64{3, 2}) || page.NextBefore == nil || *page.NextBefore != 2 ||
		page.UpTo == nil || *page.UpTo != 3 {
		t.Fatalf("first page %v, next %v, up to %v; want [3 2], 2, 3", got, page.NextBefore, page.UpTo)
	}
	n := page.Notifications[0]
	if n.Type != "followed" || n.From.Login != "fan2" || n.From.Following != 1 || n.Status != nil || n.Created.IsZero() {
		t.Fatalf("newest notification %+v, want fan2's follow", n)
	}
	// The sender is shown as in every list of users: how ann stands to
	// them, and, once they are friends, their presence.
	if f := n.From; f.FollowsYou == nil || !*f.FollowsYou || f.YouFollow == nil || *f.YouFollow ||
		f.Blocking == nil || *f.Blocking || f.Online != nil {
		t.Fatalf("fan2 as the sender: %+v, want follows_you, not you_follow nor blocking, no presence", f)
	}
	ann.follow("fan2")
	if f := ann.notifications("?limit=1").Notifications[0].From; f.YouFollow == nil || !*f.YouFollow || f.Online == nil {
		t.Fatalf("fan2, now ann's friend, as the sender: %+v, want you_follow and their presence", f)
	}
	res := ann.do("GET", "/api/v1/notifications?limit=2", nil)
	if !strings.Contains(string(res.Body), `"status":null`) {
		t.Fatalf("a follow's notification %s, want status null", res.Body)
	}
	page = ann.notifications(fmt.Sprintf("?limit=2&before=%d", *page.NextBefore))
	if got := notificationIDs(page.Notifications); !slices.Equal(got, []int64{1}) || page.NextBefore != nil {
		t.Fatalf("second page %v, next %v; want [1], none", got, page.NextBefore)
	}

	ann.must(http.StatusNoContent, "PUT", "/api/v1/notifications/read", map[string]int64{"up_to": 2}, nil)
	ann.must(http.StatusNoContent, "PUT", "/api/v1/notifications/read", map[string]int64{"up_to": 1}, nil) // never back
	if got := ann.unread(); got.Count != 1 || got.LastRead == nil || *got.LastRead != 2 {
		t.Fatalf("unread %+v, want 1, last read 2", got)
	}
	// An unfollow takes its notification back.
	followers[2].unfollow("ann")
	if got := notificationIDs(ann.notifications("").Notifications); !slices.Equal(got, []int64{2, 1}) {
		t.Fatalf("after fan2's unfollow: %v, want [2 1]", got)
	}
	if got := ann.unread(); got.Count != 0 {
		t.Fatalf("unread %+v after the unread one was taken back, want 0", got)
	}
	// Each user reads their own.
	if got := followers[0].notifications(""); len(got.Notifications) != 0 || got.UpTo != nil {
		t.Fatalf("fan0 reads %+v, up to %v, want none", got.Notifications, got.UpTo)
	}
}

// Every bad input to the notifications endpoints is refused in the API's
// error shape, and moves no marker.
func TestNotificationsBadInput(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ann, bob := in.signUp(t, "ann"), in.signUp(t, "bob")
	bob.follow("ann") // ann's notification 1
	anon := in.anon(t)
	big := `{"up_to": 1, "pad": "` + strings.Repeat("x", 70<<10) + `"}`
	refuseAll(t, []badRequest{
		{"page without auth", anon, "GET", "/api/v1/notifications", nil, 401, "not_signed_in"},
		{"unread without auth", anon, "GET", "/api/v1/notifications/unread", nil, 401, "not_signed_in"},
		{"read without auth", anon, "PUT", "/api/v1/notifications/read", map[string]int{"up_to": 1}, 401, "not_signed_in"},
		{"limit 0", ann, "GET", "/api/v1/notifications?limit=0", nil, 400, "invalid_limit"},
		{"limit 101", ann, "GET", "/api/v1/notifications?limit=101", nil, 400, "invalid_limit"},
		{"limit text", ann, "GET", "/api/v1/notifications?limit=x", nil, 400, "invalid_limit"},
		{"before negative", ann, "GET", "/api/v1/notifications?before=-1", nil, 400, "invalid_before"},
		{"before text", ann, "GET", "/api/v1/notifications?before=x", nil, 400, "invalid_before"},
		{"before 0", ann, "GET", "/api/v1/notifications?before=0", nil, 400, "invalid_before"},
		{"before fraction", ann, "GET", "/api/v1/notifications?before=1.5", nil, 400, "invalid_before"},
		{"up_to missing", ann, "PUT", "/api/v1/notifications/read", map[string]int{}, 400, "invalid_up_to"},
		{"up_to null", ann, "PUT", "/api/v1/notifications/read", `{"up_to": null}`, 400, "invalid_up_to"},
		{"up_to string", ann, "PUT", "/api/v1/notifications/read", `{"up_to": "1"}`, 400, "invalid_up_to"},
		{"up_to fraction", ann, "PUT", "/api/v1/notifications/read", `{"up_to": 1.5}`, 400, "invalid_up_to"},
		{"up_to negative", ann, "PUT", "/api/v1/notifications/read", map[string]int{"up_to": -1}, 400, "invalid_up_to"},
		{"up_to zero", ann, "PUT", "/api/v1/notifications/read", map[string]int{"up_to": 0}, 400, "invalid_up_to"},
		{"up_to past the newest", ann, "PUT", "/api/v1/notifications/read", map[string]int{"up_to": 2}, 400, "invalid_up_to"},
		{"up_to past int64", ann, "PUT", "/api/v1/notifications/read", `{"up_to": 99999999999999999999999}`, 400, "invalid_up_to"},
		{"up_to for someone without any", bob, "PUT", "/api/v1/notifications/read", map[string]int{"up_to": 1}, 400, "invalid_up_to"},
		{"read body not json", ann, "PUT", "/api/v1/notifications/read", "up_to=1", 400, "invalid_json"},
		{"read body empty", ann, "PUT", "/api/v1/notifications/read", "", 400, "invalid_json"},
		{"read body array", ann, "PUT", "/api/v1/notifications/read", "[1]", 400, "invalid_json"},
		{"read body too large", ann, "PUT", "/api/v1/notifications/read", big, 413, "too_large"},
		{"page wrong method", ann, "POST", "/api/v1/notifications", nil, 405, "method_not_allowed"},
	})
	if got := ann.unread(); got.Count != 1 || got.LastRead != nil {
		t.Fatalf("unread %+v after bad input, want 1 and none read", got)
	}
}

// Unread state is one marker per user: two sessions of one user, on two
// instances, read the same count; a stream's ready frame carries it; a new
// notification, one taken back and a read on one session reach every
// stream of the user live.
func TestNotificationsAcrossSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	ann := one.signUp(t, "ann")
	annToo := two.signIn(t, ann.login)
	bob, cat := one.signUp(t, "bob"), two.signUp(t, "cat")
	bob.follow("ann")

	streams := []*stream{ann.connect(), annToo.connect()}
	for i, s := range streams {
		if s.ready.UnreadNotifications != 1 {
			t.Fatalf("stream %d's ready frame says %d unread, want 1", i, s.ready.UnreadNotifications)
		}
	}
	cat.follow("ann")
	var newest int64
	for i, s := range streams {
		f := s.nextOf("notification", 10*time.Second)
		if f.Notification == nil || f.Notification.Type != "followed" || f.Notification.From.Login != "cat" || f.Notification.ID == 0 {
			t.Fatalf("stream %d got %+v, want cat's follow", i, f.Notification)
		}
		newest = f.Notification.ID
	}
	for i, c := range []*client{ann, annToo} {
		if got := c.unread(); got.Count != 2 || got.LastRead != nil {
			t.Fatalf("session %d reads unread %+v, want 2", i, got)
		}
	}

	// Reading on one session clears the other's, live.
	annToo.must(http.StatusNoContent, "PUT", "/api/v1/notifications/read", map[string]int64{"up_to": newest}, nil)
	for i, s := range streams {
		f := s.nextOf("notifications_read", 10*time.Second)
		if f.LastRead == nil || *f.LastRead != newest {
			t.Fatalf("stream %d got notifications_read %+v, want last_read %d", i, f.LastRead, newest)
		}
	}
	for i, c := range []*client{ann, annToo} {
		if got := c.unread(); got.Count != 0 || got.LastRead == nil || *got.LastRead != newest {
			t.Fatalf("session %d reads unread %+v, want 0, last read %d", i, got, newest)
		}
	}

	// An unfollow takes its notification back on every stream.
	cat.unfollow("ann")
	for i, s := range streams {
		if f := s.nextOf("notification_removed", 10*time.Second); f.ID != newest {
			t.Fatalf("stream %d got notification_removed of %d, want %d", i, f.ID, newest)
		}
	}
	// A stream opened now counts what is unread now.
	if s := annToo.connect(); s.ready.UnreadNotifications != 0 {
		t.Fatalf("a new stream's ready frame says %d unread, want 0", s.ready.UnreadNotifications)
	}
}
