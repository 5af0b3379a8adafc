package web_test

import (
	"net/http"
	"strings"
	"testing"

	"chorus/social"
)

// The suspended accounts are listed as every list of users is (as the
// accounts waiting for approval are): each with what the admin's relations
// to it are, and "suspended": true.
func TestAuditSuspendedListedAsUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{Admins: []string{"root"}})
	in := e.start()
	root := in.signUp(t, "root")
	in.signUp(t, "bob")
	root.follow("bob")
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/bob", nil, nil)
	var page struct{ Users []userJSON }
	root.must(http.StatusOK, "GET", "/api/v1/admin/suspensions", nil, &page)
	if len(page.Users) != 1 || page.Users[0].Login != "bob" || !page.Users[0].Suspended {
		t.Fatalf("suspended accounts = %+v, want bob, suspended", page.Users)
	}
	if u := page.Users[0]; u.YouFollow == nil || !*u.YouFollow || u.FollowsYou == nil || *u.FollowsYou {
		t.Errorf("bob as listed: you_follow %v, follows_you %v; want true, false", u.YouFollow, u.FollowsYou)
	}
	root.must(http.StatusNoContent, "DELETE", "/api/v1/admin/suspensions/bob", nil, nil)
	if res := root.do("GET", "/api/v1/admin/suspensions", nil); res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"users":[]`) {
		t.Errorf("no account suspended: GET /admin/suspensions = %d %s, want an empty list", res.Status, res.Body)
	}
}
