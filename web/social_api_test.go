package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
)

// The scenarios of "Redis in Action" chapter 8, replayed through the API.

func TestCreateUserAndStatus(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice := in.signUp(t, "Alice")
	if alice.id <= 0 || alice.login != "Alice" {
		t.Fatalf("signed up as %q #%d", alice.login, alice.id)
	}
	res := in.anon(t).do("POST", "/api/v1/users", map[string]string{"login": "aLICE", "name": "X", "password": "kettle-drum-123"})
	if res.Status != http.StatusConflict || res.errorCode(t) != "login_taken" {
		t.Fatalf("second sign-up in other case: %d %s", res.Status, res.Body)
	}

	st := alice.post("  hello, world  ")
	if st.Message != "hello, world" || st.UID != alice.id || st.Login != "Alice" || st.Name != "Name Alice" || st.ID <= 0 {
		t.Fatalf("posted %+v", st)
	}
	if d := time.Since(st.Posted); d < -time.Minute || d > time.Minute {
		t.Fatalf("posted at %s, now is %s", st.Posted, time.Now())
	}
	var got struct{ Status statusJSON }
	in.anon(t).must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", st.ID), nil, &got)
	if got.Status != st {
		t.Fatalf("GET status = %+v, want %+v", got.Status, st)
	}
	if c := alice.counts("alice"); c.posts != 1 {
		t.Fatalf("posts = %d, want 1", c.posts)
	}
	for _, path := range []string{"/api/v1/timelines/home", "/api/v1/users/alice/statuses", "/api/v1/timelines/global"} {
		if p := alice.timeline(path); !slices.Equal(ids(p.Statuses), []int64{st.ID}) || p.Statuses[0] != st {
			t.Fatalf("%s = %+v, want [%+v]", path, p.Statuses, st)
		}
	}
	var me struct{ User userJSON }
	alice.must(http.StatusOK, "GET", "/api/v1/me", nil, &me)
	if me.User.ID != alice.id || me.User.Name != "Name Alice" || me.User.Posts != 1 {
		t.Fatalf("me = %+v", me.User)
	}
}

func TestFollowAndUnfollowCounts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	a, b, c := in.signUp(t, "ann"), in.signUp(t, "bob"), in.signUp(t, "cat")
	check := func(step string, want map[string]counts) {
		t.Helper()
		for login, w := range want {
			if got := a.counts(login); got != w {
				t.Fatalf("%s: %s has %+v, want %+v", step, login, got, w)
			}
		}
	}
	check("start", map[string]counts{"ann": {}, "bob": {}, "cat": {}})
	a.follow("bob")
	a.follow("BOB") // idempotent, any case
	check("ann follows bob", map[string]counts{"ann": {0, 1, 0}, "bob": {1, 0, 0}})
	c.follow("bob")
	b.follow("ann")
	check("cat follows bob, bob follows ann", map[string]counts{"ann": {1, 1, 0}, "bob": {2, 1, 0}, "cat": {0, 1, 0}})

	var friends struct{ Users []userJSON }
	a.must(http.StatusOK, "GET", "/api/v1/friends", nil, &friends)
	if len(friends.Users) != 1 || friends.Users[0].Login != "bob" {
		t.Fatalf("ann's friends = %+v, want bob", friends.Users)
	}
	var list struct{ Users []userJSON }
	a.must(http.StatusOK, "GET", "/api/v1/users/bob/followers", nil, &list)
	if got := logins(list.Users); !slices.Equal(got, []string{"cat", "ann"}) {
		t.Fatalf("bob's followers = %v, want newest first [cat ann]", got)
	}
	a.must(http.StatusOK, "GET", "/api/v1/users/bob/followers?limit=1&offset=1", nil, &list)
	if got := logins(list.Users); !slices.Equal(got, []string{"ann"}) {
		t.Fatalf("second page of bob's followers = %v, want [ann]", got)
	}
	a.must(http.StatusOK, "GET", "/api/v1/users/ann/following", nil, &list)
	if got := logins(list.Users); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("ann follows %v, want [bob]", got)
	}

	a.unfollow("bob")
	a.unfollow("bob") // idempotent
	check("ann unfollows bob", map[string]counts{"ann": {1, 0, 0}, "bob": {1, 1, 0}, "cat": {0, 1, 0}})
	a.must(http.StatusOK, "GET", "/api/v1/friends", nil, &friends)
	if len(friends.Users) != 0 {
		t.Fatalf("ann's friends after unfollow = %+v, want none", friends.Users)
	}
	b.must(http.StatusOK, "GET", "/api/v1/friends", nil, &friends)
	if len(friends.Users) != 0 {
		t.Fatalf("bob's friends after ann's unfollow = %+v, want none", friends.Users)
	}
}

func logins(us []userJSON) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.Login
	}
	return out
}

// A follow past the most one may follow is refused 409
// too_many_following, and counted nowhere; an unfollow makes room.
func TestFollowingCapAnswers409(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{MaxFollowing: 2}).start()
	fan := in.signUp(t, "fan")
	for _, login := range []string{"one", "two", "three"} {
		in.signUp(t, login)
	}
	fan.follow("one")
	fan.follow("two")
	res := fan.do("PUT", "/api/v1/following/three", nil)
	if res.Status != http.StatusConflict || res.errorCode(t) != "too_many_following" {
		t.Fatalf("a third follow: %d %s, want 409 too_many_following", res.Status, res.Body)
	}
	if !strings.Contains(string(res.Body), "as many accounts as one may (2") {
		t.Errorf("the refusal says %s, want the cap named", res.Body)
	}
	if c := fan.counts("three"); c.followers != 0 {
		t.Errorf("three counts %d followers after a refused follow, want 0", c.followers)
	}
	if c := fan.counts("fan"); c.following != 2 {
		t.Errorf("fan follows %d, want 2", c.following)
	}
	fan.unfollow("one")
	fan.follow("three")
}

func TestFollowBackfillsAndUnfollowRemoves(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{HomeSize: 5}).start()
	a, b := in.signUp(t, "reader"), in.signUp(t, "writer")
	var posted []int64
	for i := range 7 {
		posted = append(posted, b.post(fmt.Sprintf("old %d", i)).ID)
	}
	own := a.post("mine").ID
	a.follow("writer")
	home := a.timeline("/api/v1/timelines/home?limit=100")
	// The home timeline keeps the newest 5: mine and writer's four newest.
	want := []int64{own, posted[6], posted[5], posted[4], posted[3]}
	if !slices.Equal(ids(home.Statuses), want) {
		t.Fatalf("home after follow = %v, want %v", ids(home.Statuses), want)
	}
	a.unfollow("writer")
	home = a.timeline("/api/v1/timelines/home?limit=100")
	if !slices.Equal(ids(home.Statuses), []int64{own}) {
		t.Fatalf("home after unfollow = %v, want [%d]", ids(home.Statuses), own)
	}
}

func TestPostReachesEveryFollowerOverManyPasses(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{FanoutPassSize: 3}).start()
	author := in.signUp(t, "star")
	var fans []*client
	for i := range 11 {
		f := in.signUp(t, fmt.Sprintf("fan%d", i))
		f.follow("star")
		fans = append(fans, f)
	}
	st := author.post("to all my fans")
	testio.Eventually(t, 10*time.Second, func() string {
		for _, f := range fans {
			if got := ids(f.timeline("/api/v1/timelines/home").Statuses); !slices.Equal(got, []int64{st.ID}) {
				return fmt.Sprintf("%s's home = %v, want [%d]", f.login, got, st.ID)
			}
		}
		return ""
	})
}

func TestRefillAfterUnfollow(t *testing.T) {
	t.Parallel()
	// Home keeps 10 and is refilled under 8; refill reads 1 followee a pass.
	in := newEnv(t, social.Options{HomeSize: 10, RefillBelow: 8, RefillStep: 1}).start()
	reader := in.signUp(t, "reader")
	loud, q1, q2 := in.signUp(t, "loud"), in.signUp(t, "quiet1"), in.signUp(t, "quiet2")
	var quiet []int64
	for i := range 4 {
		quiet = append(quiet, q1.post(fmt.Sprintf("q1 %d", i)).ID, q2.post(fmt.Sprintf("q2 %d", i)).ID)
	}
	reader.follow("quiet1")
	reader.follow("quiet2")
	for i := range 10 {
		loud.post(fmt.Sprintf("loud %d", i))
	}
	reader.follow("loud") // the home timeline is now loud's 10 newest
	got := ids(reader.timeline("/api/v1/timelines/home?limit=100").Statuses)
	if len(got) != 10 || slices.Contains(got, quiet[0]) {
		t.Fatalf("home before unfollow = %v, want loud's 10", got)
	}
	reader.unfollow("loud") // empty now: under 8, so refilled from quiet1 and quiet2
	slices.Reverse(quiet)
	testio.Eventually(t, 10*time.Second, func() string {
		got := ids(reader.timeline("/api/v1/timelines/home?limit=100").Statuses)
		if !slices.Equal(got, quiet) {
			return fmt.Sprintf("home after refill = %v, want %v", got, quiet)
		}
		return ""
	})
}

func TestDeleteCleansEveryFollower(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{FanoutPassSize: 2}).start()
	author := in.signUp(t, "author")
	var fans []*client
	for i := range 7 {
		f := in.signUp(t, fmt.Sprintf("fan%d", i))
		f.follow("author")
		fans = append(fans, f)
	}
	keep := author.post("keep me")
	gone := author.post("delete me")
	testio.Eventually(t, 10*time.Second, func() string {
		for _, f := range fans {
			if n := len(f.timeline("/api/v1/timelines/home").Statuses); n != 2 {
				return fmt.Sprintf("%s has %d statuses, want 2", f.login, n)
			}
		}
		return ""
	})
	other := in.signUp(t, "other")
	res := other.do("DELETE", fmt.Sprintf("/api/v1/statuses/%d", gone.ID), nil)
	if res.Status != http.StatusForbidden || res.errorCode(t) != "not_owner" {
		t.Fatalf("delete by another: %d %s", res.Status, res.Body)
	}
	author.deleteStatus(gone.ID)
	// Gone from every read at once.
	if res := other.do("GET", fmt.Sprintf("/api/v1/statuses/%d", gone.ID), nil); res.Status != http.StatusNotFound {
		t.Fatalf("GET deleted status: %d", res.Status)
	}
	for _, path := range []string{"/api/v1/timelines/home", "/api/v1/users/author/statuses", "/api/v1/timelines/global"} {
		if got := ids(author.timeline(path).Statuses); !slices.Equal(got, []int64{keep.ID}) {
			t.Fatalf("%s after delete = %v, want [%d]", path, got, keep.ID)
		}
	}
	for _, f := range fans {
		if got := ids(f.timeline("/api/v1/timelines/home").Statuses); !slices.Equal(got, []int64{keep.ID}) {
			t.Fatalf("%s reads %v right after the delete, want [%d]", f.login, got, keep.ID)
		}
	}
	// And gone from every follower's home timeline in Redis, by the job.
	testio.Eventually(t, 10*time.Second, func() string {
		for _, f := range fans {
			key := in.userKey("home", f.id)
			if n, _ := in.rdb.ZCard(t.Context(), key).Result(); n != 1 {
				return fmt.Sprintf("%s holds %d ids, want 1", key, n)
			}
		}
		return ""
	})
	if c := author.counts("author"); c.posts != 1 {
		t.Fatalf("posts after delete = %d, want 1", c.posts)
	}
	if res := author.do("DELETE", fmt.Sprintf("/api/v1/statuses/%d", gone.ID), nil); res.Status != http.StatusNotFound {
		t.Fatalf("second delete: %d, want 404", res.Status)
	}
}

func TestTimelineCursors(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	a := in.signUp(t, "pager")
	var all []int64
	for i := range 7 {
		all = append(all, a.post(fmt.Sprintf("s%d", i)).ID)
	}
	newest := slices.Clone(all)
	slices.Reverse(newest)

	p := a.timeline("/api/v1/timelines/home?limit=3")
	if !slices.Equal(ids(p.Statuses), newest[:3]) || p.NextBefore == nil || *p.NextBefore != newest[2] {
		t.Fatalf("page 1 = %v next %v", ids(p.Statuses), p.NextBefore)
	}
	p = a.timeline(fmt.Sprintf("/api/v1/timelines/home?limit=3&before=%d", *p.NextBefore))
	if !slices.Equal(ids(p.Statuses), newest[3:6]) || p.NextBefore == nil {
		t.Fatalf("page 2 = %v next %v", ids(p.Statuses), p.NextBefore)
	}
	p = a.timeline(fmt.Sprintf("/api/v1/timelines/home?limit=3&before=%d", *p.NextBefore))
	if !slices.Equal(ids(p.Statuses), newest[6:]) || p.NextBefore != nil {
		t.Fatalf("page 3 = %v next %v, want the last and no next", ids(p.Statuses), p.NextBefore)
	}
	p = a.timeline(fmt.Sprintf("/api/v1/timelines/home?after=%d&limit=4", all[1]))
	if !slices.Equal(ids(p.Statuses), all[2:6]) || p.NextAfter == nil || *p.NextAfter != all[5] {
		t.Fatalf("after = %v next_after %v, want %v oldest first", ids(p.Statuses), p.NextAfter, all[2:6])
	}
	p = a.timeline("/api/v1/timelines/home?after=0")
	if !slices.Equal(ids(p.Statuses), all) || p.NextAfter != nil {
		t.Fatalf("after=0 = %v, want all oldest first", ids(p.Statuses))
	}
	// A deleted status in the middle of a page is skipped, and the page is
	// still full.
	a.deleteStatus(newest[1])
	p = a.timeline("/api/v1/timelines/home?limit=3")
	if want := []int64{newest[0], newest[2], newest[3]}; !slices.Equal(ids(p.Statuses), want) {
		t.Fatalf("after delete = %v, want %v", ids(p.Statuses), want)
	}
}

func TestConcurrentSignUpsOfOneLogin(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	var wg sync.WaitGroup
	statuses := make([]int, 40)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			login := "Same"
			if i%3 == 0 {
				login = strings.ToLower(login)
			}
			statuses[i] = in.anon(t).do("POST", "/api/v1/users",
				map[string]string{"login": login, "name": "S", "password": fmt.Sprintf("kettle-drum-%d", i)}).Status
		}()
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
		default:
			t.Fatalf("sign-up answered %d", s)
		}
	}
	if created != 1 {
		t.Fatalf("%d sign-ups of one login won, want exactly 1", created)
	}
}

func TestConcurrentFollowsKeepExactCounts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	star := in.signUp(t, "star")
	const n = 12
	fans := make([]*client, n)
	for i := range fans {
		fans[i] = in.signUp(t, fmt.Sprintf("fan%d", i))
	}
	star.follow("fan0")
	var wg sync.WaitGroup
	for round := range 6 {
		for i, f := range fans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Even fans end following, odd ones end not following;
				// each races itself and the others.
				if (round+i)%2 == 0 || round == 5 && i%2 == 0 {
					f.do("PUT", "/api/v1/following/star", nil)
				} else {
					f.do("DELETE", "/api/v1/following/star", nil)
				}
			}()
		}
		wg.Wait()
	}
	for i, f := range fans {
		if i%2 == 0 {
			f.follow("star")
		} else {
			f.unfollow("star")
		}
	}
	var wg2 sync.WaitGroup
	for range 5 { // the same follow at once from one user changes nothing more
		wg2.Add(1)
		go func() { defer wg2.Done(); fans[0].do("PUT", "/api/v1/following/star", nil) }()
	}
	wg2.Wait()
	if got := star.counts("star"); got.followers != n/2 || got.following != 1 {
		t.Fatalf("star counts %+v, want %d followers and 1 following", got, n/2)
	}
	var list struct{ Users []userJSON }
	star.must(http.StatusOK, "GET", "/api/v1/users/star/followers?limit=100", nil, &list)
	if len(list.Users) != n/2 {
		t.Fatalf("star has %d followers listed, want %d", len(list.Users), n/2)
	}
	for i, f := range fans {
		want := int64(0)
		if i%2 == 0 {
			want = 1
		}
		if got := f.counts(f.login); got.following != want {
			t.Fatalf("%s following = %d, want %d", f.login, got.following, want)
		}
	}
	var friends struct{ Users []userJSON }
	star.must(http.StatusOK, "GET", "/api/v1/friends", nil, &friends)
	if got := logins(friends.Users); !slices.Equal(got, []string{"fan0"}) {
		t.Fatalf("star's friends = %v, want [fan0]", got)
	}
}

func TestTwoInstancesOneRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	author := one.signUp(t, "author")
	reader := two.signUp(t, "reader")
	reader.follow("author")
	st := author.post("through instance one")
	got := ids(reader.timeline("/api/v1/timelines/home").Statuses)
	if !slices.Equal(got, []int64{st.ID}) {
		t.Fatalf("home read through instance two = %v, want [%d]", got, st.ID)
	}
	// A session made on one instance works on the other.
	two.as(author).must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
}
