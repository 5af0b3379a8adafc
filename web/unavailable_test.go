package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/social"
)

func TestRedisUnavailable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := newEnv(t, social.Options{})
	in := e.startOn(redistest.ClientOf(t, srv.URL))
	c := in.anon(t)
	c.must(http.StatusOK, "GET", "/readyz", nil, nil)
	c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]string{"login": "early", "name": "E", "password": "kettle-drum-41"}, nil)

	srv.Stop()
	if res := c.do("GET", "/readyz", nil); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz with Redis down: %d", res.Status)
	}
	c.must(http.StatusOK, "GET", "/healthz", nil, nil)
	for _, req := range []struct{ method, path string }{
		{"POST", "/api/v1/users"},
		{"GET", "/api/v1/users/early"},
		{"GET", "/api/v1/timelines/global"},
	} {
		res := c.do(req.method, req.path, map[string]string{"login": "late", "name": "L", "password": "kettle-drum-41"})
		if res.Status != http.StatusServiceUnavailable || res.errorCode(t) != "redis_unavailable" {
			t.Fatalf("%s %s with Redis down: %d %s", req.method, req.path, res.Status, res.Body)
		}
	}
	redistest.StartOnPort(t, srv.Port)
	testio.Eventually(t, 15*time.Second, func() string {
		if res := c.do("GET", "/readyz", nil); res.Status != http.StatusOK {
			return fmt.Sprintf("readyz after Redis came back: %d", res.Status)
		}
		return ""
	})
}

// A request whose session cannot be checked because Redis is down answers
// 503 and leaves the session cookie alone: the session may well be fine.
// A session that is gone still clears it.
func TestRedisUnavailableKeepsTheCookie(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := newEnv(t, social.Options{})
	in := e.startOn(redistest.ClientOf(t, srv.URL))
	ada := in.signUp(t, "ada")
	cookie := func(token string) response {
		return in.anon(t).do("GET", "/api/v1/me", nil, "Cookie", "chorus_session="+token)
	}
	if res := cookie("not-a-session"); res.Status != http.StatusUnauthorized || !strings.Contains(res.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("an unknown session: %d, Set-Cookie %q; want 401 and the cookie cleared", res.Status, res.Header.Get("Set-Cookie"))
	}
	srv.Stop()
	res := cookie(ada.token)
	if res.Status != http.StatusServiceUnavailable {
		t.Fatalf("with Redis down: %d %s, want 503", res.Status, res.Body)
	}
	if got := res.Header.Get("Set-Cookie"); got != "" {
		t.Fatalf("with Redis down the answer sets a cookie: %q", got)
	}
}
