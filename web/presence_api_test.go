package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
)

// Presence (online, last_seen) shows only to the user and their friends.
func TestPresencePrivacy(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice, friend, fan, stranger := in.signUp(t, "alice"), in.signUp(t, "friend"), in.signUp(t, "fan"), in.signUp(t, "stranger")
	befriend(alice, friend)
	fan.follow("alice") // one-way: not a friend
	s := alice.connect()
	defer s.close()

	type seen struct{ online, lastSeen bool }
	look := func(c *client, path string) seen {
		t.Helper()
		var out struct {
			User map[string]any `json:"user"`
		}
		c.must(http.StatusOK, "GET", path, nil, &out)
		_, hasOnline := out.User["online"]
		_, hasSeen := out.User["last_seen"]
		return seen{hasOnline, hasSeen}
	}
	cases := []struct {
		name string
		c    *client
		path string
		want seen
	}{
		{"herself, /me", alice, "/api/v1/me", seen{true, true}},
		{"herself, profile", alice, "/api/v1/users/alice", seen{true, true}},
		{"a friend", friend, "/api/v1/users/alice", seen{true, true}},
		{"a follower who is no friend", fan, "/api/v1/users/alice", seen{false, false}},
		{"a stranger", stranger, "/api/v1/users/alice", seen{false, false}},
		{"nobody signed in", in.anon(t), "/api/v1/users/alice", seen{false, false}},
	}
	for _, tc := range cases {
		if got := look(tc.c, tc.path); got != tc.want {
			t.Errorf("%s: online/last_seen shown = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	var me struct{ User userJSON }
	alice.must(http.StatusOK, "GET", "/api/v1/me", nil, &me)
	if me.User.Online == nil || !*me.User.Online || me.User.LastSeen == nil || time.Since(*me.User.LastSeen) > time.Minute {
		t.Fatalf("alice sees herself as %+v", me.User)
	}

	// In lists, the same rule, user by user.
	var list struct{ Users []map[string]any }
	friend.must(http.StatusOK, "GET", "/api/v1/users/alice/followers", nil, &list)
	for _, u := range list.Users {
		_, shown := u["online"]
		if want := u["login"] == "friend"; shown != want {
			t.Errorf("friend reading alice's followers: presence of %v shown = %v, want %v", u["login"], shown, want)
		}
	}
	stranger.must(http.StatusOK, "GET", "/api/v1/users/friend/following", nil, &list)
	for _, u := range list.Users {
		if _, shown := u["online"]; shown {
			t.Errorf("a stranger sees the presence of %v", u["login"])
		}
	}
	var friends struct{ Users []userJSON }
	friend.must(http.StatusOK, "GET", "/api/v1/friends", nil, &friends)
	if len(friends.Users) != 1 || friends.Users[0].Online == nil || !*friends.Users[0].Online {
		t.Fatalf("friend's friends = %+v, want alice online", friends.Users)
	}
}

func TestOnlineFriendsAndSiteCounts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	me, a, b, c := in.signUp(t, "myself"), in.signUp(t, "pal_a"), in.signUp(t, "pal_b"), in.signUp(t, "notpal")
	befriend(me, a)
	befriend(me, b)
	c.follow("myself")

	var online struct {
		Friends []struct {
			User struct {
				ID    int64  `json:"id"`
				Login string `json:"login"`
				Name  string `json:"name"`
			} `json:"user"`
			LastSeen time.Time `json:"last_seen"`
		} `json:"friends"`
	}
	me.must(http.StatusOK, "GET", "/api/v1/friends/online", nil, &online)
	if len(online.Friends) != 0 {
		t.Fatalf("online friends before anyone connects = %+v", online.Friends)
	}
	sa := a.connect()
	time.Sleep(5 * time.Millisecond)
	sb := b.connect()
	sc := c.connect()
	defer sc.close()
	testio.Eventually(t, 3*time.Second, func() string {
		me.must(http.StatusOK, "GET", "/api/v1/friends/online", nil, &online)
		if len(online.Friends) != 2 || online.Friends[0].User.Login != "pal_b" || online.Friends[1].User.Login != "pal_a" {
			return "online friends, most recent first, want [pal_b pal_a]"
		}
		return ""
	})
	if f := online.Friends[0]; f.User.Name != "Name pal_b" || f.User.ID != b.id || time.Since(f.LastSeen) > time.Minute {
		t.Fatalf("item %+v", f)
	}
	var counts struct {
		Online        *int64 `json:"online"`
		ActiveLast10m *int64 `json:"active_last_10m"`
	}
	me.must(http.StatusOK, "GET", "/api/v1/presence", nil, &counts)
	if counts.Online == nil || *counts.Online != 3 || counts.ActiveLast10m == nil || *counts.ActiveLast10m != 3 {
		t.Fatalf("presence counts = online %v, active %v; want 3 and 3", counts.Online, counts.ActiveLast10m)
	}
	sa.close()
	sb.close()
	testio.Eventually(t, 5*time.Second, func() string {
		me.must(http.StatusOK, "GET", "/api/v1/friends/online", nil, &online)
		if len(online.Friends) != 0 {
			return "friends still online after closing"
		}
		me.must(http.StatusOK, "GET", "/api/v1/presence", nil, &counts)
		if *counts.Online != 1 || *counts.ActiveLast10m != 3 {
			return "counts after two left: want online 1, active 3"
		}
		return ""
	})
	if res := in.anon(t).do("GET", "/api/v1/friends/online", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("online friends without auth: %d", res.Status)
	}
}

// A user's presence fields come together: last_seen is null, not missing,
// for a friend never seen; and every user a signed-in viewer sees, in lists
// as alone, says whether the viewer follows them.
func TestUserViewsNeverSeenAndYouFollow(t *testing.T) {
	t.Parallel()
	srv := newEnv(t, social.Options{}).start()
	viewer, friend, followed, other := srv.signUp(t, "viewer"), srv.signUp(t, "neverseen"), srv.signUp(t, "followed"), srv.signUp(t, "other")
	befriend(viewer, friend)
	viewer.follow("followed")
	other.follow("viewer")
	followed.follow("viewer")

	var one struct{ User map[string]any }
	viewer.must(http.StatusOK, "GET", "/api/v1/users/neverseen", nil, &one)
	if v, ok := one.User["last_seen"]; !ok || v != nil {
		t.Fatalf("a friend never seen: last_seen = %v (present %v), want null", v, ok)
	}
	if one.User["online"] != false || one.User["you_follow"] != true {
		t.Fatalf("a friend never seen: %v", one.User)
	}

	var list struct{ Users []map[string]any }
	viewer.must(http.StatusOK, "GET", "/api/v1/users/viewer/followers", nil, &list)
	want := map[string]any{"neverseen": true, "followed": true, "other": false}
	if len(list.Users) != len(want) {
		t.Fatalf("followers: %v", list.Users)
	}
	for _, u := range list.Users {
		login := u["login"].(string)
		if u["you_follow"] != want[login] {
			t.Errorf("%s in the list: you_follow = %v, want %v", login, u["you_follow"], want[login])
		}
	}
	var theirs struct{ Users []map[string]any }
	viewer.must(http.StatusOK, "GET", "/api/v1/users/neverseen/following", nil, &theirs)
	for _, u := range theirs.Users {
		if _, ok := u["you_follow"]; ok && u["login"] == "viewer" {
			t.Errorf("the viewer's own item carries you_follow: %v", u)
		}
	}
	var friends struct{ Users []map[string]any }
	viewer.must(http.StatusOK, "GET", "/api/v1/friends", nil, &friends)
	if len(friends.Users) != 2 { // neverseen, and followed, who follows back
		t.Fatalf("friends: %v", friends.Users)
	}
	for _, f := range friends.Users {
		if v, ok := f["last_seen"]; !ok || v != nil || f["you_follow"] != true {
			t.Fatalf("friends list item %v: want you_follow true and last_seen null", f)
		}
	}
	var anon struct{ Users []map[string]any }
	srv.anon(t).must(http.StatusOK, "GET", "/api/v1/users/viewer/followers", nil, &anon)
	for _, u := range anon.Users {
		if _, ok := u["you_follow"]; ok {
			t.Fatalf("a visitor's list carries you_follow: %v", u)
		}
	}
}

// The user that sign-up and sign-in answer with carries their own presence,
// as /me does: a new account is offline and never seen; signing in while a
// stream of theirs is open finds them online, and after it closes, offline
// and last seen then.
func TestSignInAnswersOwnPresence(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	type answer struct {
		User  map[string]any `json:"user"`
		Token string         `json:"token"`
	}
	var up answer
	in.anon(t).must(http.StatusCreated, "POST", "/api/v1/users",
		map[string]string{"login": "ada", "name": "Ada", "password": "password-ada"}, &up)
	if online, ok := up.User["online"]; !ok || online != false {
		t.Errorf("sign-up: online = %v (shown %v), want false", online, ok)
	}
	if seen, ok := up.User["last_seen"]; !ok || seen != nil {
		t.Errorf("sign-up: last_seen = %v (shown %v), want null", seen, ok)
	}

	signIn := func() answer {
		var out answer
		in.anon(t).must(http.StatusOK, "POST", "/api/v1/sessions",
			map[string]string{"login": "ada", "password": "password-ada"}, &out)
		return out
	}
	ada := in.anon(t)
	ada.token, ada.login = up.Token, "ada"
	s := ada.connect()
	in1 := signIn()
	if in1.User["online"] != true || in1.User["last_seen"] == nil {
		t.Errorf("sign-in with a stream open: online = %v, last_seen = %v; want true and a time", in1.User["online"], in1.User["last_seen"])
	}
	s.close()
	testio.Eventually(t, 10*time.Second, func() string {
		out := signIn()
		if out.User["online"] != false || out.User["last_seen"] == nil {
			return fmt.Sprintf("sign-in after the stream closed: online = %v, last_seen = %v; want false and a time", out.User["online"], out.User["last_seen"])
		}
		return ""
	})
}
