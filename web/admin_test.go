package web_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"chorus/social"
)

type auditJSON struct {
	Admin, Action, Target string
	At                    time.Time
}

// Under -registrations approval a sign-up answers 202 with no session, and
// cannot sign in until an admin approves it; the approval is logged, and
// every admin route refuses anyone else.
func TestRegistrationsApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{Registrations: social.RegistrationsApproval, Admins: []string{"Root"}})
	in1, in2 := e.start(), e.start()
	root := in1.signUp(t, "root") // an admin is never held
	anon := in2.anon(t)
	signUp := func(login string) response {
		t.Helper()
		return anon.do("POST", "/api/v1/users", map[string]string{"login": login, "name": "Name " + login, "password": "password-" + login})
	}
	res := signUp("newbie")
	var out struct {
		User    userJSON
		Token   *string
		Pending bool
		Message string
	}
	res.decode(t, &out)
	if res.Status != http.StatusAccepted || out.User.Login != "newbie" || out.Token != nil || !out.Pending || out.Message == "" {
		t.Fatalf("a sign-up under approval answered %d %s", res.Status, res.Body)
	}
	if c := res.Header.Get("Set-Cookie"); c != "" {
		t.Fatalf("a pending sign-up set a cookie: %s", c)
	}
	if res := signUp("pleb"); res.Status != http.StatusAccepted {
		t.Fatalf("second sign-up: %d %s", res.Status, res.Body)
	}
	signIn := func(login, password string) response {
		return in1.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": login, "password": password})
	}
	if res := signIn("newbie", "password-newbie"); res.Status != http.StatusForbidden || res.errorCode(t) != "approval_pending" {
		t.Fatalf("a pending account signs in: %d %s, want 403 approval_pending", res.Status, res.Body)
	}
	if res := signIn("newbie", "password-wrong"); res.Status != http.StatusUnauthorized || res.errorCode(t) != "invalid_credentials" {
		t.Fatalf("a wrong password on a pending account: %d %s, want 401 invalid_credentials", res.Status, res.Body)
	}
	if got := root.searchLogins("newb"); len(got) != 0 {
		t.Fatalf("a search by prefix finds a pending account: %v", got)
	}

	var pending struct{ Users []userJSON }
	root.must(http.StatusOK, "GET", "/api/v1/admin/approvals", nil, &pending)
	if got := logins(pending.Users); !slices.Equal(got, []string{"newbie", "pleb"}) {
		t.Fatalf("pending %v, want newbie then pleb", got)
	}
	root.must(http.StatusOK, "GET", "/api/v1/admin/approvals?limit=1&offset=1", nil, &pending)
	if got := logins(pending.Users); !slices.Equal(got, []string{"pleb"}) {
		t.Fatalf("second page %v, want pleb", got)
	}
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/approvals/PLEB", nil, nil)
	pleb := in2.signIn(t, "pleb")

	// Every admin route refuses a visitor and a user who is no admin.
	for _, tc := range []struct {
		name   string
		c      *client
		method string
		path   string
		status int
		code   string
	}{
		{"list, no session", anon, "GET", "/api/v1/admin/approvals", 401, "not_signed_in"},
		{"approve, no session", anon, "PUT", "/api/v1/admin/approvals/newbie", 401, "not_signed_in"},
		{"log, no session", anon, "GET", "/api/v1/admin/log", 401, "not_signed_in"},
		{"list, not admin", pleb, "GET", "/api/v1/admin/approvals", 403, "not_admin"},
		{"approve, not admin", pleb, "PUT", "/api/v1/admin/approvals/newbie", 403, "not_admin"},
		{"approve self, not admin", pleb, "PUT", "/api/v1/admin/approvals/pleb", 403, "not_admin"},
		{"log, not admin", pleb, "GET", "/api/v1/admin/log", 403, "not_admin"},
		{"approve unknown", root, "PUT", "/api/v1/admin/approvals/nobody", 404, "not_found"},
		{"approve malformed", root, "PUT", "/api/v1/admin/approvals/no%20body", 404, "not_found"},
		{"list, limit 0", root, "GET", "/api/v1/admin/approvals?limit=0", 400, "invalid_limit"},
		{"log, offset text", root, "GET", "/api/v1/admin/log?offset=x", 400, "invalid_offset"},
		{"approvals, wrong method", root, "POST", "/api/v1/admin/approvals/newbie", 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.c.do(tc.method, tc.path, nil)
			if res.Status != tc.status || res.errorCode(t) != tc.code {
				t.Fatalf("got %d %s, want %d %s", res.Status, res.Body, tc.status, tc.code)
			}
		})
	}
	if res := signIn("newbie", "password-newbie"); res.Status != http.StatusForbidden {
		t.Fatalf("newbie approved by a refusal: %d", res.Status)
	}

	in2.as(root).must(http.StatusNoContent, "PUT", "/api/v1/admin/approvals/newbie", nil, nil)
	in1.as(root).must(http.StatusNoContent, "PUT", "/api/v1/admin/approvals/newbie", nil, nil) // again: no change
	if res := signIn("newbie", "password-newbie"); res.Status != http.StatusOK {
		t.Fatalf("an approved account signs in: %d %s", res.Status, res.Body)
	}
	if got := root.searchLogins("newb"); !slices.Equal(got, []string{"newbie"}) {
		t.Fatalf("search for an approved account finds %v", got)
	}
	root.must(http.StatusOK, "GET", "/api/v1/admin/approvals", nil, &pending)
	if len(pending.Users) != 0 {
		t.Fatalf("pending after both approved: %v", logins(pending.Users))
	}
	var log struct{ Entries []auditJSON }
	root.must(http.StatusOK, "GET", "/api/v1/admin/log", nil, &log)
	if len(log.Entries) != 2 {
		t.Fatalf("audit log %+v, want two approvals", log.Entries)
	}
	for i, target := range []string{"newbie", "pleb"} {
		if got := log.Entries[i]; got.Admin != "root" || got.Action != "approve" || got.Target != target || time.Since(got.At) > time.Hour {
			t.Fatalf("entry %d %+v, want root approving %s", i, got, target)
		}
	}
	root.must(http.StatusOK, "GET", "/api/v1/admin/log?limit=1&offset=1", nil, &log)
	if len(log.Entries) != 1 || log.Entries[0].Target != "pleb" {
		t.Fatalf("second page of the log %+v, want pleb's approval", log.Entries)
	}
}

// Under -registrations closed, a sign-up is refused with a reason, and no
// account is made.
func TestRegistrationsClosed(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Registrations: social.RegistrationsClosed}).start()
	res := in.anon(t).do("POST", "/api/v1/users", map[string]string{"login": "late", "name": "Late", "password": "password-late"})
	if res.Status != http.StatusForbidden || res.errorCode(t) != "registrations_closed" {
		t.Fatalf("a sign-up while closed: %d %s, want 403 registrations_closed", res.Status, res.Body)
	}
	if res := in.anon(t).do("GET", "/api/v1/users/late", nil); res.Status != http.StatusNotFound {
		t.Fatalf("the refused account exists: %d %s", res.Status, res.Body)
	}
	for _, pattern := range []string{"user:*", "users:by_login*", "*session*"} {
		if keys := in.keys(t, in.prefix+pattern); len(keys) != 0 {
			t.Fatalf("a refused sign-up wrote %v", keys)
		}
	}
}
