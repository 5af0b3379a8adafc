package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/social"

	"github.com/coder/websocket"
)

type reportJSON struct {
	ID       int64
	Reporter struct{ Login string }
	Account  struct{ Login string }
	// AccountSuspended says whether Account is suspended now.
	AccountSuspended bool `json:"account_suspended"`
	Statuses         []statusJSON
	Reason           string
	Resolved         *time.Time
}

// An admin reads the reports, open ones first, and resolves one; suspends
// an account, which closes its stream on the other instance at once, ends
// its session, refuses its sign-in with a reason and hides it everywhere;
// lifts the suspension. An admin cannot suspend another admin. Every action
// is in the audit log, and every admin route refuses anyone else.
func TestModeration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{Admins: []string{"root", "Ops"}})
	in1, in2 := e.start(), e.start()
	root, bob, carol := in1.signUp(t, "root"), in2.signUp(t, "bob"), in1.signUp(t, "carol")
	ops := in2.signUp(t, "ops")
	carol.follow("bob")
	rude := bob.post("rude words")
	carol.must(http.StatusCreated, "POST", "/api/v1/reports",
		map[string]any{"login": "bob", "status_ids": []int64{rude.ID}, "reason": "rude"}, nil)
	bob.must(http.StatusCreated, "POST", "/api/v1/reports", map[string]any{"login": "carol", "reason": "revenge"}, nil)

	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/admin/reports"}, {"POST", "/api/v1/admin/reports/1/resolve"},
		{"GET", "/api/v1/admin/suspensions"}, {"PUT", "/api/v1/admin/suspensions/bob"},
		{"DELETE", "/api/v1/admin/suspensions/bob"},
	} {
		if res := carol.do(c.method, c.path, nil); res.Status != http.StatusForbidden || res.errorCode(t) != "not_admin" {
			t.Errorf("%s %s by a non-admin = %d %s, want 403 not_admin", c.method, c.path, res.Status, res.Body)
		}
		if res := in1.anon(t).do(c.method, c.path, nil); res.Status != http.StatusUnauthorized {
			t.Errorf("%s %s by a visitor = %d, want 401", c.method, c.path, res.Status)
		}
	}

	var page struct{ Reports []reportJSON }
	root.must(http.StatusOK, "GET", "/api/v1/admin/reports", nil, &page)
	if len(page.Reports) != 2 || page.Reports[0].Account.Login != "bob" || len(page.Reports[0].Statuses) != 1 ||
		page.Reports[0].Statuses[0].ID != rude.ID || page.Reports[0].Reporter.Login != "carol" {
		t.Fatalf("reports = %+v", page.Reports)
	}
	first := page.Reports[0].ID
	root.must(http.StatusNoContent, "POST", fmt.Sprintf("/api/v1/admin/reports/%d/resolve", first), nil, nil)
	root.must(http.StatusOK, "GET", "/api/v1/admin/reports", nil, &page)
	if len(page.Reports) != 2 || page.Reports[0].Resolved != nil || page.Reports[1].ID != first || page.Reports[1].Resolved == nil {
		t.Fatalf("reports after resolving %d = %+v, want the open one first", first, page.Reports)
	}
	for _, path := range []string{"/api/v1/admin/reports/999999/resolve", "/api/v1/admin/reports/x/resolve"} {
		if res := root.do("POST", path, nil); res.Status != http.StatusNotFound || res.errorCode(t) != "report_not_found" {
			t.Errorf("POST %s = %d %s, want 404 report_not_found", path, res.Status, res.Body)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=21", "?offset=-1", "?limit=x"} {
		if res := root.do("GET", "/api/v1/admin/reports"+q, nil); res.Status != http.StatusBadRequest {
			t.Errorf("GET /admin/reports%s = %d, want 400", q, res.Status)
		}
	}

	stream := bob.connect() // on the other instance
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/bob", nil, nil)
	if code, reason := stream.closeReason(10 * time.Second); code != websocket.StatusPolicyViolation || reason != "account suspended" {
		t.Fatalf("the suspended account's stream closed with %d %q, want 1008 \"account suspended\"", code, reason)
	}
	if res := bob.do("GET", "/api/v1/me", nil); res.Status != http.StatusUnauthorized {
		t.Errorf("the suspended account's session: GET /me = %d, want 401", res.Status)
	}
	res := in2.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "bob", "password": "password-bob"})
	if res.Status != http.StatusForbidden || res.errorCode(t) != "suspended" {
		t.Errorf("the suspended account signs in: %d %s, want 403 suspended", res.Status, res.Body)
	}
	for _, path := range []string{"/api/v1/users/bob", fmt.Sprintf("/api/v1/statuses/%d", rude.ID)} {
		if res := carol.do("GET", path, nil); res.Status != http.StatusNotFound {
			t.Errorf("GET %s of a suspended account = %d, want 404", path, res.Status)
		}
	}
	if p := carol.timeline("/api/v1/timelines/home"); len(p.Statuses) != 0 {
		t.Errorf("carol's home still shows %v of the suspended account", ids(p.Statuses))
	}
	if res := root.do("PUT", "/api/v1/admin/suspensions/root", nil); res.Status != http.StatusBadRequest {
		t.Errorf("an admin suspends themselves: %d, want 400", res.Status)
	}
	if res := root.do("PUT", "/api/v1/admin/suspensions/nobody_here", nil); res.Status != http.StatusNotFound {
		t.Errorf("suspending an unknown login: %d, want 404", res.Status)
	}
	if res := root.do("PUT", "/api/v1/admin/suspensions/OPS", nil); res.Status != http.StatusForbidden || res.errorCode(t) != "cannot_suspend_admin" {
		t.Errorf("an admin suspends another: %d %s, want 403 cannot_suspend_admin", res.Status, res.Body)
	}
	ops.must(http.StatusOK, "GET", "/api/v1/admin/reports", nil, &page)
	if len(page.Reports) != 2 || page.Reports[0].Account.Login != "carol" || page.Reports[0].AccountSuspended ||
		page.Reports[1].Account.Login != "bob" || !page.Reports[1].AccountSuspended {
		t.Fatalf("reports read by the other admin, bob suspended = %+v, want carol's open and not suspended, bob's suspended", page.Reports)
	}
	var suspended struct{ Users []userJSON }
	root.must(http.StatusOK, "GET", "/api/v1/admin/suspensions", nil, &suspended)
	if len(suspended.Users) != 1 || suspended.Users[0].Login != "bob" {
		t.Fatalf("suspended accounts = %+v", suspended.Users)
	}

	root.must(http.StatusNoContent, "DELETE", "/api/v1/admin/suspensions/bob", nil, nil)
	if res := root.do("GET", "/api/v1/admin/suspensions", nil); res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"users":[]`) {
		t.Errorf("no account suspended: GET /admin/suspensions = %d %s, want an empty list", res.Status, res.Body)
	}
	in2.anon(t).must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "bob", "password": "password-bob"}, nil)
	if p := carol.timeline("/api/v1/timelines/home"); len(p.Statuses) != 1 {
		t.Errorf("carol's home after the suspension is lifted = %v, want bob's status", ids(p.Statuses))
	}
	var log struct{ Entries []auditJSON }
	root.must(http.StatusOK, "GET", "/api/v1/admin/log", nil, &log)
	var actions []string
	for _, e := range log.Entries {
		actions = append(actions, e.Action+" "+e.Target+" by "+e.Admin)
	}
	want := []string{"unsuspend bob by root", "suspend bob by root", "resolve_report bob by root"}
	if fmt.Sprint(actions) != fmt.Sprint(want) {
		t.Fatalf("audit log = %q, want %q", actions, want)
	}
}
