package social

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"chorus/protocol"
)

func signUpNamed(tb testing.TB, s *Service, login, name string) User {
	tb.Helper()
	u, _, err := s.SignUp(ctxT(tb), login, name, "password-"+login)
	if err != nil {
		tb.Fatalf("sign up %s: %v", login, err)
	}
	return u
}

func logins(users []User) []string {
	out := make([]string, len(users))
	for i, u := range users {
		out[i] = u.Login
	}
	return out
}

func TestSearchUsersByLoginAndName(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	signUpNamed(t, s, "ada_l", "Ada Lovelace")
	signUpNamed(t, s, "Adams", "John Adams")
	signUpNamed(t, s, "grace", "Grace Brewster Hopper")
	signUpNamed(t, s, "adl", "Émile Zola")
	signUpNamed(t, s, "zoe", "Zoë Love")
	signUpNamed(t, s, "love", "Some One")

	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"ada", []string{"ada_l", "Adams"}},
		{"ADA", []string{"ada_l", "Adams"}},
		{"@ada", []string{"ada_l", "Adams"}},
		{"  lovelace ", []string{"ada_l"}},
		{"lovel", []string{"ada_l"}},               // a later word of the name
		{"love", []string{"love", "zoe", "ada_l"}}, // the exact login first
		{"hopper", []string{"grace"}},
		{"brewster h", []string{"grace"}},
		{"émile", []string{"adl"}},
		{"zoë", []string{"zoe"}},
		{"ad", []string{"ada_l", "Adams", "adl"}},
		{"adamsx", nil},
		{"q", nil},
	} {
		got, err := s.SearchUsers(ctx, 0, tc.q, 10)
		if err != nil {
			t.Fatalf("search %q: %v", tc.q, err)
		}
		if !slices.Equal(logins(got), tc.want) {
			t.Errorf("search %q = %v, want %v", tc.q, logins(got), tc.want)
		}
	}
	// A user is listed once however many of their terms match.
	if got, _ := s.SearchUsers(ctx, 0, "a", 10); len(got) != 3 {
		t.Errorf("search %q = %v, want ada_l, Adams and adl once each", "a", logins(got))
	}
	if got, _ := s.SearchUsers(ctx, 0, "a", 2); len(got) != 2 {
		t.Errorf("search with limit 2 gave %d users", len(got))
	}
}

func TestSearchUsersRefusesBadQueries(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	for _, q := range []string{"", "  ", "@", "a\x00b", "a\nb", "\xff", strings.Repeat("a", MaxQueryRunes+1)} {
		_, err := s.SearchUsers(ctxT(t), 0, q, 10)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "q" {
			t.Errorf("search %q: %v, want an invalid q", q, err)
		}
	}
}

// Users who signed up before the indexes existed are found once they are
// built, and ranked by the follower counts their hashes hold (a rank left
// over from a user's followers since gone is taken out).
func TestBuildIndexes(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var users []User
	for _, l := range []string{"old_one", "old_two", "old_three"} {
		users = append(users, signUp(t, s, l))
	}
	// As a Redis from before the indexes: none of them, old_one followed
	// by two (the build reads the count, not the follows), and a rank
	// without followers behind it.
	for _, key := range []string{s.keys.searchIndex(), s.keys.popular()} {
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, s.keys.user(users[0].ID), "followers", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, s.keys.popular(), redis.Z{Score: 7, Member: users[1].ID}).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SearchUsers(ctx, 0, "old", 10); len(got) != 0 {
		t.Fatalf("search before the build found %v", logins(got))
	}
	if err := s.BuildIndexes(ctx, log); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SearchUsers(ctx, 0, "old", 10); len(got) != 3 {
		t.Fatalf("search after the build found %v, want the three", logins(got))
	}
	rank, err := rdb.ZRangeWithScores(ctx, s.keys.popular(), 0, -1).Result()
	if err != nil || len(rank) != 1 || rank[0].Member != itoa(users[0].ID) || rank[0].Score != 2 {
		t.Fatalf("ranking after the build = %v (%v), want old_one with 2", rank, err)
	}
	// Built once: a second call reads nothing.
	if err := rdb.Del(ctx, s.keys.searchIndex()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.BuildIndexes(ctx, log); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, s.keys.searchIndex()).Result(); n != 0 {
		t.Fatal("a second build ran")
	}
}

// Follows and unfollows keep the ranking by followers exact; a user with
// none leaves it.
func TestFollowerRanking(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	a, b, c := signUp(t, s, "rank_a"), signUp(t, s, "rank_b"), signUp(t, s, "rank_c")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := s.Follow(ctx, b.ID, "rank_a")
	must(err)
	_, _, err = s.Follow(ctx, b.ID, "rank_a") // again: no change
	must(err)
	_, _, err = s.Follow(ctx, c.ID, "rank_a")
	must(err)
	_, _, err = s.Follow(ctx, a.ID, "rank_b")
	must(err)
	_, err = s.Unfollow(ctx, a.ID, "rank_b")
	must(err)
	_, err = s.Unfollow(ctx, a.ID, "rank_b") // again: no change
	must(err)
	rank, err := rdb.ZRangeWithScores(ctx, s.keys.popular(), 0, -1).Result()
	must(err)
	if len(rank) != 1 || rank[0].Member != itoa(a.ID) || rank[0].Score != 2 {
		t.Fatalf("ranking = %v, want only rank_a with 2", rank)
	}
}

// A new follow is told to the followee's channel once, with the follower and
// whether the followee follows them back.
func TestFollowPublishesFollowed(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUpNamed(t, s, "ada", `Ada "A" Lovelace`), signUp(t, s, "bob")
	sub := listen(t, s, rdb, s.UserChannel(ada.ID), s.UserChannel(bob.ID))
	for range 2 { // the second follow changes nothing and tells nobody
		if _, _, err := s.Follow(ctx, ada.ID, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Follow(ctx, bob.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	events := eventsSoFar(t, sub)
	for _, tc := range []struct {
		to, from  User
		youFollow bool
	}{
		{to: bob, from: ada, youFollow: false},
		{to: ada, from: bob, youFollow: true}, // a follow back
	} {
		got := ofType(events[s.UserChannel(tc.to.ID)], protocol.TypeFollowed)
		want := protocol.UserRef{ID: tc.from.ID, Login: tc.from.Login, Name: tc.from.Name}
		if len(got) != 1 || got[0].Type != protocol.TypeFollowed || got[0].User == nil || *got[0].User != want ||
			got[0].YouFollow == nil || *got[0].YouFollow != tc.youFollow {
			t.Errorf("%s was told %+v, want once that %+v follows them, you_follow %v", tc.to.Login, got, want, tc.youFollow)
		}
	}
}

func TestSuggestions(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	u := map[string]User{}
	for _, l := range []string{"me_", "f_1", "f_2", "f_3", "fan", "fof_two", "fof_one", "star", "nobody"} {
		u[l] = signUp(t, s, l)
	}
	follow := func(who, whom string) {
		t.Helper()
		if _, _, err := s.Follow(ctx, u[who].ID, whom); err != nil {
			t.Fatal(err)
		}
	}
	// me_ follows f_1, f_2, f_3; f_1 and f_2 follow fof_two; f_3 follows
	// fof_one; fan follows me_; all of them follow star.
	follow("me_", "f_1")
	follow("me_", "f_2")
	follow("me_", "f_3")
	follow("f_1", "fof_two")
	follow("f_2", "fof_two")
	follow("f_3", "fof_one")
	follow("f_1", "f_2") // f2 is followed by f1, but me follows f2 already
	follow("fan", "me_")
	follow("f_1", "fan") // a follower, named as such, not as a friend of a friend
	for _, l := range []string{"f_1", "f_2", "f_3", "fan", "nobody"} {
		follow(l, "star")
	}
	follow("nobody", "me_")
	follow("me_", "nobody") // a follower followed back is no suggestion

	got, err := s.Suggestions(ctx, u["me_"].ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, sg := range got {
		seen = append(seen, sg.User.Login+":"+sg.Reason+":"+strings.Join(logins(sg.FollowedBy), ","))
	}
	want := []string{
		"fan:follows_you:",
		"star:followed_by_following:nobody,f_3,f_2", // by four of mine: three named, newest follow first
		"fof_two:followed_by_following:f_2,f_1",
		"fof_one:followed_by_following:f_3",
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("suggestions = %v, want %v", seen, want)
	}
	if got, _ := s.Suggestions(ctx, u["me_"].ID, 2); len(got) != 2 {
		t.Fatalf("limit 2 gave %d", len(got))
	}
	// Someone who follows nobody is offered the most followed.
	lone := signUp(t, s, "lone")
	got, err = s.Suggestions(ctx, lone.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].User.Login != "star" || got[0].Reason != ReasonPopular || got[1].Reason != ReasonPopular {
		t.Fatalf("suggestions for a newcomer = %+v, want star first, both popular", got)
	}
}

// Suggestions leave out suspended accounts before their limit, and a
// suspended account's follows (hidden from everyone) are no reason to
// suggest anyone.
func TestSuggestionsLeaveOutTheSuspended(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	u := map[string]User{}
	for _, l := range []string{"me_", "spy", "xuser", "star", "other", "p_1", "p_2", "p_3"} {
		u[l] = signUp(t, s, l)
	}
	for _, f := range [][2]string{
		{"me_", "spy"}, {"spy", "xuser"},
		{"p_1", "star"}, {"p_2", "star"}, {"p_3", "star"}, {"p_1", "other"}, {"p_2", "other"},
	} {
		if _, _, err := s.Follow(ctx, u[f[0]].ID, f[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"star", "spy"} {
		if _, err := s.Suspend(ctx, u[l].ID); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Suggestions(ctx, u["me_"].ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, sg := range got {
		seen = append(seen, sg.User.Login+":"+sg.Reason)
	}
	if len(got) != 2 || !slices.Contains(seen, "other:popular") || slices.Contains(seen, "xuser:followed_by_following") {
		t.Fatalf("suggestions = %v, want two, other among them (star, more followed, is suspended), none for the suspended spy's follow", seen)
	}
}

// Suspended accounts, a deleted one whose job has not yet taken its
// entries out, and the login of a deleted one (held for no one) take no
// place of a search's page: it is short only when fewer match. Suspended
// accounts, ranked first here by their followers, are left out before the
// users are read, more of them than the reads that refill a page.
func TestSearchLeavesOutWhomItCannotShowBeforeItsLimit(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	gone := signUp(t, s, "sam")
	fan := signUp(t, s, "fan")
	for i := range searchRefills + 2 {
		banned := signUp(t, s, fmt.Sprintf("sam_banned%d", i))
		follow(t, s, fan.ID, banned.Login)
		if _, err := s.Suspend(ctx, banned.ID); err != nil {
			t.Fatal(err)
		}
	}
	signUp(t, s, "sam_a")
	signUp(t, s, "sam_b")
	if err := s.DeleteAccount(ctx, gone.ID, "password-sam", ""); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 2} {
		got, err := s.SearchUsers(ctx, 0, "sam", limit)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"sam_a", "sam_b"}[:limit]; !slices.Equal(logins(got), want) {
			t.Errorf("search %q with limit %d = %v, want %v", "sam", limit, logins(got), want)
		}
	}
}
