package social

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"chorus/internal/redistest"
	"chorus/internal/slots"
	"chorus/presence"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// newMirroredClusterService returns a Service on the shared test cluster
// that keeps presence's friend mirror, as internal/app wires it there.
func newMirroredClusterService(tb testing.TB, opts Options) (*Service, *redis.ClusterClient) {
	tb.Helper()
	rdb, prefix := redistest.ClusterClient(tb)
	opts.Prefix = prefix
	opts.BcryptCost = 4
	opts.FriendsMirror = func(uid int64) string { return presence.FriendsMirrorKey(prefix, uid) }
	return New(rdb, opts), rdb
}

// onOtherMaster returns the first uid from `from` on whose keys another
// master than uid's serves.
func onOtherMaster(tb testing.TB, s *Service, rdb *redis.ClusterClient, uid, from int64) int64 {
	tb.Helper()
	ctx := ctxT(tb)
	master := func(id int64) string {
		c, err := rdb.MasterForKey(ctx, s.keys.user(id))
		if err != nil {
			tb.Fatal(err)
		}
		return c.Options().Addr
	}
	for id := from; id < from+1000; id++ {
		if master(id) != master(uid) {
			return id
		}
	}
	tb.Fatalf("no uid from %d on another master than %d's", from, uid)
	return 0
}

// Two users on different masters following each other at the same moment
// both end up friends, each side's scripts in its own slot: their friend
// sets, presence's mirrors of them, the counts and the ranking come out
// exact every time, and unfollowing each other at the same moment undoes it
// all.
func TestClusterCrossingFollowsMakeFriends(t *testing.T) {
	t.Parallel()
	s, rdb := newMirroredClusterService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	const ada = 3001
	bob := onOtherMaster(t, s, rdb, ada, 3002)
	seedUser(t, s, rdb, ada, "ada", "password-ada")
	seedUser(t, s, rdb, bob, "bob", "password-bob")
	if slots.Of(presence.FriendsMirrorKey(k.prefix, ada)) == slots.Of(k.friends(ada)) {
		t.Fatal("the mirror is in the friend set's slot: the test would not cross slots")
	}

	check := func(round int, friends bool) {
		t.Helper()
		want := int64(0)
		if friends {
			want = 1
		}
		for _, p := range [][2]int64{{ada, bob}, {bob, ada}} {
			x, y := p[0], p[1]
			since, err := rdb.ZMScore(ctx, k.friends(x), itoa(y)).Result()
			if err != nil {
				t.Fatal(err)
			}
			mirrored, err := rdb.ZMScore(ctx, presence.FriendsMirrorKey(k.prefix, x), itoa(y)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if (since[0] != 0) != friends || mirrored[0] != since[0] {
				t.Errorf("round %d: %d's friend set holds %d since %v, its mirror since %v; want friends: %v",
					round, x, y, since[0], mirrored[0], friends)
			}
			followers, following := followCounts(t, s, x)
			nFollowers, nFollowing := rdb.ZCard(ctx, k.followers(x)).Val(), rdb.ZCard(ctx, k.following(x)).Val()
			if followers != want || following != want || nFollowers != want || nFollowing != want {
				t.Errorf("round %d: %d counts %d followers and %d following, sets hold %d and %d; want %d",
					round, x, followers, following, nFollowers, nFollowing, want)
			}
			if got := rankOf(t, s, x); got != float64(want) {
				t.Errorf("round %d: %d ranks with %v followers, want %d", round, x, got, want)
			}
		}
	}
	// both runs one call for each user at the same moment.
	both := func(call func(uid int64, login string) bool) (told [2]bool) {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, p := range []struct {
			uid   int64
			login string
		}{{ada, "bob"}, {bob, "ada"}} {
			wg.Go(func() {
				<-start
				told[i] = call(p.uid, p.login)
			})
		}
		close(start)
		wg.Wait()
		return told
	}
	for round := range 25 {
		made := both(func(uid int64, login string) bool {
			_, made, err := s.Follow(ctx, uid, login)
			if err != nil {
				t.Error(err)
			}
			return made
		})
		if !made[0] && !made[1] {
			t.Errorf("round %d: neither follow says it made a friendship", round)
		}
		check(round, true)
		ended := both(func(uid int64, login string) bool {
			ex, err := s.Unfollow(ctx, uid, login)
			if err != nil {
				t.Error(err)
			}
			return ex != 0
		})
		if !ended[0] && !ended[1] {
			t.Errorf("round %d: neither unfollow says it ended a friendship", round)
		}
		check(round, false)
		if t.Failed() {
			return
		}
	}
}

// An unfollow on a cluster takes the followee's statuses out of the home
// timeline, with a status whose cleanup is under way (telling the reader
// once), queues the refill of the home timeline it left short in the jobs'
// slot, and a second unfollow changes nothing.
func TestClusterUnfollowDropsStatusesAndQueuesRefill(t *testing.T) {
	t.Parallel()
	s, rdb := newClusterService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	const reader = 4001
	author := onOtherMaster(t, s, rdb, reader, 4002)
	other := author + 1
	seedUser(t, s, rdb, reader, "reader", "password-reader")
	seedUser(t, s, rdb, author, "author", "password-author")
	seedUser(t, s, rdb, other, "other", "password-other")
	follow(t, s, reader, "author")
	follow(t, s, reader, "other")
	// The author wrote 10, 12 and 14, the other 11 and 13, and deleted 9,
	// whose cleanup has not reached the reader.
	for id := int64(10); id <= 14; id++ {
		by := author
		if id%2 == 1 {
			by = other
		}
		seedStatus(t, s, rdb, id, by)
	}
	for id := int64(9); id <= 14; id++ {
		rdb.ZAdd(ctx, k.home(reader), redisZ(float64(id), itoa(id)))
	}
	rdb.HSet(ctx, k.job(deleteJobID(9)), "kind", "delete", "uid", other, "sid", 9, "cursor", 0)
	sub := listen(t, s, rdb, s.UserChannel(reader))

	exFriend, err := s.Unfollow(ctx, reader, "author")
	if err != nil || exFriend != 0 {
		t.Fatalf("unfollow = %d, %v; want 0, nil", exFriend, err)
	}
	if got, want := homeIDs(t, s, reader), []int64{11, 13}; !slices.Equal(got, want) {
		t.Errorf("home after the unfollow = %v, want %v", got, want)
	}
	events := eventsSoFar(t, sub)[s.UserChannel(reader)]
	if len(events) != 1 || events[0].Type != protocol.TypeStatusDeleted || events[0].ID != 9 {
		t.Errorf("the reader was told %+v, want %s of 9", events, protocol.TypeStatusDeleted)
	}
	job, err := rdb.HGetAll(ctx, k.job(refillJobID(reader))).Result()
	if err != nil {
		t.Fatal(err)
	}
	if job["kind"] != "refill" || job["uid"] != itoa(reader) || job["cursor"] != "0" || job["floor"] != "11" {
		t.Errorf("refill job = %v, want kind refill, the reader, cursor 0, floor 11", job)
	}
	entries, err := rdb.XRange(ctx, k.jobs(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ID != job["entry"] || entries[0].Values["job"] != k.job(refillJobID(reader)) {
		t.Errorf("job stream = %v, want the refill job's entry %s", entries, job["entry"])
	}
	if followers, _ := followCounts(t, s, author); followers != 0 || rdb.ZCard(ctx, k.followers(author)).Val() != 0 {
		t.Errorf("the author counts %d followers, want none", followers)
	}

	if _, err := s.Unfollow(ctx, reader, "author"); err != nil {
		t.Fatal(err)
	}
	if got := eventsSoFar(t, sub)[s.UserChannel(reader)]; len(got) != 0 {
		t.Errorf("unfollowing again told the reader %+v", got)
	}
	if got, want := homeIDs(t, s, reader), []int64{11, 13}; !slices.Equal(got, want) {
		t.Errorf("home after unfollowing again = %v, want %v", got, want)
	}
	if n := rdb.XLen(ctx, k.jobs()).Val(); n != 1 {
		t.Errorf("%d jobs after unfollowing again, want the one refill", n)
	}
}

// On a cluster a follow of a pulled author adds the author to the
// follower's pulls, tells the follower's instances (SPUBLISH in the
// follower's slot), and copies nothing; so does a follow while the
// author's promotion is under way. The follow that reaches PullThreshold
// queues the promotion in the jobs' slot, and an unfollow takes the pull
// out again.
func TestClusterFollowPulledAuthor(t *testing.T) {
	t.Parallel()
	s, rdb := newClusterService(t, Options{PullThreshold: 2})
	ctx := ctxT(t)
	k := s.keys
	const reader = 5001
	big := onOtherMaster(t, s, rdb, reader, 5002)
	small := big + 1
	seedUser(t, s, rdb, reader, "reader", "password-reader")
	seedUser(t, s, rdb, big, "big", "password-big")
	seedUser(t, s, rdb, small, "small", "password-small")
	var fans []int64
	for i := range 3 {
		fans = append(fans, int64(5100+i))
		seedUser(t, s, rdb, fans[i], fmt.Sprintf("fan%d", i), "password-fan")
	}
	seedStatus(t, s, rdb, 50, big)
	rdb.ZAdd(ctx, k.pulledAuthors(), redisZ(51, itoa(big)))
	sub := listen(t, s, rdb, s.UserChannel(reader), s.UserChannel(fans[2]))

	follow(t, s, reader, "big")
	follow(t, s, reader, "big") // again: nothing new
	score, err := rdb.ZScore(ctx, k.following(reader), itoa(big)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pulls, err := rdb.ZRangeWithScores(ctx, k.pulls(reader), 0, -1).Result(); err != nil ||
		len(pulls) != 1 || pulls[0].Member != itoa(big) || pulls[0].Score != score {
		t.Errorf("the reader's pulls = %v (%v), want big scored %v as the follow", pulls, err, score)
	}
	if home := homeIDs(t, s, reader); len(home) != 0 {
		t.Errorf("home after following a pulled author = %v, want no copies", home)
	}
	if _, err := s.Unfollow(ctx, reader, "big"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, k.pulls(reader)).Val(); n != 0 {
		t.Errorf("the reader pulls %d authors after the unfollow, want none", n)
	}
	got := eventsSoFar(t, sub)[s.UserChannel(reader)]
	if len(got) != 2 || got[0] != (event{Type: protocol.TypePullAdded, Author: big}) ||
		got[1] != (event{Type: protocol.TypePullRemoved, Author: big}) {
		t.Errorf("the reader was told %+v, want %s then %s of %d", got, protocol.TypePullAdded, protocol.TypePullRemoved, big)
	}

	// The second follower of the small author reaches the threshold.
	job := k.job(promoteJobID(small))
	follow(t, s, fans[0], "small")
	if rdb.Exists(ctx, job).Val() != 0 {
		t.Fatal("a promotion was queued below the threshold")
	}
	follow(t, s, fans[1], "small")
	f, err := rdb.HGetAll(ctx, job).Result()
	if err != nil {
		t.Fatal(err)
	}
	if f["kind"] != "promote" || f["uid"] != itoa(small) || f["cursor"] != "0" || f["entry"] == "" {
		t.Errorf("promotion job = %v, want kind promote, the small author, cursor 0, an entry", f)
	}
	if entries := rdb.XRange(ctx, k.jobs(), f["entry"], f["entry"]).Val(); len(entries) != 1 || entries[0].Values["job"] != job {
		t.Errorf("the job's stream entry = %v, want one naming %s", entries, job)
	}
	// A follow while it is under way adds itself.
	follow(t, s, fans[2], "small")
	if pulls := rdb.ZRange(ctx, k.pulls(fans[2]), 0, -1).Val(); !slices.Equal(pulls, []string{itoa(small)}) {
		t.Errorf("pulls of a follower during the promotion = %v, want the small author", pulls)
	}
	got = eventsSoFar(t, sub)[s.UserChannel(fans[2])]
	if len(got) != 1 || got[0] != (event{Type: protocol.TypePullAdded, Author: small}) {
		t.Errorf("the follower during the promotion was told %+v, want %s of %d", got, protocol.TypePullAdded, small)
	}
}
