package web_test

import (
	"net/http"
	"testing"
	"time"

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
	eventually(t, 3*time.Second, func() string {
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
	eventually(t, 5*time.Second, func() string {
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
