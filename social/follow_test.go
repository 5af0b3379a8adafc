package social

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"chorus/protocol"
)

// Following someone brings their newest statuses into the home timeline,
// in id order among those already there (the reader's own and other
// followees'), and the home timeline keeps only its newest HomeSize.
func TestFollowBackfillOrderAndCap(t *testing.T) {
	t.Parallel()
	const homeSize = 20
	s, _ := newService(t, Options{HomeSize: homeSize})
	ctx := ctxT(t)
	reader := signUp(t, s, "reader")
	a := signUp(t, s, "alice")
	b := signUp(t, s, "bob")
	var own, byA, byB []int64
	for i := range 30 {
		byB = append(byB, post(t, s, b.ID, fmt.Sprint("b", i)).ID)
		if i%6 == 2 {
			byA = append(byA, post(t, s, a.ID, fmt.Sprint("a", i)).ID)
		}
		if i%10 == 5 {
			own = append(own, post(t, s, reader.ID, fmt.Sprint("own", i)).ID)
		}
	}
	check := func(stage string, want []int64) {
		t.Helper()
		if got := homeIDs(t, s, reader.ID); !slices.Equal(got, want) {
			t.Fatalf("%s: home holds %v, want %v", stage, got, want)
		}
		page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got := statusIDs(page.Statuses); !slices.Equal(got, reversed(want)) {
			t.Fatalf("%s: home timeline reads %v, want %v", stage, got, reversed(want))
		}
	}

	follow(t, s, reader.ID, "alice")
	check("after following alice", newestOf(homeSize, own, byA))
	// Bob wrote more than a home holds: the newest of everything stay.
	follow(t, s, reader.ID, "bob")
	check("after following bob", newestOf(homeSize, own, byA, byB))
}

// Unfollowing someone takes their statuses out of the home timeline and
// keeps the reader's own and those of whom they still follow; the refill
// the unfollow queues does not bring them back. Nobody else's timelines
// change, and the other way round the unfollowed one keeps the reader's.
func TestUnfollowRemovesTheirStatuses(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	reader := signUp(t, s, "reader")
	a := signUp(t, s, "alice")
	b := signUp(t, s, "bob")
	c := signUp(t, s, "carol")
	follow(t, s, reader.ID, "alice")
	follow(t, s, reader.ID, "bob")
	follow(t, s, c.ID, "alice")
	follow(t, s, a.ID, "reader")
	var own, byA, byB []int64
	for i := range 12 {
		byA = append(byA, post(t, s, a.ID, fmt.Sprint("a", i)).ID)
		if i%2 == 0 {
			byB = append(byB, post(t, s, b.ID, fmt.Sprint("b", i)).ID)
		}
		if i%4 == 1 {
			own = append(own, post(t, s, reader.ID, fmt.Sprint("own", i)).ID)
		}
	}
	if got, want := homeIDs(t, s, reader.ID), newestOf(1000, own, byA, byB); !slices.Equal(got, want) {
		t.Fatalf("home before the unfollow = %v, want %v", got, want)
	}
	others := map[string][]int64{}
	for _, key := range []string{s.keys.home(a.ID), s.keys.home(b.ID), s.keys.home(c.ID), s.keys.profile(a.ID), s.keys.global()} {
		others[key] = zsetIDs(t, s, key)
	}

	exFriend, err := s.Unfollow(ctx, reader.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if exFriend != a.ID {
		t.Errorf("unfollow ended a friendship with %d, want alice (%d)", exFriend, a.ID)
	}
	want := newestOf(1000, own, byB)
	if got := homeIDs(t, s, reader.ID); !slices.Equal(got, want) {
		t.Fatalf("home after the unfollow = %v, want %v", got, want)
	}
	refill := s.keys.job(refillJobID(reader.ID))
	if rdb.Exists(ctx, refill).Val() != 1 {
		t.Fatal("the unfollow left the home short and queued no refill")
	}
	runJob(t, s, refill)
	if got := homeIDs(t, s, reader.ID); !slices.Equal(got, want) {
		t.Fatalf("home after the refill = %v, want %v", got, want)
	}
	for key, ids := range others {
		if got := zsetIDs(t, s, key); !slices.Equal(got, ids) {
			t.Errorf("%s changed from %v to %v", key, ids, got)
		}
	}

	// Again: nothing is left to change.
	if exFriend, err := s.Unfollow(ctx, reader.ID, "alice"); err != nil || exFriend != 0 {
		t.Fatalf("unfollowing again: %d, %v, want 0, nil", exFriend, err)
	}
	if got := homeIDs(t, s, reader.ID); !slices.Equal(got, want) {
		t.Fatalf("home after unfollowing again = %v, want %v", got, want)
	}
}

// A status deleted while its cleanup job is on the way stays in the home
// timeline of a follower the job has not reached yet. If that follower
// unfollows before the job gets there, the job never will (it walks the
// author's followers): the unfollow drops it, and any other deleted status
// still there, telling the follower once, as the job would have.
func TestUnfollowDropsStatusesDeletedUnderway(t *testing.T) {
	t.Parallel()
	// One follower a pass: the delete's first pass reaches only the oldest
	// follow.
	s, rdb := newService(t, Options{FanoutPassSize: 1})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	other := signUp(t, s, "other")
	first := signUp(t, s, "first")
	reader := signUp(t, s, "reader")
	for _, login := range []string{"author", "other"} {
		follow(t, s, first.ID, login)
		follow(t, s, reader.ID, login)
	}
	var sts []Status
	for _, by := range []User{author, author, other, other} {
		st := post(t, s, by.ID, "by "+by.Login)
		runJob(t, s, s.keys.job(postJobID(st.ID)))
		sts = append(sts, st)
	}
	gone, kept, otherGone, otherKept := sts[0], sts[1], sts[2], sts[3]
	sub := listen(t, s, rdb, s.UserChannel(reader.ID), s.UserChannel(first.ID))
	for _, st := range []Status{gone, otherGone} {
		if err := s.DeleteStatus(ctx, st.UID, st.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := homeIDs(t, s, reader.ID), []int64{gone.ID, kept.ID, otherGone.ID, otherKept.ID}; !slices.Equal(got, want) {
		t.Fatalf("reader's home before the cleanup reaches it = %v, want %v", got, want)
	}

	if _, err := s.Unfollow(ctx, reader.ID, "author"); err != nil {
		t.Fatal(err)
	}
	if got, want := homeIDs(t, s, reader.ID), []int64{otherKept.ID}; !slices.Equal(got, want) {
		t.Errorf("reader's home after the unfollow = %v, want %v", got, want)
	}
	for _, st := range []Status{gone, otherGone} {
		runJob(t, s, s.keys.job(deleteJobID(st.ID)))
	}
	if got, want := homeIDs(t, s, reader.ID), []int64{otherKept.ID}; !slices.Equal(got, want) {
		t.Errorf("reader's home after the cleanup jobs = %v, want %v", got, want)
	}
	events := eventsSoFar(t, sub)
	for _, u := range []User{reader, first} {
		got := events[s.UserChannel(u.ID)]
		if !slices.Equal(eventIDs(got), []int64{gone.ID, otherGone.ID}) ||
			len(ofType(got, protocol.TypeStatusDeleted)) != len(got) {
			t.Errorf("%s was told %+v, want %s of %d and %d", u.Login, got, protocol.TypeStatusDeleted, gone.ID, otherGone.ID)
		}
	}
}

// Follows and unfollows racing on the same users, the same pair included,
// keep every count exact: each user's follower and following counts match
// their sets and the follows that stand at the end, friends are exactly
// the mutual follows, and the who-to-follow ranking matches the counts.
func TestConcurrentFollowsKeepCountsExact(t *testing.T) {
	t.Parallel()
	const users, rounds, racers = 8, 4, 2
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	us := make([]User, users)
	for i := range us {
		us[i] = signUp(t, s, fmt.Sprintf("user%d", i))
	}
	// Whether a follows b at the end: every racer on a pair ends with it.
	// Some follows end mutual, some one-way, some gone.
	final := func(a, b int) bool { return a != b && (5*a+3*b)%7 < 4 }

	start := make(chan struct{})
	var wg sync.WaitGroup
	for a := range us {
		for b := range us {
			if a == b {
				continue
			}
			for range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for range rounds {
						if _, _, err := s.Follow(ctx, us[a].ID, us[b].Login); err != nil {
							t.Error(err)
							return
						}
						if _, err := s.Unfollow(ctx, us[a].ID, us[b].Login); err != nil {
							t.Error(err)
							return
						}
					}
					if final(a, b) {
						if _, _, err := s.Follow(ctx, us[a].ID, us[b].Login); err != nil {
							t.Error(err)
						}
					}
				}()
			}
		}
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	for b, u := range us {
		var followers, following, friends []int64
		for a := range us {
			if final(a, b) {
				followers = append(followers, us[a].ID)
			}
			if final(b, a) {
				following = append(following, us[a].ID)
			}
			if final(a, b) && final(b, a) {
				friends = append(friends, us[a].ID)
			}
		}
		got, err := s.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Followers != int64(len(followers)) || got.Following != int64(len(following)) {
			t.Errorf("%s counts %d followers and %d following, want %d and %d",
				u.Login, got.Followers, got.Following, len(followers), len(following))
		}
		for _, set := range []struct {
			key  string
			want []int64
		}{
			{s.keys.followers(u.ID), followers},
			{s.keys.following(u.ID), following},
			{s.keys.friends(u.ID), friends},
		} {
			got := zsetIDs(t, s, set.key)
			slices.Sort(got)
			if !slices.Equal(got, set.want) {
				t.Errorf("%s = %v, want %v", set.key, got, set.want)
			}
		}
		rank, err := rdb.ZScore(ctx, s.keys.popular(), itoa(u.ID)).Result()
		if len(followers) == 0 {
			if err == nil {
				t.Errorf("%s ranks with %v followers, want out of the ranking", u.Login, rank)
			}
		} else if int(rank) != len(followers) {
			t.Errorf("%s ranks with %v followers (%v), want %d", u.Login, rank, err, len(followers))
		}
	}
}

// followCounts returns uid's follower and following counts as its user
// hash holds them.
func followCounts(tb testing.TB, s *Service, uid int64) (followers, following int64) {
	tb.Helper()
	u, err := s.UserByID(ctxT(tb), uid)
	if err != nil {
		tb.Fatal(err)
	}
	return u.Followers, u.Following
}

// rankOf returns uid's follower count in the ranking, 0 when out of it.
func rankOf(tb testing.TB, s *Service, uid int64) float64 {
	tb.Helper()
	sc, err := s.rdb.ZMScore(ctxT(tb), s.keys.popular(), itoa(uid)).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return sc[0]
}

// A follow cut short after the follower's side (a crash) leaves the
// followee's side unwritten; the same request again completes it, with the
// score the follower's side holds, and tells the followee once.
func TestFollowCutShortIsCompletedByRetry(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	const ada, bob = 101, 102
	seedUser(t, s, rdb, ada, "ada", "password-ada")
	seedUser(t, s, rdb, bob, "bob", "password-bob")
	sub := listen(t, s, rdb, s.UserChannel(bob))
	if err := followFollowerScript.Run(ctx, rdb,
		[]string{k.following(ada), k.followers(ada), k.friends(ada), k.user(ada), k.blocks(ada), k.blockedBy(ada)}, bob, 7, 1, DefaultMaxFollowing).Err(); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, k.followers(bob)).Val(); n != 0 {
		t.Fatalf("bob has %d followers after the follower's side alone, want 0", n)
	}

	for range 2 { // the retry, and once more: nothing left to do
		if _, _, err := s.Follow(ctx, ada, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if score, err := rdb.ZScore(ctx, k.followers(bob), itoa(ada)).Result(); err != nil || score != 7 {
		t.Errorf("ada among bob's followers with score %v (%v), want 7, the follower's side's", score, err)
	}
	if followers, _ := followCounts(t, s, bob); followers != 1 {
		t.Errorf("bob counts %d followers, want 1", followers)
	}
	if _, following := followCounts(t, s, ada); following != 1 {
		t.Errorf("ada counts %d following, want 1", following)
	}
	if got := rankOf(t, s, bob); got != 1 {
		t.Errorf("bob ranks with %v followers, want 1", got)
	}
	if got := ofType(eventsSoFar(t, sub)[s.UserChannel(bob)], protocol.TypeFollowed); len(got) != 1 {
		t.Errorf("bob was told %+v, want one %s", got, protocol.TypeFollowed)
	}
}

// A follow and an unfollow of the same pair running at once (two tabs)
// leave the followee's side agreeing with the follower's, even when the
// one that lost on the follower's side writes the followee's side last.
func TestFollowAndUnfollowRacingAgree(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	const ada, bob = 201, 202
	seedUser(t, s, rdb, ada, "ada", "password-ada")
	seedUser(t, s, rdb, bob, "bob", "password-bob")
	note, err := s.loadFollowNote(ctx, ada)
	if err != nil {
		t.Fatal(err)
	}
	check := func(stage string, side followeeSide, follows bool) {
		t.Helper()
		if side.stands != follows {
			t.Errorf("%s: the late step says the follow stands: %v, want %v", stage, side.stands, follows)
		}
		want := int64(0)
		if follows {
			want = 1
		}
		followers, _ := followCounts(t, s, bob)
		_, following := followCounts(t, s, ada)
		n := rdb.ZCard(ctx, k.followers(bob)).Val()
		if followers != want || following != want || n != want || rankOf(t, s, bob) != float64(want) {
			t.Errorf("%s: bob has %d followers (counted %d, ranked %v), ada follows %d; want %d",
				stage, n, followers, rankOf(t, s, bob), following, want)
		}
	}

	// The follow's followee step comes after a whole unfollow.
	res, err := followFollowerScript.Run(ctx, rdb,
		[]string{k.following(ada), k.followers(ada), k.friends(ada), k.user(ada), k.blocks(ada), k.blockedBy(ada)}, bob, 7, note.now, DefaultMaxFollowing).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unfollow(ctx, ada, "bob"); err != nil {
		t.Fatal(err)
	}
	score, _ := res[0].(string)
	side, err := s.syncFollowee(ctx, ada, bob, score, func() (followNote, error) { return note, nil })
	if err != nil {
		t.Fatal(err)
	}
	check("follow overtaken by an unfollow", side, false)

	// The unfollow's followee step comes after a whole follow.
	if err := unfollowFollowerScript.Run(ctx, rdb,
		[]string{k.following(ada), k.friends(ada), k.pulls(ada), k.user(ada)},
		bob, s.bus.Command(), s.bus.UserChannel(ada), "{}").Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Follow(ctx, ada, "bob"); err != nil {
		t.Fatal(err)
	}
	side, err = s.syncFollowee(ctx, ada, bob, "", func() (followNote, error) { return note, nil })
	if err != nil {
		t.Fatal(err)
	}
	check("unfollow overtaken by a follow", side, true)
}

// A follow that took its place in the follow sequence before a post read
// its page, but entered the author's followers after, and copied the
// author's statuses into the follower's home before the post wrote its
// status: the post, whose page was the author's every follower, counts
// them again once the status is written, finds the count moved, and leaves
// its job to a worker's pass, which pushes it to the one it missed.
func TestFollowBetweenAPostsPageAndItsStatus(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	followersOf(t, s, "author", 2)
	late := signUp(t, s, "late")
	post(t, s, author.ID, "loads the scripts")

	finish := stalledFollow(t, s, late.ID, "author")
	raced := false
	s.afterQueue = func() { // the page read, the status not yet written
		s.afterQueue = nil
		finish()
		raced = true
	}
	st := post(t, s, author.ID, "as you follow")
	if !raced {
		t.Fatal("the follow did not finish during the post")
	}
	// The job is left in Redis for a worker: a death of the instance now
	// loses nothing.
	runJob(t, s, s.keys.job(postJobID(st.ID)))
	score, err := rdb.ZScore(ctx, s.keys.followers(author.ID), itoa(late.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := homeIDs(t, s, late.ID); !slices.Contains(got, st.ID) {
		t.Errorf("the follower (scored %v) who came during the post: home %v lacks status %d", score, got, st.ID)
	}
}

// A follow that took its place in the follow sequence before a post read
// its page, but entered the author's followers after, is scored inside the
// page when a later follow entered first: the post, which counts the
// followers up to its page's end again once the status is written, leaves
// its job to a worker's pass that begins at the first follower again,
// whether the page was full (the job going on past it) or every follower.
func TestFollowInsideAPostsPage(t *testing.T) {
	t.Parallel()
	for _, pass := range []int{2, 3} {
		t.Run(fmt.Sprintf("pass=%d", pass), func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{FanoutPassSize: pass})
			author := signUp(t, s, "author")
			followers := followersOf(t, s, "author", 1)
			late, mid := signUp(t, s, "late"), signUp(t, s, "mid")
			startWorker(t, s, "w")
			post(t, s, author.ID, "loads the scripts")
			waitJobsDone(t, s)

			finish := stalledFollow(t, s, late.ID, "author")
			follow(t, s, mid.ID, "author") // scored past late: the page's last
			raced := false
			s.afterQueue = func() { // the page read, the status not yet written
				s.afterQueue = nil
				finish()
				raced = true
			}
			st := post(t, s, author.ID, "as late follows")
			if !raced {
				t.Fatal("the follow did not finish during the post")
			}
			waitJobsDone(t, s)
			for _, f := range append(followers, mid, late) {
				if got := homeIDs(t, s, f.ID); !slices.Contains(got, st.ID) {
					t.Errorf("%s's home %v lacks status %d", f.Login, got, st.ID)
				}
			}
		})
	}
}

// stalledFollow starts uid's follow of login and returns once it has taken
// its place in the follow sequence, having written nothing; finish lets
// it go on, and returns once it is done.
func stalledFollow(t *testing.T, s *Service, uid int64, login string) (finish func()) {
	t.Helper()
	tookSeq, release, followed := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	s.betweenFollowReads = func() {
		s.betweenFollowReads = nil
		close(tookSeq)
		<-release
	}
	ctx := ctxT(t)
	go func() {
		_, _, err := s.Follow(ctx, uid, login)
		followed <- err
	}()
	select {
	case <-tookSeq:
	case <-time.After(30 * time.Second):
		t.Fatal("the follow did not take its place in the sequence")
	}
	return func() {
		close(release)
		if err := <-followed; err != nil {
			t.Error(err)
		}
	}
}

// A user follows at most MaxFollowing accounts: of follows racing at the
// cap, exactly as many stand as the cap has room for, the others are
// refused and write nothing on either side (the followee counts no
// follower, the follower no followee); a follow that stands is not
// refused when repeated, and an unfollow makes room.
func TestFollowingCap(t *testing.T) {
	t.Parallel()
	const limit = 3
	s, rdb := newService(t, Options{MaxFollowing: limit})
	ctx := ctxT(t)
	k := s.keys
	fan := signUp(t, s, "fan")
	stars := signUpMany(t, s, "star", 8)
	if _, _, err := s.Follow(ctx, fan.ID, stars[0].Login); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(stars)-1)
	for i, star := range stars[1:] {
		wg.Go(func() { _, _, errs[i] = s.Follow(ctx, fan.ID, star.Login) })
	}
	wg.Wait()
	var stood []User
	for i, err := range errs {
		switch {
		case err == nil:
			stood = append(stood, stars[1+i])
		case !errors.Is(err, ErrTooManyFollowing):
			t.Fatalf("follow of %s: %v, want it to stand or ErrTooManyFollowing", stars[1+i].Login, err)
		}
	}
	if len(stood) != limit-1 {
		t.Fatalf("%d of the racing follows stood, want %d", len(stood), limit-1)
	}
	following, err := rdb.ZCard(ctx, k.following(fan.ID)).Result()
	if err != nil || following != limit {
		t.Fatalf("fan follows %d (%v), want %d", following, err, limit)
	}
	if got := userByID(t, s, fan.ID).Following; got != limit {
		t.Fatalf("fan's following count %d, want %d", got, limit)
	}
	for _, star := range stars[1:] {
		want := int64(0)
		if slices.ContainsFunc(stood, func(u User) bool { return u.ID == star.ID }) {
			want = 1
		}
		if got := userByID(t, s, star.ID).Followers; got != want {
			t.Errorf("%s counts %d followers, want %d", star.Login, got, want)
		}
		if n, err := rdb.ZCard(ctx, k.followers(star.ID)).Result(); err != nil || n != want {
			t.Errorf("%s's followers set holds %d (%v), want %d", star.Login, n, err, want)
		}
	}
	// Repeated, a follow that stands is no new one.
	if _, _, err := s.Follow(ctx, fan.ID, stars[0].Login); err != nil {
		t.Fatalf("a follow that stands, repeated at the cap: %v", err)
	}
	if _, err := s.Unfollow(ctx, fan.ID, stars[0].Login); err != nil {
		t.Fatal(err)
	}
	var refused User
	for _, star := range stars[1:] {
		if !slices.ContainsFunc(stood, func(u User) bool { return u.ID == star.ID }) {
			refused = star
			break
		}
	}
	if _, _, err := s.Follow(ctx, fan.ID, refused.Login); err != nil {
		t.Fatalf("a follow once an unfollow made room: %v", err)
	}
}

func userByID(tb testing.TB, s *Service, uid int64) User {
	tb.Helper()
	u, err := s.UserByID(ctxT(tb), uid)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}
