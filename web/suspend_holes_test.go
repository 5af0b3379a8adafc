package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"chorus/social"
)

// An account marked suspended whose sessions the suspension did not get to
// end (cut short after its first write) acts no more: each request of
// those sessions answers 401 not_signed_in, as one of an ended session,
// reads and writes alike, on any instance, and its cookie is cleared.
func TestSuspendedAccountsLiveSessionIsRefused(t *testing.T) {
	e := newEnv(t, social.Options{})
	a, b := e.start(), e.start()
	bob := a.signUp(t, "bob")
	a.signUp(t, "carol")
	// Three sessions: one for each request below, since the first refusal
	// of a session ends it.
	signIn := func() string {
		var out struct{ Token string }
		a.anon(t).must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "bob", "password": "password-bob"}, &out)
		return out.Token
	}
	onB, byCookie := *bob, signIn()
	onB.token = signIn()
	bob.must(http.StatusOK, "GET", "/api/v1/me", nil, nil) // instance a knows this session
	key := a.userKey("user", bob.id)
	if err := e.rdb.HSet(context.Background(), key, "suspended", 1).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in           *client
		method, path string
	}{
		{bob, "GET", "/api/v1/me"},
		{b.as(&onB), "PUT", "/api/v1/following/carol"},
	} {
		res := c.in.do(c.method, c.path, nil)
		if res.Status != http.StatusUnauthorized || res.errorCode(t) != "not_signed_in" {
			t.Errorf("%s %s by the suspended account's session: %d %s, want 401 not_signed_in", c.method, c.path, res.Status, res.Body)
		}
	}
	// The cookie of such a session is cleared, as an ended one's.
	res := a.anon(t).do("GET", "/api/v1/me", nil, "Cookie", "chorus_session="+byCookie)
	if res.Status != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/me by the suspended account's cookie: %d %s, want 401", res.Status, res.Body)
	}
	if c := res.Header.Get("Set-Cookie"); !strings.Contains(c, "chorus_session=;") {
		t.Errorf("the suspended account's cookie was not cleared: Set-Cookie %q", c)
	}
}
