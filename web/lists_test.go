package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/protocol"
	"chorus/social"
	"chorus/web"
)

type listJSON = protocol.List

// createList makes a list named name as c.
func (c *client) createList(name string) listJSON {
	c.tb.Helper()
	var out struct{ List listJSON }
	c.must(http.StatusCreated, "POST", "/api/v1/lists", map[string]string{"name": name}, &out)
	return out.List
}

func (c *client) listOf(id int64) listJSON {
	c.tb.Helper()
	var out struct{ List listJSON }
	c.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/lists/%d", id), nil, &out)
	return out.List
}

func listPath(id int64, rest ...string) string {
	return fmt.Sprintf("/api/v1/lists/%d", id) + strings.Join(rest, "")
}

// A list's life through the API: made, listed, read by its owner alone, renamed,
// given members whose statuses then fill its timeline, which pages like
// any other, and deleted.
func TestListsAPI(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUp(t, "ada")
	bob := in.signUp(t, "bob")
	anon := in.anon(t)
	older := bob.post("before the list")

	res := ada.must(http.StatusCreated, "POST", "/api/v1/lists", map[string]string{"name": " Engines "}, nil)
	var raw struct{ List map[string]json.RawMessage }
	res.decode(t, &raw)
	if keys := slices.Sorted(maps.Keys(raw.List)); !slices.Equal(keys, []string{"created", "id", "members", "name", "owner"}) {
		t.Fatalf("list fields %v", keys)
	}
	var created struct{ List listJSON }
	res.decode(t, &created)
	l := created.List
	wantOwner := protocol.UserRef{ID: ada.id, Login: "ada", Name: "Name ada"}
	if l.Name != "Engines" || l.Owner != wantOwner || l.Members != 0 || time.Since(l.Created) > time.Minute {
		t.Fatalf("created %+v", l)
	}
	second := ada.createList("Looms")

	var mine struct{ Lists []listJSON }
	ada.must(http.StatusOK, "GET", "/api/v1/lists", nil, &mine)
	if len(mine.Lists) != 2 || mine.Lists[0].ID != l.ID || mine.Lists[1].ID != second.ID {
		t.Fatalf("ada's lists %+v, want Engines then Looms", mine.Lists)
	}
	bob.must(http.StatusOK, "GET", "/api/v1/lists", nil, &mine)
	if len(mine.Lists) != 0 {
		t.Fatalf("bob's lists %+v, want none", mine.Lists)
	}
	if got := ada.listOf(l.ID); !got.Created.Equal(l.Created) || got.Name != l.Name || got.Owner != wantOwner {
		t.Fatalf("ada reads %+v, want %+v", got, l)
	}

	var renamed struct{ List listJSON }
	ada.must(http.StatusOK, "PATCH", listPath(l.ID), map[string]string{"name": "Difference engines"}, &renamed)
	if renamed.List.Name != "Difference engines" || renamed.List.ID != l.ID {
		t.Fatalf("renamed %+v", renamed.List)
	}

	var added struct{ List listJSON }
	ada.follow("bob")
	ada.must(http.StatusOK, "PUT", listPath(l.ID, "/members/BOB"), nil, &added)
	if added.List.Members != 1 {
		t.Fatalf("after adding bob: %+v", added.List)
	}
	ada.must(http.StatusOK, "PUT", listPath(l.ID, "/members/bob"), nil, &added)
	ada.must(http.StatusOK, "PUT", listPath(l.ID, "/members/ada"), nil, &added)
	if added.List.Members != 2 {
		t.Fatalf("after adding bob twice and ada: %d members, want 2", added.List.Members)
	}
	// Lists are private: to anyone but ada, bob its member included, and
	// to a visitor, the list is none, as one that does not exist.
	for _, c := range []*client{bob, anon} {
		for _, p := range []string{"", "/members", "/statuses"} {
			if res := c.do("GET", listPath(l.ID, p), nil); res.Status != http.StatusNotFound || res.errorCode(t) != "list_not_found" {
				t.Fatalf("GET %s of ada's list by someone else: %d %s, want 404 list_not_found", p, res.Status, res.Body)
			}
		}
	}
	var members struct{ Users []userJSON }
	ada.must(http.StatusOK, "GET", listPath(l.ID, "/members"), nil, &members)
	if len(members.Users) != 2 || members.Users[0].Login != "ada" || members.Users[1].Login != "bob" {
		t.Fatalf("members %+v, want ada then bob", members.Users)
	}
	if members.Users[1].YouFollow == nil || !*members.Users[1].YouFollow {
		t.Fatalf("ada sees members without her follow of bob: %+v", members.Users)
	}
	ada.must(http.StatusOK, "GET", listPath(l.ID, "/members?limit=1&offset=1"), nil, &members)
	if len(members.Users) != 1 || members.Users[0].Login != "bob" {
		t.Fatalf("second page of one member %+v, want bob", members.Users)
	}

	var sts []statusJSON
	for i := range 4 {
		sts = append(sts, bob.post(fmt.Sprint("bob ", i)), ada.post(fmt.Sprint("ada ", i)))
	}
	want := []int64{older.ID}
	for _, s := range sts {
		want = append(want, s.ID)
	}
	slices.Reverse(want)
	var got []int64
	path := listPath(l.ID, "/statuses?limit=3")
	for range 10 {
		page := ada.timeline(path)
		got = append(got, ids(page.Statuses)...)
		if page.NextBefore == nil {
			break
		}
		path = listPath(l.ID, fmt.Sprintf("/statuses?limit=3&before=%d", *page.NextBefore))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("list timeline paged %v, want %v", got, want)
	}
	if page := ada.timeline(listPath(l.ID, fmt.Sprintf("/statuses?after=%d", sts[5].ID))); !slices.Equal(ids(page.Statuses), []int64{sts[6].ID, sts[7].ID}) {
		t.Fatalf("after %d: %v", sts[5].ID, ids(page.Statuses))
	}

	var removed struct{ List listJSON }
	ada.must(http.StatusOK, "DELETE", listPath(l.ID, "/members/bob"), nil, &removed)
	if removed.List.Members != 1 {
		t.Fatalf("after removing bob: %+v", removed.List)
	}
	for _, s := range ada.timeline(listPath(l.ID, "/statuses")).Statuses {
		if s.Login != "ada" {
			t.Fatalf("bob's status %d is in the list after his removal", s.ID)
		}
	}

	ada.must(http.StatusNoContent, "DELETE", listPath(l.ID), nil, nil)
	for _, p := range []string{"", "/members", "/statuses"} {
		if res := ada.do("GET", listPath(l.ID, p), nil); res.Status != http.StatusNotFound || res.errorCode(t) != "list_not_found" {
			t.Fatalf("GET %s of a deleted list: %d %s", p, res.Status, res.Body)
		}
	}
	ada.must(http.StatusOK, "GET", "/api/v1/lists", nil, &mine)
	if len(mine.Lists) != 1 || mine.Lists[0].ID != second.ID {
		t.Fatalf("ada's lists after a delete: %+v", mine.Lists)
	}
}

// Every bad request about lists gets the API's error shape with a fitting
// status, never a 500, and changes nothing.
func TestListsBadInput(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUp(t, "ada")
	bob := in.signUp(t, "bob")
	anon := in.anon(t)
	l := ada.createList("ada's")
	path := listPath(l.ID)
	big := strings.Repeat("x", 70<<10)

	refuseAll(t, []badRequest{
		{"create without auth", anon, "POST", "/api/v1/lists", map[string]string{"name": "x"}, 401, "not_signed_in"},
		{"create not json", ada, "POST", "/api/v1/lists", "{name", 400, "invalid_json"},
		{"create empty body", ada, "POST", "/api/v1/lists", "", 400, "invalid_json"},
		{"create name missing", ada, "POST", "/api/v1/lists", map[string]string{}, 400, "invalid_name"},
		{"create name null", ada, "POST", "/api/v1/lists", `{"name":null}`, 400, "invalid_name"},
		{"create name wrong type", ada, "POST", "/api/v1/lists", `{"name":7}`, 400, "invalid_json"},
		{"create name blank", ada, "POST", "/api/v1/lists", map[string]string{"name": " \t "}, 400, "invalid_name"},
		{"create name long", ada, "POST", "/api/v1/lists", map[string]string{"name": strings.Repeat("é", 65)}, 400, "invalid_name"},
		{"create name control", ada, "POST", "/api/v1/lists", map[string]string{"name": "a\x07b"}, 400, "invalid_name"},
		{"create name bidi", ada, "POST", "/api/v1/lists", map[string]string{"name": "a\u202eb"}, 400, "invalid_name"},
		{"create not utf-8", ada, "POST", "/api/v1/lists", []byte("{\"name\":\"\xff\"}"), 400, "invalid_json"},
		{"create too large", ada, "POST", "/api/v1/lists", `{"name":"` + big + `"}`, 413, "too_large"},
		{"mine without auth", anon, "GET", "/api/v1/lists", nil, 401, "not_signed_in"},
		{"read not a number", anon, "GET", "/api/v1/lists/abc", nil, 404, "list_not_found"},
		{"read zero", anon, "GET", "/api/v1/lists/0", nil, 404, "list_not_found"},
		{"read negative", anon, "GET", "/api/v1/lists/-3", nil, 404, "list_not_found"},
		{"read huge", anon, "GET", "/api/v1/lists/99999999999999999999999", nil, 404, "list_not_found"},
		{"read unknown", anon, "GET", listPath(l.ID + 1000), nil, 404, "list_not_found"},
		{"members unknown", anon, "GET", listPath(l.ID+1000, "/members"), nil, 404, "list_not_found"},
		{"members bad id", anon, "GET", "/api/v1/lists/x/members", nil, 404, "list_not_found"},
		{"members limit 0", anon, "GET", path + "/members?limit=0", nil, 400, "invalid_limit"},
		{"members offset text", anon, "GET", path + "/members?offset=x", nil, 400, "invalid_offset"},
		{"statuses unknown", anon, "GET", listPath(l.ID+1000, "/statuses"), nil, 404, "list_not_found"},
		{"statuses bad id", anon, "GET", "/api/v1/lists/1.5/statuses", nil, 404, "list_not_found"},
		{"statuses limit 101", anon, "GET", path + "/statuses?limit=101", nil, 400, "invalid_limit"},
		{"statuses before text", anon, "GET", path + "/statuses?before=x", nil, 400, "invalid_before"},
		{"statuses before and after", anon, "GET", path + "/statuses?before=5&after=1", nil, 400, "invalid_cursor"},
		{"rename without auth", anon, "PATCH", path, map[string]string{"name": "x"}, 401, "not_signed_in"},
		{"rename not owner", bob, "PATCH", path, map[string]string{"name": "bob's now"}, 404, "list_not_found"},
		{"rename unknown", ada, "PATCH", listPath(l.ID + 1000), map[string]string{"name": "x"}, 404, "list_not_found"},
		{"rename bad id", ada, "PATCH", "/api/v1/lists/abc", map[string]string{"name": "x"}, 404, "list_not_found"},
		{"rename name missing", ada, "PATCH", path, `{}`, 400, "invalid_name"},
		{"rename name long", ada, "PATCH", path, map[string]string{"name": strings.Repeat("n", 65)}, 400, "invalid_name"},
		{"rename too large", ada, "PATCH", path, `{"name":"` + big + `"}`, 413, "too_large"},
		{"delete without auth", anon, "DELETE", path, nil, 401, "not_signed_in"},
		{"delete not owner", bob, "DELETE", path, nil, 404, "list_not_found"},
		{"delete unknown", ada, "DELETE", listPath(l.ID + 1000), nil, 404, "list_not_found"},
		{"add without auth", anon, "PUT", path + "/members/bob", nil, 401, "not_signed_in"},
		{"add not owner", bob, "PUT", path + "/members/bob", nil, 404, "list_not_found"},
		{"add someone not followed", ada, "PUT", path + "/members/bob", nil, 422, "not_following"},
		{"add unknown login", ada, "PUT", path + "/members/nobody", nil, 404, "not_found"},
		{"add malformed login", ada, "PUT", path + "/members/no.body", nil, 404, "not_found"},
		{"add to unknown list", ada, "PUT", listPath(l.ID+1000, "/members/bob"), nil, 404, "list_not_found"},
		{"add to bad id", ada, "PUT", "/api/v1/lists/x/members/bob", nil, 404, "list_not_found"},
		{"remove not owner", bob, "DELETE", path + "/members/bob", nil, 404, "list_not_found"},
		{"remove unknown login", ada, "DELETE", path + "/members/nobody", nil, 404, "not_found"},
		{"remove from unknown list", ada, "DELETE", listPath(l.ID+1000, "/members/bob"), nil, 404, "list_not_found"},
		{"put a list", ada, "PUT", path, map[string]string{"name": "x"}, 405, "method_not_allowed"},
		{"post to a list", ada, "POST", path, map[string]string{"name": "x"}, 405, "method_not_allowed"},
	})
	// A cookie-authenticated change from another site is refused.
	res := anon.do("PATCH", path, map[string]string{"name": "forged"},
		"Cookie", web.SessionCookie+"="+ada.token, "Origin", "https://evil.example")
	if res.Status != http.StatusForbidden || res.errorCode(t) != "forbidden_origin" {
		t.Fatalf("a cross-site rename: %d %s, want 403 forbidden_origin", res.Status, res.Body)
	}

	// Nothing above changed anything.
	if got := ada.listOf(l.ID); got.Name != "ada's" || got.Members != 0 {
		t.Fatalf("the list after bad input: %+v", got)
	}
	var mine struct{ Lists []listJSON }
	ada.must(http.StatusOK, "GET", "/api/v1/lists", nil, &mine)
	if len(mine.Lists) != 1 {
		t.Fatalf("ada has %d lists after bad input, want 1", len(mine.Lists))
	}
	bob.must(http.StatusOK, "GET", "/api/v1/lists", nil, &mine)
	if len(mine.Lists) != 0 {
		t.Fatalf("bob has %d lists after bad input, want 0", len(mine.Lists))
	}
}

// Past the caps, a new list or member is refused with 409 and the cap in
// the message.
func TestListCapsAPI(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUp(t, "ada")
	in.signUp(t, "late")
	ada.follow("late")
	var lists []listJSON
	for i := range social.MaxListsPerUser {
		lists = append(lists, ada.createList(fmt.Sprint("list ", i)))
	}
	res := ada.do("POST", "/api/v1/lists", map[string]string{"name": "one too many"})
	if res.Status != http.StatusConflict || res.errorCode(t) != "too_many_lists" || !strings.Contains(string(res.Body), fmt.Sprint(social.MaxListsPerUser)) {
		t.Fatalf("list %d: %d %s, want 409 too_many_lists", social.MaxListsPerUser+1, res.Status, res.Body)
	}

	// Members are added through the service, which is quicker than HTTP.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := lists[0]
	for i := range social.MaxListMembers {
		u, _, err := in.social.SignUp(ctx, fmt.Sprintf("m%03d", i), "M", "kettle-drum-41")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := in.social.Follow(ctx, ada.id, u.Login); err != nil {
			t.Fatal(err)
		}
		if _, err := in.social.AddListMember(ctx, ada.id, full.ID, u.Login); err != nil {
			t.Fatal(err)
		}
	}
	res = ada.do("PUT", listPath(full.ID, "/members/late"), nil)
	if res.Status != http.StatusConflict || res.errorCode(t) != "list_full" || !strings.Contains(string(res.Body), fmt.Sprint(social.MaxListMembers)) {
		t.Fatalf("member %d: %d %s, want 409 list_full", social.MaxListMembers+1, res.Status, res.Body)
	}
	var again struct{ List listJSON }
	ada.must(http.StatusOK, "PUT", listPath(full.ID, "/members/m007"), nil, &again)
	if again.List.Members != social.MaxListMembers {
		t.Fatalf("adding a member again to a full list: %+v", again.List)
	}
}

// List changes have a limit of their own per user; reads have none.
func TestListLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ListWritesPerUser: perHour(3)}
	in := e.start()
	a := in.signUp(t, "curator")
	in.signUp(t, "someone")
	a.follow("someone")
	l := a.createList("mine")
	a.must(http.StatusOK, "PUT", listPath(l.ID, "/members/someone"), nil, nil)
	a.must(http.StatusOK, "PATCH", listPath(l.ID), map[string]string{"name": "renamed"}, nil)
	refused(t, "fourth list change", a.do("DELETE", listPath(l.ID, "/members/someone"), nil))
	refused(t, "fifth list change", a.do("POST", "/api/v1/lists", map[string]string{"name": "another"}))
	for range 5 {
		a.must(http.StatusOK, "GET", listPath(l.ID, "/statuses"), nil, nil)
	}
	if got := a.listOf(l.ID); got.Members != 1 || got.Name != "renamed" {
		t.Fatalf("list after refused changes: %+v", got)
	}
	if got := in.metric(t, "chorus_rate_limited_total", `limit="list"`); got != 2 {
		t.Fatalf("chorus_rate_limited_total{limit=list} = %v, want 2", got)
	}
	in.signUp(t, "other").createList("another user is not limited")
}

// Only accounts one follows may be put in one's lists: anyone else is
// refused with 422 not_following and the list is unchanged; unfollowing a
// member takes them out of one's lists.
func TestListsOnlyFollowees(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	srv := in.start()
	ada := srv.signUp(t, "ada")
	bob := srv.signUp(t, "bob")
	l := ada.createList("people")
	bob.post("bob's")

	res := ada.do("PUT", listPath(l.ID, "/members/bob"), nil)
	if res.Status != http.StatusUnprocessableEntity || res.errorCode(t) != "not_following" {
		t.Fatalf("adding someone not followed: %d %s, want 422 not_following", res.Status, res.Body)
	}
	if got := ada.listOf(l.ID); got.Members != 0 {
		t.Fatalf("the list after the refusal: %+v", got)
	}
	ada.follow("bob")
	ada.must(http.StatusOK, "PUT", listPath(l.ID, "/members/bob"), nil, nil)
	if page := ada.timeline(listPath(l.ID, "/statuses")); len(page.Statuses) != 1 {
		t.Fatalf("list timeline after adding bob: %d statuses, want 1", len(page.Statuses))
	}
	ada.unfollow("bob")
	if got := ada.listOf(l.ID); got.Members != 0 {
		t.Fatalf("the list after unfollowing its member: %+v", got)
	}
	if page := ada.timeline(listPath(l.ID, "/statuses")); len(page.Statuses) != 0 {
		t.Fatalf("list timeline after unfollowing bob: %d statuses, want 0", len(page.Statuses))
	}
}
