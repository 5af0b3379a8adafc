package web_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"chorus/social"
)

// An admin's own user object says "admin": true in every answer that gives
// it (sign-up, sign-in, GET /me, PATCH /me), so that a client knows to offer
// the moderation page; anyone else's has no "admin" at all, and nobody
// learns from a profile who the admins are.
func TestOwnUserSaysAdmin(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"Root"}}).start()
	anon := in.anon(t)
	// admin is the "admin" field of the answer's user: "true", "false", or
	// "" when it is left out.
	admin := func(what string, res response) string {
		t.Helper()
		var out struct {
			User map[string]json.RawMessage `json:"user"`
		}
		res.decode(t, &out)
		if out.User == nil {
			t.Fatalf("%s: no user in %d %s", what, res.Status, res.Body)
		}
		return string(out.User["admin"])
	}
	for _, login := range []string{"root", "ada"} {
		res := anon.do("POST", "/api/v1/users", map[string]string{"login": login, "name": "Name " + login, "password": "password-" + login})
		if res.Status != http.StatusCreated {
			t.Fatalf("sign up %s: %d %s", login, res.Status, res.Body)
		}
		want := map[string]string{"root": "true", "ada": ""}[login]
		if got := admin("sign-up of "+login, res); got != want {
			t.Errorf("sign-up of %s says admin %q, want %q", login, got, want)
		}
		res = anon.do("POST", "/api/v1/sessions", map[string]string{"login": login, "password": "password-" + login})
		if res.Status != http.StatusOK {
			t.Fatalf("sign in %s: %d %s", login, res.Status, res.Body)
		}
		if got := admin("sign-in of "+login, res); got != want {
			t.Errorf("sign-in of %s says admin %q, want %q", login, got, want)
		}
		var session struct{ Token string }
		res.decode(t, &session)
		c := in.anon(t)
		c.token, c.login = session.Token, login
		if got := admin("GET /me of "+login, c.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)); got != want {
			t.Errorf("GET /me of %s says admin %q, want %q", login, got, want)
		}
		edited := c.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": "hello"}, nil)
		if got := admin("PATCH /me of "+login, edited); got != want {
			t.Errorf("PATCH /me of %s says admin %q, want %q", login, got, want)
		}
		// Others' view of the account never says.
		for _, viewer := range []*client{anon, in.signUp(t, "viewer"+login)} {
			if got := admin("profile of "+login, viewer.must(http.StatusOK, "GET", "/api/v1/users/"+login, nil, nil)); got != "" {
				t.Errorf("the profile of %s says admin %q to %q", login, got, viewer.login)
			}
		}
	}
}

// A report on an account still reads whole once the account is suspended:
// the admins see who it was about and the statuses reported, hidden from
// everyone else, so that they can resolve it knowing what it was.
func TestReportOfSuspendedAccount(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	root, bob, carol := in.signUp(t, "root"), in.signUp(t, "bob"), in.signUp(t, "carol")
	rude := bob.post("rude words")
	carol.must(http.StatusCreated, "POST", "/api/v1/reports",
		map[string]any{"login": "bob", "status_ids": []int64{rude.ID}, "reason": "rude"}, nil)
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/bob", nil, nil)
	if res := carol.do("GET", "/api/v1/statuses/"+strconv.FormatInt(rude.ID, 10), nil); res.Status != http.StatusNotFound {
		t.Fatalf("the suspended account's status answers %d to others, want 404", res.Status)
	}
	// Hidden from everyone: its profile, its statuses and its lists,
	// which would tell that it is there.
	for _, path := range []string{"", "/statuses", "/followers", "/following"} {
		for _, who := range []*client{carol, in.anon(t)} {
			if res := who.do("GET", "/api/v1/users/bob"+path, nil); res.Status != http.StatusNotFound || res.errorCode(t) != "not_found" {
				t.Errorf("GET /users/bob%s of a suspended account: %d %s, want 404 not_found", path, res.Status, res.Body)
			}
		}
		carol.must(http.StatusOK, "GET", "/api/v1/users/carol"+path, nil, nil)
	}
	var page struct{ Reports []reportJSON }
	root.must(http.StatusOK, "GET", "/api/v1/admin/reports", nil, &page)
	if len(page.Reports) != 1 || page.Reports[0].Account.Login != "bob" || page.Reports[0].Reporter.Login != "carol" ||
		len(page.Reports[0].Statuses) != 1 || page.Reports[0].Statuses[0].Message != "rude words" {
		t.Fatalf("the report after the suspension reads %+v, want bob's, with his status", page.Reports)
	}
}
