package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
)

// Deleting an account takes everything of it out of Redis: after the jobs
// are done, a scan of every key finds nothing of the user but the reserved
// login, and no timeline holds a status of theirs. Their streams close,
// their friends are told, and the login cannot be taken again.
func TestDeleteAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in1, in2 := e.start(), e.start()
	bob := in1.signUp(t, "bob")
	carl := in1.signUp(t, "carl")
	dora := in2.signUp(t, "dora")
	ada := in2.signUp(t, "ada")

	// Everything an account can hold: statuses (a mention, a reply, a
	// repost), follows both ways and a friendship, likes given and taken,
	// a list of its own and a place in another's, notifications both ways.
	befriend(ada, carl)
	bob.follow("ada")
	ada.follow("bob")
	dora.follow("ada")
	bobs := bob.post("bob's first")
	var mine []int64
	for _, msg := range []string{"ada's first", "hello @bob", "a third"} {
		mine = append(mine, ada.post(msg).ID)
	}
	var reply struct{ Status statusJSON }
	ada.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]any{"message": "a reply", "reply_to": bobs.ID}, &reply)
	mine = append(mine, reply.Status.ID)
	ada.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/repost", bobs.ID), nil, nil)
	ada.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/like", bobs.ID), nil, nil)
	bob.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/like", mine[0]), nil, nil)
	bob.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/repost", mine[0]), nil, nil)
	var list struct{ List struct{ ID int64 } }
	ada.must(http.StatusCreated, "POST", "/api/v1/lists", map[string]string{"name": "mine"}, &list)
	ada.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/lists/%d/members/carl", list.List.ID), nil, nil)
	var bobsList struct{ List struct{ ID int64 } }
	bob.must(http.StatusCreated, "POST", "/api/v1/lists", map[string]string{"name": "bob's"}, &bobsList)
	bob.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/lists/%d/members/ada", bobsList.List.ID), nil, nil)
	ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": "soon gone"}, nil)
	// Every entry of theirs, the repost's own included.
	for _, st := range bob.timeline("/api/v1/users/ada/statuses?limit=100").Statuses {
		if !slices.Contains(mine, st.ID) {
			mine = append(mine, st.ID)
		}
	}
	if len(mine) != 5 {
		t.Fatalf("ada's entries %v, want 5", mine)
	}
	stream := in1.as(ada).connect()
	carls := carl.connect()

	// A wrong password changes nothing.
	if res := ada.do("DELETE", "/api/v1/me", map[string]string{"password": "password-bob"}); res.Status != http.StatusUnauthorized || res.errorCode(t) != "invalid_credentials" {
		t.Fatalf("a deletion with a wrong password: %d %s", res.Status, res.Body)
	}
	for _, tc := range []struct {
		name   string
		c      *client
		body   any
		status int
		code   string
	}{
		{"no session", in1.anon(t), map[string]string{"password": "password-ada"}, 401, "not_signed_in"},
		{"not JSON", ada, "password", 400, "invalid_json"},
		{"password a number", ada, map[string]any{"password": 7}, 400, "invalid_json"},
		{"no password", ada, map[string]string{}, 401, "invalid_credentials"},
		{"too large", ada, `{"password": "` + strings.Repeat("x", 70<<10) + `"}`, 413, "too_large"},
	} {
		if res := tc.c.do("DELETE", "/api/v1/me", tc.body); res.Status != tc.status || res.errorCode(t) != tc.code {
			t.Fatalf("%s: %d %s, want %d %s", tc.name, res.Status, res.Body, tc.status, tc.code)
		}
	}
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)

	ada.must(http.StatusNoContent, "DELETE", "/api/v1/me", map[string]string{"password": "password-ada"}, nil)
	if code := stream.closedWith(10 * time.Second); code != websocket.StatusPolicyViolation {
		t.Fatalf("ada's stream closed %d, want 1008", code)
	}
	if res := ada.do("GET", "/api/v1/me", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("the deleted account's session reads /me: %d", res.Status)
	}
	for _, path := range []string{"/api/v1/users/ada", "/api/v1/users/ada/statuses"} {
		if res := bob.do("GET", path, nil); res.Status != http.StatusNotFound {
			t.Fatalf("GET %s of a deleted account: %d %s", path, res.Status, res.Body)
		}
	}
	if res := in1.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "ada", "password": "password-ada"}); res.Status != http.StatusUnauthorized {
		t.Fatalf("a deleted account signs in: %d %s", res.Status, res.Body)
	}
	if res := in1.anon(t).do("POST", "/api/v1/users", map[string]string{"login": "ADA", "name": "Another", "password": "kettle-drum-41"}); res.Status != http.StatusConflict {
		t.Fatalf("a deleted account's login taken again: %d %s", res.Status, res.Body)
	}

	// Once every job is done, nothing of ada is left.
	testio.Eventually(t, time.Minute, func() string {
		n, _, err := in1.social.JobBacklog(t.Context())
		if err != nil {
			return err.Error()
		}
		if n != 0 {
			return fmt.Sprintf("%d jobs left", n)
		}
		return ""
	})
	if f := carls.nextOf("friend_removed", 10*time.Second); f.login(t) != "ada" {
		t.Fatalf("carl was told of %s", f.User)
	}
	if left := leftOf(t, in1, ada.id, "ada", mine); len(left) > 0 {
		t.Fatalf("left of the deleted account:\n%s", strings.Join(left, "\n"))
	}
	for _, c := range []*client{bob, carl, dora} {
		u := c.user(c.login)
		if u.Followers != 0 && c.login != "carl" || u.Following != 0 && c.login != "bob" {
			t.Errorf("%s after the deletion: %+v", c.login, u)
		}
	}
	if got := bob.user("bob").Following; got != 0 {
		t.Errorf("bob follows %d, want 0", got)
	}
	if got := dora.timeline("/api/v1/timelines/home"); len(got.Statuses) != 0 {
		t.Errorf("dora's home holds %v", ids(got.Statuses))
	}
	if got := bob.timeline("/api/v1/timelines/global"); slices.ContainsFunc(got.Statuses, func(s statusJSON) bool { return s.UID == ada.id }) {
		t.Errorf("the global timeline holds one of ada's")
	}
}

// leftOf scans every key of the instance's prefix and says what in them is
// still of the user uid (login, their statuses ids): a key named by them, a
// member or field naming them, a status of theirs. The login index's entry
// for login is the one thing allowed.
func leftOf(t *testing.T, in *instance, uid int64, login string, statuses []int64) []string {
	t.Helper()
	ctx := t.Context()
	id := strconv.FormatInt(uid, 10)
	theirs := map[string]bool{}
	for _, s := range statuses {
		theirs[strconv.FormatInt(s, 10)] = true
	}
	// Keys whose last part is a status id, a list id or an instance, not a
	// user.
	notUser := func(name string) bool {
		for _, p := range []string{"status:", "replies:", "likes:", "reposts:", "list:", "{fanout}:", "fanout:", "instance", "rate"} {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	var left []string
	for _, key := range in.keys(t, in.prefix+"*") {
		name := strings.TrimPrefix(key, in.prefix)
		parts := strings.FieldsFunc(name, func(r rune) bool { return r == ':' || r == '{' || r == '}' })
		if !notUser(name) && slices.Contains(parts, id) {
			left = append(left, "key "+key)
			continue
		}
		if strings.HasPrefix(name, "status:") && len(parts) == 2 && theirs[parts[1]] {
			left = append(left, "status "+key)
			continue
		}
		typ, err := in.rdb.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		var members []string
		switch typ {
		case "zset":
			members, err = in.rdb.ZRange(ctx, key, 0, -1).Result()
		case "set":
			members, err = in.rdb.SMembers(ctx, key).Result()
		case "hash":
			var h map[string]string
			h, err = in.rdb.HGetAll(ctx, key).Result()
			for f, v := range h {
				if name == "users:by_login" && f == login && v == "0" {
					continue // the reserved login, leading to no user
				}
				if (strings.HasPrefix(name, "user:") || strings.HasPrefix(name, "status:")) && (f == "id" || f == "uid") && v == id || strings.Contains(":"+f+":"+v+":", ":"+id+":") && strings.HasPrefix(name, "notes") {
					left = append(left, fmt.Sprintf("field %s of %s: %s", f, key, v))
				}
				if name == "users:by_login" && v == id {
					left = append(left, fmt.Sprintf("login %s of %s", f, key))
				}
			}
		}
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		has := func(prefixes ...string) bool {
			return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
		}
		// Sets of users, and sets of statuses.
		userValued := has("followers:", "following:", "friends:", "list:members:", "likes:", "reposts:", "users:",
			"connected", "last.seen", "online.copy", "active.users:", "instance.conns:", "pulls:", "authors:pulled")
		statusValued := has("home:", "profile:", "global", "list:statuses:", "replies:", "liked:", "authors:pulled:statuses")
		if has("home:reposts:") {
			// original -> the repost entry that brought it: the entry must
			// not be a status of theirs. (A mapping to an entry deleted is
			// no repost, by the reposts' own rule, whoever made it: it
			// leaves with the home's trim, as every deleted repost's does.)
			zs, err := in.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range zs {
				entry := strconv.FormatInt(int64(z.Score), 10)
				if owner, _ := in.rdb.HGet(ctx, in.prefix+"status:"+entry, "uid").Result(); owner == id {
					left = append(left, fmt.Sprintf("repost entry %s in %s", entry, key))
				}
			}
			statusValued = false
		}
		for _, m := range members {
			head, tail, _ := strings.Cut(m, ":")
			switch {
			case userValued && (m == id || head == id && name != "authors:pulled:statuses" || strings.HasSuffix(m, "\x00"+id)):
				left = append(left, fmt.Sprintf("member %q of %s", m, key))
			case statusValued && theirs[head], name == "authors:pulled:statuses" && tail == id:
				left = append(left, fmt.Sprintf("status %q in %s", m, key))
			}
		}
	}
	return left
}
