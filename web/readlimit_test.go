package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"chorus/internal/redistest"
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

// A signed-in request's limit is counted in the round trip that checks its
// session, not in one of its own: a limited request makes as many round
// trips as the same request with no limit at all, for a session the
// instance saw before and for one it did not. The limit holds all the same
// (TestReadLimit, TestFollowLimit).
func TestLimitRidesWithTheSession(t *testing.T) {
	e := newEnv(t, social.Options{})
	e.connContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, counted{}, true)
	}
	hook := &roundTrips{}
	plain := e.startOn(redistest.WithHook(t, e.rdb, hook))
	// Each budget is what ada spends below on limited: four requests a
	// route (three reads, a search, a follow).
	e.limits = web.Limits{ReadsPerClient: perHour(12), SearchesPerClient: perHour(4), FollowsPerUser: perHour(4)}
	limited := e.startOn(redistest.WithHook(t, e.rdb, hook))
	e.connContext = nil
	other := e.start()
	ada := other.signUp(t, "ada")
	other.signUp(t, "bob")

	trips := func(c *client, want int, method, path string) []string {
		t.Helper()
		hook.start()
		c.must(want, method, path, nil, nil)
		sent, _ := hook.stop()
		return sent
	}
	routes := []struct {
		want         int
		method, path string
	}{
		{http.StatusOK, "GET", "/api/v1/me"},                   // a read signed in
		{http.StatusOK, "GET", "/api/v1/notifications/unread"}, // another
		{http.StatusOK, "GET", "/api/v1/users/bob"},            // a read open to visitors, signed in
		{http.StatusOK, "GET", "/api/v1/users?q=bo"},           // a search
		{http.StatusOK, "PUT", "/api/v1/following/bob"},        // a write
	}
	for _, rt := range routes {
		// Twice on each: the first request of a route tells it its limit,
		// and a first call loads its script.
		for _, in := range []*instance{plain, limited} {
			for range 2 {
				trips(in.as(ada), rt.want, rt.method, rt.path)
			}
		}
		want := trips(plain.as(ada), rt.want, rt.method, rt.path)
		if got := trips(limited.as(ada), rt.want, rt.method, rt.path); len(got) != len(want) {
			t.Errorf("%s %s limited: %d round trips %q; with no limit: %d %q", rt.method, rt.path, len(got), got, len(want), want)
		}
		// A session neither instance saw: read first, in a round trip of
		// its own; the limit rides with the next.
		fresh := other.signIn(t, "ada")
		want = trips(plain.as(fresh), rt.want, rt.method, rt.path)
		fresh = other.signIn(t, "ada")
		if got := trips(limited.as(fresh), rt.want, rt.method, rt.path); len(got) != len(want) {
			t.Errorf("%s %s limited, a session the instance never saw: %d round trips %q; with no limit: %d %q",
				rt.method, rt.path, len(got), got, len(want), want)
		}
	}
	// Each was counted once: every budget is spent, none overspent.
	for _, rt := range routes {
		refused(t, rt.method+" "+rt.path+" past its budget", limited.as(ada).do(rt.method, rt.path, nil))
	}
	refused(t, "a read past the budget by a session the instance never saw", limited.as(other.signIn(t, "ada")).do("GET", "/api/v1/me", nil))
}

// A request its limit refuses in the round trip that checks its session is
// logged with its user, as one the limit refused after it was.
func TestLimitRefusalLogsTheUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ReadsPerClient: perHour(2)}
	e.logAll = true
	in := e.start()
	ada := in.signUp(t, "ada")
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil) // the route learns its limit
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil) // counted with the session
	refused(t, "a third read", ada.do("GET", "/api/v1/me", nil))
	uid := "uid=" + strconv.FormatInt(ada.id, 10)
	for _, line := range strings.Split(in.log.String(), "\n") {
		if strings.Contains(line, "path=/api/v1/me ") && strings.Contains(line, "status=429") {
			if !strings.Contains(line, uid) {
				t.Fatalf("the refused read's log line names no user (%s): %s", uid, line)
			}
			return
		}
	}
	t.Fatalf("no log line of the refused read:\n%s", in.log.String())
}
