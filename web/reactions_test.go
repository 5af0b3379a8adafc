package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"chorus/protocol"
	"chorus/social"
	"chorus/web"
)

// react does a like or repost request (PUT or DELETE) that must answer
// 200, and returns the status answered.
func (c *client) react(method, what string, id int64) protocol.Status {
	c.tb.Helper()
	var out struct{ Status protocol.Status }
	c.must(http.StatusOK, method, fmt.Sprintf("/api/v1/statuses/%d/%s", id, what), nil, &out)
	return out.Status
}

// reactors returns the logins of a likes or reposts page.
func (c *client) reactors(path string) []string {
	c.tb.Helper()
	var out struct{ Users []userJSON }
	c.must(http.StatusOK, "GET", path, nil, &out)
	var got []string
	for _, u := range out.Users {
		got = append(got, u.Login)
	}
	return got
}

// viewerState checks st's counts and the viewer's own state.
func viewerState(tb testing.TB, what string, st protocol.Status, id, likes, reposts int64, liked, reposted bool) {
	tb.Helper()
	if st.ID != id || st.Likes != likes || st.Reposts != reposts || st.Liked == nil || *st.Liked != liked ||
		st.Reposted == nil || *st.Reposted != reposted || st.RepostOf != nil {
		tb.Fatalf("%s: %+v, want status %d with %d likes, %d reposts, liked %v, reposted %v",
			what, st, id, likes, reposts, liked, reposted)
	}
}

// Likes and reposts through the API: each answers the original with its
// counts and the viewer's state, is idempotent, lists who did it newest
// first, and a repost is an entry of its own in the reposter's followers'
// home timelines, carrying the original; undoing it takes it out.
func TestLikesAndReposts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice, bob, carol := in.signUp(t, "alice"), in.signUp(t, "bob"), in.signUp(t, "carol")
	carol.follow("bob")
	st := alice.post("like and repost me")

	viewerState(t, "bob's like", bob.react("PUT", "like", st.ID), st.ID, 1, 0, true, false)
	viewerState(t, "bob's like again", bob.react("PUT", "like", st.ID), st.ID, 1, 0, true, false)
	viewerState(t, "carol's like", carol.react("PUT", "like", st.ID), st.ID, 2, 0, true, false)
	path := fmt.Sprintf("/api/v1/statuses/%d/likes", st.ID)
	if got := in.anon(t).reactors(path); !slices.Equal(got, []string{"carol", "bob"}) {
		t.Fatalf("likers = %v, want carol then bob", got)
	}
	if got := in.anon(t).reactors(path + "?limit=1&offset=1"); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("likers' second page of 1 = %v, want bob", got)
	}
	viewerState(t, "carol's unlike", carol.react("DELETE", "like", st.ID), st.ID, 1, 0, false, false)
	viewerState(t, "carol's unlike again", carol.react("DELETE", "like", st.ID), st.ID, 1, 0, false, false)

	viewerState(t, "bob's repost", bob.react("PUT", "repost", st.ID), st.ID, 1, 1, true, true)
	viewerState(t, "bob's repost again", bob.react("PUT", "repost", st.ID), st.ID, 1, 1, true, true)
	var home struct{ Statuses []protocol.Status }
	carol.must(http.StatusOK, "GET", "/api/v1/timelines/home", nil, &home)
	if len(home.Statuses) != 1 {
		t.Fatalf("carol's home = %+v, want bob's repost", home.Statuses)
	}
	entry := home.Statuses[0]
	if entry.ID == st.ID || entry.Login != "bob" || entry.Message != "" || entry.RepostOf == nil ||
		entry.RepostOf.ID != st.ID || entry.RepostOf.Message != st.Message || entry.RepostOf.Reposts != 1 ||
		entry.RepostOf.Likes != 1 || entry.RepostOf.Liked == nil || *entry.RepostOf.Liked {
		t.Fatalf("carol's home entry = %+v, want bob's repost of %d with its counts", entry, st.ID)
	}
	var one struct{ Status protocol.Status }
	in.anon(t).must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", entry.ID), nil, &one)
	if one.Status.RepostOf == nil || one.Status.RepostOf.ID != st.ID {
		t.Fatalf("the entry read alone = %+v, want its original", one.Status)
	}
	// Liking or reposting the entry acts on the original.
	viewerState(t, "carol's like of the entry", carol.react("PUT", "like", entry.ID), st.ID, 2, 1, true, false)
	viewerState(t, "carol's repost of the entry", carol.react("PUT", "repost", entry.ID), st.ID, 2, 2, true, true)
	if got := in.anon(t).reactors(fmt.Sprintf("/api/v1/statuses/%d/reposts", entry.ID)); !slices.Equal(got, []string{"carol", "bob"}) {
		t.Fatalf("reposters = %v, want carol then bob", got)
	}

	viewerState(t, "bob's undo", bob.react("DELETE", "repost", st.ID), st.ID, 2, 1, true, false)
	viewerState(t, "bob's undo again", bob.react("DELETE", "repost", st.ID), st.ID, 2, 1, true, false)
	carol.must(http.StatusOK, "GET", "/api/v1/timelines/home", nil, &home)
	if slices.ContainsFunc(home.Statuses, func(s protocol.Status) bool { return s.ID == entry.ID }) {
		t.Fatalf("carol's home holds bob's undone repost: %+v", home.Statuses)
	}
	in.anon(t).must(http.StatusNotFound, "GET", fmt.Sprintf("/api/v1/statuses/%d", entry.ID), nil, nil)
	if got := bob.counts("bob").posts; got != 0 {
		t.Fatalf("bob's posts after the undo = %d, want 0", got)
	}

	// Deleting the original: every action on it is 404, and its reposts go.
	alice.deleteStatus(st.ID)
	for _, what := range []string{"like", "repost"} {
		for _, method := range []string{"PUT", "DELETE"} {
			res := bob.do(method, fmt.Sprintf("/api/v1/statuses/%d/%s", st.ID, what), nil)
			if res.Status != http.StatusNotFound || res.errorCode(t) != "status_not_found" {
				t.Errorf("%s %s of a deleted status: %d %s, want 404", method, what, res.Status, res.Body)
			}
		}
	}
	if got := carol.counts("carol").posts; got != 0 {
		t.Errorf("carol's posts after the original's deletion = %d, want 0: her repost went", got)
	}
}

// Bad input to the like and repost endpoints gets the API's error shape.
func TestReactionsBadInput(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice := in.signUp(t, "alice")
	st := alice.post("here")
	anon := in.anon(t)
	for _, tc := range []struct {
		name         string
		c            *client
		method, path string
		code         int
		errCode      string
	}{
		{"like unknown", alice, "PUT", "/api/v1/statuses/999999/like", 404, "status_not_found"},
		{"repost unknown", alice, "PUT", "/api/v1/statuses/999999/repost", 404, "status_not_found"},
		{"unlike unknown", alice, "DELETE", "/api/v1/statuses/999999/like", 404, "status_not_found"},
		{"undo unknown", alice, "DELETE", "/api/v1/statuses/999999/repost", 404, "status_not_found"},
		{"like not a number", alice, "PUT", "/api/v1/statuses/abc/like", 404, "status_not_found"},
		{"repost zero", alice, "PUT", "/api/v1/statuses/0/repost", 404, "status_not_found"},
		{"like negative", alice, "PUT", "/api/v1/statuses/-3/like", 404, "status_not_found"},
		{"like overflowing", alice, "PUT", "/api/v1/statuses/99999999999999999999/like", 404, "status_not_found"},
		{"likers unknown", anon, "GET", "/api/v1/statuses/999999/likes", 404, "status_not_found"},
		{"reposters not a number", anon, "GET", "/api/v1/statuses/x1/reposts", 404, "status_not_found"},
		{"likers limit not a number", anon, "GET", fmt.Sprintf("/api/v1/statuses/%d/likes?limit=abc", st.ID), 400, "invalid_limit"},
		{"likers limit zero", anon, "GET", fmt.Sprintf("/api/v1/statuses/%d/likes?limit=0", st.ID), 400, "invalid_limit"},
		{"reposters offset negative", anon, "GET", fmt.Sprintf("/api/v1/statuses/%d/reposts?offset=-1", st.ID), 400, "invalid_offset"},
		{"like signed out", anon, "PUT", fmt.Sprintf("/api/v1/statuses/%d/like", st.ID), 401, "not_signed_in"},
		{"repost signed out", anon, "PUT", fmt.Sprintf("/api/v1/statuses/%d/repost", st.ID), 401, "not_signed_in"},
		{"unlike signed out", anon, "DELETE", fmt.Sprintf("/api/v1/statuses/%d/like", st.ID), 401, "not_signed_in"},
		{"undo signed out", anon, "DELETE", fmt.Sprintf("/api/v1/statuses/%d/repost", st.ID), 401, "not_signed_in"},
	} {
		res := tc.c.do(tc.method, tc.path, nil)
		if res.Status != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, res.Status, res.Body, tc.code)
			continue
		}
		if got := res.errorCode(t); got != tc.errCode {
			t.Errorf("%s: error code %q, want %q", tc.name, got, tc.errCode)
		}
	}
	var out struct{ Status protocol.Status }
	anon.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", st.ID), nil, &out)
	if out.Status.Likes != 0 || out.Status.Reposts != 0 {
		t.Fatalf("after refused requests: %+v, want no likes or reposts", out.Status)
	}
}

// Likes, reposts and their undoing share one limit per user, counted in
// Redis across instances; a refused one writes nothing.
func TestReactionLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ReactionsPerUser: perHour(3)}
	one, two := e.start(), e.start()
	alice := one.signUp(t, "alice")
	bob := one.signUp(t, "bob")
	st := alice.post("popular")
	bob.react("PUT", "like", st.ID)
	two.as(bob).react("DELETE", "like", st.ID)
	bob.react("PUT", "repost", st.ID)
	refused(t, "fourth reaction, on the other instance", two.as(bob).do("PUT", fmt.Sprintf("/api/v1/statuses/%d/like", st.ID), nil))
	refused(t, "fifth reaction", bob.do("DELETE", fmt.Sprintf("/api/v1/statuses/%d/repost", st.ID), nil))
	var out struct{ Status protocol.Status }
	alice.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", st.ID), nil, &out)
	if out.Status.Likes != 0 || out.Status.Reposts != 1 {
		t.Fatalf("after the refusals: %d likes, %d reposts; want 0 and 1", out.Status.Likes, out.Status.Reposts)
	}
	alice.react("PUT", "like", st.ID) // another user is not limited
	if got := one.metric(t, "chorus_rate_limited_total", `limit="react"`) + two.metric(t, "chorus_rate_limited_total", `limit="react"`); got != 2 {
		t.Fatalf("chorus_rate_limited_total{limit=react} = %v, want 2", got)
	}
}

// A repost reaches a connected follower as a status frame carrying the
// original, live and in a resume's catch-up alike, the live one with the
// original's counts as they stand, the repost among them.
func TestStreamCarriesReposts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	one := in.start()
	alice, bob, reader := one.signUp(t, "alice"), one.signUp(t, "bob"), one.signUp(t, "reader")
	reader.follow("bob")
	first := alice.post("first original")
	bob.react("PUT", "repost", first.ID)

	s := reader.connect()
	s.send(map[string]any{"type": "resume", "after": 0})
	caught := s.nextOf("status", 5*time.Second)
	if caught.Status == nil || caught.Status.RepostOf == nil || caught.Status.RepostOf.ID != first.ID ||
		caught.Status.RepostOf.Message != first.Message || caught.Status.Login != "bob" {
		t.Fatalf("the resume sent %+v, want bob's repost carrying %d", caught.Status, first.ID)
	}
	second := alice.post("second original")
	carol := one.signUp(t, "carol")
	carol.like(second.ID)
	carol.react("PUT", "repost", second.ID)
	carol.reply(second.ID, "a reply")
	bob.react("PUT", "repost", second.ID)
	live := s.nextOf("status", 5*time.Second)
	if live.Status == nil || live.Status.RepostOf == nil || live.Status.RepostOf.ID != second.ID ||
		live.Status.RepostOf.Message != second.Message {
		t.Fatalf("the live frame was %+v, want bob's repost carrying %d", live.Status, second.ID)
	}
	if o := live.Status.RepostOf; o.Replies != 1 || o.Likes != 1 || o.Reposts != 2 {
		t.Errorf("the live frame's original counts %d replies, %d likes, %d reposts, want 1, 1, 2", o.Replies, o.Likes, o.Reposts)
	}
}
