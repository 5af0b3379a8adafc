package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"chorus/social"
)

// badRequest is a request that must be refused with status and the API
// error code.
type badRequest struct {
	name   string
	c      *client
	method string
	path   string
	body   any
	status int
	code   string
}

// refuseAll makes each request, a subtest each, and checks its refusal.
func refuseAll(t *testing.T, cases []badRequest) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.c.do(tc.method, tc.path, tc.body)
			if res.Status != tc.status {
				t.Fatalf("%s %s: got %d %s, want %d", tc.method, tc.path, res.Status, res.Body, tc.status)
			}
			if code := res.errorCode(t); code != tc.code {
				t.Fatalf("%s %s: code %q, want %q", tc.method, tc.path, code, tc.code)
			}
		})
	}
}

// Every bad input gets the API's error shape with a fitting status, and
// changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	inst := in.start()
	alice := inst.signUp(t, "alice")
	bob := inst.signUp(t, "bob")
	st := bob.post("bob's")
	anon := inst.anon(t)
	big := strings.Repeat("x", 70<<10)

	refuseAll(t, []badRequest{
		{"signup not json", anon, "POST", "/api/v1/users", "{login", 400, "invalid_json"},
		{"signup empty body", anon, "POST", "/api/v1/users", "", 400, "invalid_json"},
		{"signup array", anon, "POST", "/api/v1/users", "[1,2]", 400, "invalid_json"},
		{"signup two objects", anon, "POST", "/api/v1/users", `{"login":"x"}{"login":"y"}`, 400, "invalid_json"},
		{"signup a brace after", anon, "POST", "/api/v1/users", `{"login":"x"}}`, 400, "invalid_json"},
		{"signup a bracket after", anon, "POST", "/api/v1/users", `{"login":"x"} ]`, 400, "invalid_json"},
		{"signup login wrong type", anon, "POST", "/api/v1/users", `{"login":5,"name":"n","password":"kettle-drum-41"}`, 400, "invalid_json"},
		{"signup login short", anon, "POST", "/api/v1/users", map[string]string{"login": "ab", "name": "n", "password": "kettle-drum-41"}, 400, "invalid_login"},
		{"signup login long", anon, "POST", "/api/v1/users", map[string]string{"login": strings.Repeat("a", 33), "name": "n", "password": "kettle-drum-41"}, 400, "invalid_login"},
		{"signup login punctuation", anon, "POST", "/api/v1/users", map[string]string{"login": "al-ice", "name": "n", "password": "kettle-drum-41"}, 400, "invalid_login"},
		{"signup login unicode", anon, "POST", "/api/v1/users", map[string]string{"login": "ålice", "name": "n", "password": "kettle-drum-41"}, 400, "invalid_login"},
		{"signup name empty", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "  ", "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup name long", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": strings.Repeat("é", 65), "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup name control", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "a\x00b", "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup name zero width space", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "ali\u200bce", "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup name right-to-left mark", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "alice\u200f", "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup name word joiner", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "al\u2060ice", "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup name arabic letter mark", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "alice\u061c", "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup name byte order mark", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "\ufeffalice", "password": "kettle-drum-41"}, 400, "invalid_name"},
		{"signup password short", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "n", "password": "1234567"}, 400, "invalid_password"},
		{"signup password long", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "n", "password": strings.Repeat("p", 129)}, 400, "invalid_password"},
		{"signup password common", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "n", "password": "12345678"}, 400, "invalid_password"},
		{"signup password common any case", anon, "POST", "/api/v1/users", map[string]string{"login": "carol", "name": "n", "password": "PASSWORD"}, 400, "invalid_password"},
		{"signup too large", anon, "POST", "/api/v1/users", `{"login":"carol","name":"` + big + `"}`, 413, "too_large"},
		{"signin wrong password", anon, "POST", "/api/v1/sessions", map[string]string{"login": "alice", "password": "nope-nope"}, 401, "invalid_credentials"},
		{"signin unknown login", anon, "POST", "/api/v1/sessions", map[string]string{"login": "nobody", "password": "kettle-drum-41"}, 401, "invalid_credentials"},
		{"signin malformed login", anon, "POST", "/api/v1/sessions", map[string]string{"login": "no body", "password": "kettle-drum-41"}, 401, "invalid_credentials"},
		{"signin not json", anon, "POST", "/api/v1/sessions", "nope", 400, "invalid_json"},
		{"me without auth", anon, "GET", "/api/v1/me", nil, 401, "not_signed_in"},
		{"signout without auth", anon, "DELETE", "/api/v1/sessions/current", nil, 401, "not_signed_in"},
		{"profile unknown", anon, "GET", "/api/v1/users/nobody", nil, 404, "not_found"},
		{"profile malformed", anon, "GET", "/api/v1/users/no%20body", nil, 404, "not_found"},
		{"profile statuses unknown", anon, "GET", "/api/v1/users/nobody/statuses", nil, 404, "not_found"},
		{"followers unknown", anon, "GET", "/api/v1/users/nobody/followers", nil, 404, "not_found"},
		{"following unknown", anon, "GET", "/api/v1/users/nobody/following", nil, 404, "not_found"},
		{"followers limit 0", anon, "GET", "/api/v1/users/bob/followers?limit=0", nil, 400, "invalid_limit"},
		{"followers limit 101", anon, "GET", "/api/v1/users/bob/followers?limit=101", nil, 400, "invalid_limit"},
		{"followers offset negative", anon, "GET", "/api/v1/users/bob/followers?offset=-1", nil, 400, "invalid_offset"},
		{"followers offset text", anon, "GET", "/api/v1/users/bob/followers?offset=ten", nil, 400, "invalid_offset"},
		{"follow without auth", anon, "PUT", "/api/v1/following/bob", nil, 401, "not_signed_in"},
		{"follow self", alice, "PUT", "/api/v1/following/ALICE", nil, 400, "cannot_follow_self"},
		{"follow unknown", alice, "PUT", "/api/v1/following/nobody", nil, 404, "not_found"},
		{"follow malformed", alice, "PUT", "/api/v1/following/a.b", nil, 404, "not_found"},
		{"unfollow unknown", alice, "DELETE", "/api/v1/following/nobody", nil, 404, "not_found"},
		{"unfollow self", alice, "DELETE", "/api/v1/following/alice", nil, 400, "cannot_follow_self"},
		{"friends without auth", anon, "GET", "/api/v1/friends", nil, 401, "not_signed_in"},
		{"friends limit text", alice, "GET", "/api/v1/friends?limit=x", nil, 400, "invalid_limit"},
		{"post without auth", anon, "POST", "/api/v1/statuses", map[string]string{"message": "hi"}, 401, "not_signed_in"},
		{"post missing message", alice, "POST", "/api/v1/statuses", map[string]string{}, 400, "invalid_message"},
		{"post empty message", alice, "POST", "/api/v1/statuses", map[string]string{"message": " \n\t "}, 400, "invalid_message"},
		{"post bidi override", alice, "POST", "/api/v1/statuses", map[string]string{"message": "read \u202eevil"}, 400, "invalid_message"},
		{"post bidi isolate", alice, "POST", "/api/v1/statuses", map[string]string{"message": "a\u2067b"}, 400, "invalid_message"},
		{"post long message", alice, "POST", "/api/v1/statuses", map[string]string{"message": strings.Repeat("ü", 501)}, 400, "invalid_message"},
		{"post invalid utf-8", alice, "POST", "/api/v1/statuses", []byte("{\"message\":\"\xff\xfe\"}"), 400, "invalid_json"},
		{"post lone surrogate", alice, "POST", "/api/v1/statuses", `{"message":"a\ud800b"}`, 400, "invalid_json"},
		{"post lone low surrogate", alice, "POST", "/api/v1/statuses", `{"message":"\udfff"}`, 400, "invalid_json"},
		{"post message wrong type", alice, "POST", "/api/v1/statuses", `{"message":42}`, 400, "invalid_json"},
		{"post too large", alice, "POST", "/api/v1/statuses", `{"message":"` + big + `"}`, 413, "too_large"},
		{"status unknown", anon, "GET", "/api/v1/statuses/999999", nil, 404, "status_not_found"},
		{"status not a number", anon, "GET", "/api/v1/statuses/abc", nil, 404, "status_not_found"},
		{"status negative", anon, "GET", "/api/v1/statuses/-1", nil, 404, "status_not_found"},
		{"status huge", anon, "GET", "/api/v1/statuses/99999999999999999999999", nil, 404, "status_not_found"},
		{"delete without auth", anon, "DELETE", fmt.Sprintf("/api/v1/statuses/%d", st.ID), nil, 401, "not_signed_in"},
		{"delete not owner", alice, "DELETE", fmt.Sprintf("/api/v1/statuses/%d", st.ID), nil, 403, "not_owner"},
		{"delete unknown", alice, "DELETE", "/api/v1/statuses/999999", nil, 404, "status_not_found"},
		{"delete not a number", alice, "DELETE", "/api/v1/statuses/x", nil, 404, "status_not_found"},
		{"home without auth", anon, "GET", "/api/v1/timelines/home", nil, 401, "not_signed_in"},
		{"home limit 0", alice, "GET", "/api/v1/timelines/home?limit=0", nil, 400, "invalid_limit"},
		{"home limit 1000", alice, "GET", "/api/v1/timelines/home?limit=1000", nil, 400, "invalid_limit"},
		{"home before text", alice, "GET", "/api/v1/timelines/home?before=x", nil, 400, "invalid_before"},
		{"home before 0", alice, "GET", "/api/v1/timelines/home?before=0", nil, 400, "invalid_before"},
		{"home after negative", alice, "GET", "/api/v1/timelines/home?after=-5", nil, 400, "invalid_after"},
		{"home before and after", alice, "GET", "/api/v1/timelines/home?before=5&after=1", nil, 400, "invalid_cursor"},
		{"global limit text", anon, "GET", "/api/v1/timelines/global?limit=lots", nil, 400, "invalid_limit"},
		{"profile statuses bad cursor", anon, "GET", "/api/v1/users/bob/statuses?before=1.5", nil, 400, "invalid_before"},
		{"unknown route", anon, "GET", "/api/v1/nothing", nil, 404, "not_found"},
		{"wrong method", anon, "PATCH", "/api/v1/users", nil, 405, "method_not_allowed"},
	})
	// Nothing above changed anything.
	if got := alice.counts("alice"); got != (counts{}) {
		t.Fatalf("alice's counts after bad input: %+v", got)
	}
	if got := bob.counts("bob"); got != (counts{0, 0, 1}) {
		t.Fatalf("bob's counts after bad input: %+v", got)
	}
	if n := len(anon.timeline("/api/v1/timelines/global").Statuses); n != 1 {
		t.Fatalf("global holds %d statuses after bad input, want 1", n)
	}
	if res := anon.do("GET", "/api/v1/users/carol", nil); res.Status != http.StatusNotFound {
		t.Fatalf("a refused sign-up left user carol behind: %d", res.Status)
	}
}

func TestSessions(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	first := in.signUp(t, "sessions")
	second := in.anon(t)
	var out struct {
		User  userJSON
		Token string
	}
	second.must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "SESSIONS", "password": "password-sessions"}, &out)
	if out.Token == "" || out.Token == first.token || out.User.ID != first.id {
		t.Fatalf("sign in: %+v", out)
	}
	second.token = out.Token
	first.must(http.StatusNoContent, "DELETE", "/api/v1/sessions/current", nil, nil)
	if res := first.do("GET", "/api/v1/me", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("signed-out token: %d, want 401", res.Status)
	}
	second.must(http.StatusOK, "GET", "/api/v1/me", nil, nil) // the other session lives on

	bad := []struct{ name, header string }{
		{"unknown token", "Bearer nope"},
		{"empty bearer", "Bearer "},
		{"other scheme", "Basic dXNlcjpwYXNz"},
		{"huge token", "Bearer " + strings.Repeat("t", 4000)},
	}
	for _, b := range bad {
		res := in.anon(t).do("GET", "/api/v1/me", nil, "Authorization", b.header)
		if res.Status != http.StatusUnauthorized || res.errorCode(t) != "not_signed_in" {
			t.Fatalf("%s: %d %s", b.name, res.Status, res.Body)
		}
	}
	// Keys in Redis hold no live token.
	keys := in.keys(t, in.prefix+"session:*")
	if len(keys) == 0 {
		t.Fatal("no session keys found")
	}
	for _, k := range keys {
		if strings.Contains(k, second.token) {
			t.Fatalf("session key %s holds the token", k)
		}
	}
}

func TestCookieAuthAndOrigin(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	anon := in.anon(t)
	res := anon.do("POST", "/api/v1/users", map[string]string{"login": "cookie", "name": "C", "password": "kettle-drum-41"})
	if res.Status != http.StatusCreated {
		t.Fatalf("sign up: %d", res.Status)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		if c.Name == "chorus_session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Secure {
		t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Lax, not Secure over plain HTTP", cookie)
	}
	withCookie := func(method, path string, body any, header ...string) response {
		return anon.do(method, path, body, append([]string{"Cookie", "chorus_session=" + cookie.Value}, header...)...)
	}
	if res := withCookie("GET", "/api/v1/me", nil); res.Status != http.StatusOK {
		t.Fatalf("GET /me by cookie: %d", res.Status)
	}
	host := strings.TrimPrefix(in.srv.URL, "http://")
	writes := []struct {
		name   string
		header []string
		status int
	}{
		{"same origin", []string{"Origin", "http://" + host}, 201},
		{"no origin (not a browser)", nil, 201},
		{"foreign origin", []string{"Origin", "https://evil.example"}, 403},
		{"foreign site, no origin", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"null origin", []string{"Origin", "null"}, 403},
	}
	for _, w := range writes {
		res := withCookie("POST", "/api/v1/statuses", map[string]string{"message": w.name}, w.header...)
		if res.Status != w.status {
			t.Fatalf("%s: %d %s, want %d", w.name, res.Status, res.Body, w.status)
		}
		if w.status == 403 && res.errorCode(t) != "forbidden_origin" {
			t.Fatalf("%s: code %s", w.name, res.Body)
		}
	}
	// A bearer token is no cookie: a foreign origin may use it.
	var out struct{ Token string }
	res.decode(t, &out)
	bearer := &client{tb: t, base: in.srv.URL, token: out.Token}
	if res := bearer.do("POST", "/api/v1/statuses", map[string]string{"message": "by bearer"}, "Origin", "https://elsewhere.example"); res.Status != 201 {
		t.Fatalf("bearer write from another origin: %d", res.Status)
	}
	if got := anon.counts("cookie").posts; got != 3 {
		t.Fatalf("posts = %d, want 3 (the refused writes wrote nothing)", got)
	}
	if res := withCookie("DELETE", "/api/v1/sessions/current", nil); res.Status != http.StatusNoContent {
		t.Fatalf("sign out by cookie: %d", res.Status)
	}
	if res := withCookie("GET", "/api/v1/me", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("cookie after sign-out: %d", res.Status)
	}
	// A session that ended does not stand in the way of a new one: a
	// sign-in and a sign-up carrying its cookie, or a token of no session,
	// go through (a browser cannot drop the HttpOnly cookie itself).
	if res := withCookie("POST", "/api/v1/sessions", map[string]string{"login": "cookie", "password": "kettle-drum-41"}); res.Status != http.StatusOK {
		t.Fatalf("sign-in with the ended session's cookie: %d %s, want 200", res.Status, res.Body)
	}
	if res := withCookie("POST", "/api/v1/users", map[string]string{"login": "cookie2", "name": "C", "password": "kettle-drum-41"}); res.Status != http.StatusCreated {
		t.Fatalf("sign-up with the ended session's cookie: %d %s, want 201", res.Status, res.Body)
	}
	if res := anon.do("POST", "/api/v1/sessions", map[string]string{"login": "cookie", "password": "kettle-drum-41"}, "Authorization", "Bearer no-such-session"); res.Status != http.StatusOK {
		t.Fatalf("sign-in with a token of no session: %d %s, want 200", res.Status, res.Body)
	}
}

func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUp(t, "target")
	anon := in.anon(t)
	for i := range 10 {
		res := anon.do("POST", "/api/v1/sessions", map[string]string{"login": "Target", "password": fmt.Sprintf("wrong-%d", i)})
		if res.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, res.Status)
		}
	}
	res := anon.do("POST", "/api/v1/sessions", map[string]string{"login": "target", "password": "password-target"})
	if res.Status != http.StatusTooManyRequests || res.errorCode(t) != "rate_limited" {
		t.Fatalf("after 10 failures, the right password got %d %s, want 429", res.Status, res.Body)
	}
	// Another login is not limited.
	in.signUp(t, "bystander")
	anon.must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "bystander", "password": "password-bystander"}, nil)
}
