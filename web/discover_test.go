package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/social"

	"github.com/go-redis/redis_rate/v10"
)

// Anyone may search users by the start of a login or name; a signed-in
// searcher sees how each result stands to them.
func TestSearchUsers(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada, _ := in.signUp(t, "ada_l"), in.signUp(t, "adams")
	bob := in.signUp(t, "bob")
	bob.follow("ada_l")

	var out struct{ Users []userJSON }
	in.anon(t).must(http.StatusOK, "GET", "/api/v1/users?q="+url.QueryEscape("ADA"), nil, &out)
	if got := logins(out.Users); !slices.Equal(got, []string{"ada_l", "adams"}) {
		t.Fatalf("visitor's search for ADA = %v", got)
	}
	if out.Users[0].YouFollow != nil {
		t.Fatalf("a visitor is told you_follow: %+v", out.Users[0])
	}
	// "Name ada_l" is every test user's name: the word "name" finds all.
	ada.must(http.StatusOK, "GET", "/api/v1/users?q=name&limit=2", nil, &out)
	if len(out.Users) != 2 {
		t.Fatalf("limit 2 gave %v", logins(out.Users))
	}
	ada.must(http.StatusOK, "GET", "/api/v1/users?q=bo", nil, &out)
	if len(out.Users) != 1 || out.Users[0].FollowsYou == nil || !*out.Users[0].FollowsYou ||
		out.Users[0].YouFollow == nil || *out.Users[0].YouFollow {
		t.Fatalf("ada's search for bo = %+v, want bob who follows her", out.Users)
	}
	for _, tc := range []struct{ query, code string }{
		{"", "invalid_q"},
		{"q=", "invalid_q"},
		{"q=%20%20", "invalid_q"},
		{"q=a%00b", "invalid_q"},
		{"q=%FF", "invalid_q"},
		{"q=" + strings.Repeat("a", social.MaxQueryRunes+1), "invalid_q"},
		{"q=ada&limit=0", "invalid_limit"},
		{"q=ada&limit=51", "invalid_limit"},
		{"q=ada&limit=x", "invalid_limit"},
	} {
		res := in.anon(t).do("GET", "/api/v1/users?"+tc.query, nil)
		if res.Status != http.StatusBadRequest || res.errorCode(t) != tc.code {
			t.Errorf("search ?%s: %d %s, want 400 %s", tc.query, res.Status, res.Body, tc.code)
		}
	}
}

// Suggestions put followers not followed back first, then those followed
// by the people one follows, and say why.
func TestSuggestionsEndpoint(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	me, friend, fof, fan := in.signUp(t, "me_"), in.signUp(t, "friend"), in.signUp(t, "fof"), in.signUp(t, "fan")
	me.follow("friend")
	friend.follow("fof")
	fan.follow("me_")
	_ = fof

	var out struct {
		Users []struct {
			userJSON
			Reason     string `json:"reason"`
			FollowedBy []struct {
				Login string `json:"login"`
			} `json:"followed_by"`
		}
	}
	me.must(http.StatusOK, "GET", "/api/v1/suggestions", nil, &out)
	if len(out.Users) != 2 {
		t.Fatalf("suggestions = %+v, want fan then fof", out.Users)
	}
	if u := out.Users[0]; u.Login != "fan" || u.Reason != "follows_you" || u.FollowsYou == nil || !*u.FollowsYou || len(u.FollowedBy) != 0 {
		t.Errorf("first suggestion = %+v, want fan, follows_you", u)
	}
	if u := out.Users[1]; u.Login != "fof" || u.Reason != "followed_by_following" || len(u.FollowedBy) != 1 || u.FollowedBy[0].Login != "friend" {
		t.Errorf("second suggestion = %+v, want fof, followed by friend", u)
	}
	if res := in.anon(t).do("GET", "/api/v1/suggestions", nil); res.Status != http.StatusUnauthorized {
		t.Errorf("visitor's suggestions: %d, want 401", res.Status)
	}
	if res := me.do("GET", "/api/v1/suggestions?limit=31", nil); res.Status != http.StatusBadRequest || res.errorCode(t) != "invalid_limit" {
		t.Errorf("limit 31: %d %s, want 400 invalid_limit", res.Status, res.Body)
	}
}

// Lists of users say who follows the viewer, for follow-back buttons.
func TestListsSayFollowsYou(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	me, fan, mutual := in.signUp(t, "me_"), in.signUp(t, "fan"), in.signUp(t, "mutual")
	fan.follow("me_")
	mutual.follow("me_")
	me.follow("mutual")
	var out struct{ Users []userJSON }
	me.must(http.StatusOK, "GET", "/api/v1/users/me_/followers", nil, &out)
	got := map[string]string{}
	for _, u := range out.Users {
		got[u.Login] = boolStr(u.YouFollow) + "/" + boolStr(u.FollowsYou)
	}
	if got["fan"] != "false/true" || got["mutual"] != "true/true" {
		t.Fatalf("followers as me_ sees them (you_follow/follows_you) = %v", got)
	}
	if u := fan.user("me_"); u.FollowsYou == nil || *u.FollowsYou || u.YouFollow == nil || !*u.YouFollow {
		t.Fatalf("me_ as fan sees them: %+v, want you_follow and not follows_you", u)
	}
}

func boolStr(b *bool) string {
	if b == nil {
		return "absent"
	}
	if *b {
		return "true"
	}
	return "false"
}

// A new follower is told live to the followee's streams on every instance,
// once per follow, with whether it made a follow back.
func TestFollowedFrame(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	ada, bob := one.signUp(t, "ada"), one.signUp(t, "bob")
	as := two.as(ada).connect()
	bs := bob.connect()

	bob.follow("ada")
	bob.follow("ada") // again: nothing new
	f := as.nextOf("followed", 5*time.Second)
	if f.login(t) != "bob" || f.YouFollow == nil || *f.YouFollow {
		t.Fatalf("ada got %+v, want bob followed, not followed back", f)
	}
	ada.follow("bob")
	f = bs.nextOf("followed", 5*time.Second)
	if f.login(t) != "ada" || f.YouFollow == nil || !*f.YouFollow {
		t.Fatalf("bob got %+v, want ada followed back", f)
	}
	as.quiet("followed", 300*time.Millisecond)
}

// Searches are limited per user, or per address for visitors.
func TestSearchLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits.SearchesPerClient = redis_rate.Limit{Rate: 2, Period: time.Hour, Burst: 2}
	in := e.start()
	ada := in.signUp(t, "ada")
	for range 2 {
		ada.must(http.StatusOK, "GET", "/api/v1/users?q=a", nil, nil)
	}
	res := ada.do("GET", "/api/v1/suggestions", nil)
	if res.Status != http.StatusTooManyRequests || res.errorCode(t) != "rate_limited" || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third lookup: %d %s, want 429 rate_limited", res.Status, res.Body)
	}
	// A visitor from the same address counts apart from ada.
	in.anon(t).must(http.StatusOK, "GET", "/api/v1/users?q=a", nil, nil)
}

// Pages of an allowed origin may call the API with credentials: their
// preflights are answered and their answers readable. Others get no CORS.
func TestCORS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.origins = []string{"https://app.example.com"}
	in := e.start()
	ada := in.signUp(t, "ada")
	anon := in.anon(t)

	pre := anon.do(http.MethodOptions, "/api/v1/statuses", nil,
		"Origin", "https://app.example.com",
		"Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "content-type")
	h := pre.Header
	if pre.Status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		h.Get("Access-Control-Allow-Credentials") != "true" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "content-type") {
		t.Fatalf("preflight from an allowed origin: %d %v", pre.Status, h)
	}
	res := ada.do("POST", "/api/v1/statuses", map[string]string{"message": "from the app"}, "Origin", "https://app.example.com")
	if res.Status != http.StatusCreated || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Fatalf("post from an allowed origin: %d %v", res.Status, res.Header)
	}

	pre = anon.do(http.MethodOptions, "/api/v1/statuses", nil,
		"Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST")
	if pre.Header.Get("Access-Control-Allow-Origin") != "" || pre.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight from another origin was granted: %v", pre.Header)
	}
	res = anon.do("GET", "/api/v1/timelines/global", nil, "Origin", "https://evil.example.com")
	if res.Status != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("read from another origin: %d %v", res.Status, res.Header)
	}
}
