package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"chorus/social"
	"chorus/web"
)

// Every read of the API (timelines, statuses, users, lists, friends,
// presence) counts against one budget per signed-in user, or per client
// address for visitors: past it each is refused with 429 and Retry-After,
// and counted.
func TestReadLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	const budget = 15 // the reads below
	e.limits = web.Limits{ReadsPerClient: perHour(budget)}
	in := e.start()
	ada := in.signUp(t, "ada")
	in.signUp(t, "bob")
	st := ada.post("a status to read")
	var list struct {
		List struct{ ID int64 } `json:"list"`
	}
	ada.must(http.StatusCreated, "POST", "/api/v1/lists", map[string]string{"name": "friends"}, &list)

	open := []string{
		"/api/v1/users/bob", "/api/v1/users/bob/statuses", "/api/v1/users/bob/followers",
		"/api/v1/users/bob/following", fmt.Sprintf("/api/v1/statuses/%d", st.ID), "/api/v1/timelines/global",
		fmt.Sprintf("/api/v1/lists/%d", list.List.ID), fmt.Sprintf("/api/v1/lists/%d/members", list.List.ID),
		fmt.Sprintf("/api/v1/lists/%d/statuses", list.List.ID),
	}
	reads := append([]string{
		"/api/v1/me", "/api/v1/friends", "/api/v1/friends/online", "/api/v1/presence",
		"/api/v1/timelines/home", "/api/v1/lists",
	}, open...)

	if len(reads) != budget {
		t.Fatalf("%d reads, want %d", len(reads), budget)
	}
	for _, path := range reads {
		ada.must(http.StatusOK, "GET", path, nil, nil)
	}
	for _, path := range []string{"/api/v1/timelines/home", "/api/v1/users/bob"} {
		refused(t, "a read past the budget: "+path, ada.do("GET", path, nil))
	}
	// Writes are not reads.
	ada.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": "still posting"}, nil)

	// A visitor from the same address has a budget of their own.
	anon := in.anon(t)
	for i := range budget {
		// A list is its owner's alone: to a visitor, a read of it is
		// answered 404, and counted all the same.
		path := open[i%len(open)]
		if strings.HasPrefix(path, "/api/v1/lists/") {
			anon.must(http.StatusNotFound, "GET", path, nil, nil)
		} else {
			anon.must(http.StatusOK, "GET", path, nil, nil)
		}
	}
	refused(t, "a visitor's read past the budget", anon.do("GET", "/api/v1/timelines/global", nil))
	if got := in.metric(t, "chorus_rate_limited_total", `limit="read"`); got != 3 {
		t.Fatalf("chorus_rate_limited_total{limit=read} = %v, want 3", got)
	}
}
