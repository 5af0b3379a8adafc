package social

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// pullWorld is an author made pulled (PullThreshold 3) with five
// followers, and a small author the first follower also follows.
type pullWorld struct {
	big, small User
	followers  []User
	before     []int64 // the big author's statuses from before they were pulled
}

func newPullWorld(t *testing.T, s *Service) pullWorld {
	t.Helper()
	ctx := ctxT(t)
	w := pullWorld{big: signUp(t, s, "big"), small: signUp(t, s, "small")}
	for i := range 2 {
		w.followers = append(w.followers, signUp(t, s, fmt.Sprintf("follower%d", i)))
		follow(t, s, w.followers[i].ID, "big")
	}
	follow(t, s, w.followers[0].ID, "small")
	for i := range 2 {
		st, err := s.Post(ctx, w.big.ID, fmt.Sprintf("pushed %d", i))
		if err != nil {
			t.Fatal(err)
		}
		w.before = append(w.before, st.ID)
	}
	// The third follow reaches the threshold: the promotion is queued.
	for i := 2; i < 5; i++ {
		w.followers = append(w.followers, signUp(t, s, fmt.Sprintf("follower%d", i)))
		follow(t, s, w.followers[i].ID, "big")
	}
	runJob(t, s, s.keys.job(promoteJobID(w.big.ID)))
	if _, err := s.rdb.ZScore(ctx, s.keys.pulledAuthors(), itoa(w.big.ID)).Result(); err != nil {
		t.Fatalf("the author is not pulled after the promotion: %v", err)
	}
	return w
}

func pageIDs(page TimelinePage) []int64 {
	var ids []int64
	for _, st := range page.Statuses {
		ids = append(ids, st.ID)
	}
	return ids
}

// walkHome pages through uid's whole home timeline, newest first with
// `before` and oldest first with `after`, limit ids a page.
func walkHome(t *testing.T, s *Service, uid int64, limit int) (newest, oldest []int64) {
	t.Helper()
	ctx := ctxT(t)
	c := Cursor{Limit: limit}
	for range 100 {
		page, err := s.HomeTimeline(ctx, uid, c)
		if err != nil {
			t.Fatal(err)
		}
		newest = append(newest, pageIDs(page)...)
		if page.NextBefore == nil {
			break
		}
		c.Before = *page.NextBefore
	}
	c = Cursor{Limit: limit, Forward: true}
	for range 100 {
		page, err := s.HomeTimeline(ctx, uid, c)
		if err != nil {
			t.Fatal(err)
		}
		oldest = append(oldest, pageIDs(page)...)
		if page.NextAfter == nil {
			break
		}
		c.After = *page.NextAfter
	}
	return newest, oldest
}

// A follower of a pulled author reads the author's statuses merged with
// the pushed ones, in order, once each, with exact paging both ways; the
// pulled statuses are written to no follower's home timeline, and are
// published once, on the author's channel.
func TestPulledAuthorMergedIntoHome(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PullThreshold: 3, FanoutPassSize: 2})
	ctx := ctxT(t)
	w := newPullWorld(t, s)
	reader := w.followers[0]
	for _, f := range w.followers {
		if got, err := s.PulledAuthors(ctx, f.ID); err != nil || !slices.Equal(got, []int64{w.big.ID}) {
			t.Fatalf("pulled authors of %s = %v, %v; want [%d]", f.Login, got, err, w.big.ID)
		}
	}

	l := listen(t, s, rdb, s.AuthorChannel(w.big.ID), s.UserChannel(reader.ID))
	want := slices.Clone(w.before)
	var pulled []int64
	for i := range 3 {
		big, err := s.Post(ctx, w.big.ID, fmt.Sprintf("pulled %d", i))
		if err != nil {
			t.Fatal(err)
		}
		small, err := s.Post(ctx, w.small.ID, fmt.Sprintf("small %d", i))
		if err != nil {
			t.Fatal(err)
		}
		pulled = append(pulled, big.ID)
		want = append(want, big.ID, small.ID)
	}
	if n, _ := rdb.Exists(ctx, s.keys.job(postJobID(pulled[0]))).Result(); n != 0 {
		t.Error("a post job was queued for a pulled author")
	}
	for _, f := range w.followers {
		if home := homeIDs(t, s, f.ID); slices.ContainsFunc(pulled, func(id int64) bool { return slices.Contains(home, id) }) {
			t.Errorf("home of %s = %v holds pulled statuses %v", f.Login, home, pulled)
		}
	}
	// The author's channel carries each pulled status once; the reader's
	// own channel carries the small author's.
	events := eventsUntil(t, l, 10*time.Second, func(got map[string][]event) bool {
		return len(got[s.AuthorChannel(w.big.ID)])+len(got[s.UserChannel(reader.ID)]) >= 6
	})
	onAuthor := len(ofType(events[s.AuthorChannel(w.big.ID)], protocol.TypeStatus))
	onReader := len(ofType(events[s.UserChannel(reader.ID)], protocol.TypeStatus))
	if onAuthor != 3 || onReader != 3 {
		t.Errorf("frames: %d on the author's channel, %d on the reader's; want 3 and 3", onAuthor, onReader)
	}

	newestWant := slices.Clone(want)
	slices.Reverse(newestWant)
	for _, limit := range []int{1, 2, 3, 20} {
		newest, oldest := walkHome(t, s, reader.ID, limit)
		if !slices.Equal(newest, newestWant) {
			t.Errorf("limit %d, newest first: %v, want %v", limit, newest, newestWant)
		}
		if !slices.Equal(oldest, want) {
			t.Errorf("limit %d, oldest first: %v, want %v", limit, oldest, want)
		}
	}

	// Deletes vanish from merged reads: a pulled status at once and with no
	// job, a pushed one from the home timelines by its job.
	if err := s.DeleteStatus(ctx, w.big.ID, pulled[1]); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, s.keys.job(deleteJobID(pulled[1]))).Result(); n != 0 {
		t.Error("a cleanup job was queued for a status never pushed")
	}
	if err := s.DeleteStatus(ctx, w.big.ID, w.before[0]); err != nil {
		t.Fatal(err)
	}
	runJob(t, s, s.keys.job(deleteJobID(w.before[0])))
	want = slices.DeleteFunc(want, func(id int64) bool { return id == pulled[1] || id == w.before[0] })
	if _, oldest := walkHome(t, s, reader.ID, 2); !slices.Equal(oldest, want) {
		t.Errorf("after the deletes: %v, want %v", oldest, want)
	}
	if home := homeIDs(t, s, w.followers[1].ID); slices.Contains(home, w.before[0]) {
		t.Errorf("a deleted pushed status is still in a home timeline: %v", home)
	}
}

// A new follower of a pulled author gets no copy of their statuses but
// reads them merged; an unfollow stops that, and both tell the follower's
// instances.
func TestFollowPulledAuthor(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PullThreshold: 3})
	ctx := ctxT(t)
	w := newPullWorld(t, s)
	st, err := s.Post(ctx, w.big.ID, "pulled")
	if err != nil {
		t.Fatal(err)
	}
	late := signUp(t, s, "late")
	sub := listen(t, s, rdb, s.UserChannel(late.ID))
	follow(t, s, late.ID, "big")
	if home := homeIDs(t, s, late.ID); len(home) != 0 {
		t.Errorf("home after following a pulled author = %v, want no copies", home)
	}
	page, err := s.HomeTimeline(ctx, late.ID, Cursor{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(page); !slices.Contains(got, st.ID) || !slices.Contains(got, w.before[1]) {
		t.Errorf("home page after the follow = %v, want the author's statuses %d and %d", got, st.ID, w.before[1])
	}
	if _, err := s.Unfollow(ctx, late.ID, "big"); err != nil {
		t.Fatal(err)
	}
	page, err = s.HomeTimeline(ctx, late.ID, Cursor{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(page); len(got) != 0 {
		t.Errorf("home page after the unfollow = %v, want none", got)
	}
	got := eventsSoFar(t, sub)[s.UserChannel(late.ID)]
	want := []event{{Type: protocol.TypePullAdded, Author: w.big.ID}, {Type: protocol.TypePullRemoved, Author: w.big.ID}}
	if !slices.Equal(got, want) {
		t.Errorf("the follower's channel got %+v, want %+v", got, want)
	}
}

// A follower back after InactiveAfter finds a full timeline: the rebuild
// copies the pushed authors' statuses, and the pulled one's from before it
// was pulled, and the read merges the pulled one's since.
func TestReturningFollowerOfPulledAuthor(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{PullThreshold: 3})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected"
	w := newPullWorld(t, s)
	reader, token, err := s.SignUp(ctx, "reader", "Reader", "password-reader")
	if err != nil {
		t.Fatal(err)
	}
	follow(t, s, reader.ID, "big")
	follow(t, s, reader.ID, "small")
	lastSeenAgo(t, s, reader.ID, 30*24*3600e9)
	var want, small []int64
	for i := range 3 {
		for _, a := range []User{w.big, w.small} {
			st, err := s.Post(ctx, a.ID, fmt.Sprintf("while away %d", i))
			if err != nil {
				t.Fatal(err)
			}
			runJobIfQueued(t, s, s.keys.job(postJobID(st.ID)))
			want = append(want, st.ID)
			if a.ID == w.small.ID {
				small = append(small, st.ID)
			}
		}
	}
	if home := homeIDs(t, s, reader.ID); len(home) != 0 {
		t.Fatalf("home while away = %v, want nothing pushed", home)
	}
	authenticate(t, s, token)
	// A rebuild longer than rebuildWait (a busy machine) is left to a
	// worker, which this test has none of.
	runJobIfQueued(t, s, s.keys.job(refillJobID(reader.ID)))
	page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 6})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(want)
	if got := pageIDs(page); !slices.Equal(got, want) {
		t.Errorf("home back after a month = %v, want %v", got, want)
	}
	if home, want := homeIDs(t, s, reader.ID), append(slices.Clone(w.before), small...); !slices.Equal(home, want) {
		t.Errorf("rebuilt home timeline = %v, want the pushed author's %v and the pulled one's from before %v", home, small, w.before)
	}
}

// runJobIfQueued runs the job at key when it exists.
func runJobIfQueued(t testing.TB, s *Service, key string) {
	t.Helper()
	if n, err := s.rdb.Exists(context.Background(), key).Result(); err != nil && err != redis.Nil {
		t.Fatal(err)
	} else if n == 1 {
		runJob(t, s, key)
	}
}

// Follows crossing the threshold race with the author's posts and the
// promotion job, which a slow worker runs while both go on: once the jobs
// are done, every follower reads every status, once each and in order,
// whether it was pushed to them, pulled, or both.
func TestPromotionRacesFollowsAndPosts(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{PullThreshold: 10, FanoutPassSize: 2})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	var followers []User
	for i := range 30 {
		followers = append(followers, signUp(t, s, fmt.Sprintf("racer%d", i)))
	}
	wctx, stop := context.WithCancel(ctx)
	var worker sync.WaitGroup
	worker.Go(func() {
		w := s.NewWorker("race", slog.New(slog.NewTextHandler(io.Discard, nil)))
		w.afterPass = func() { time.Sleep(15 * time.Millisecond) }
		w.Run(wctx)
	})
	var want []int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, f := range followers {
			follow(t, s, f.ID, "author")
			time.Sleep(5 * time.Millisecond)
		}
	})
	wg.Go(func() {
		for i := range 15 {
			st, err := s.Post(ctx, author.ID, fmt.Sprintf("racing %d", i))
			if err != nil {
				t.Error(err)
				return
			}
			want = append(want, st.ID)
			time.Sleep(12 * time.Millisecond)
		}
	})
	wg.Wait()
	testio.Eventually(t, 20*time.Second, func() string {
		if n := jobsLeft(t, ctx, s.rdb, s.keys); n != 0 {
			return fmt.Sprintf("%d jobs left", n)
		}
		return ""
	})
	stop()
	worker.Wait()
	slices.Reverse(want)
	if _, err := s.rdb.ZScore(ctx, s.keys.pulledAuthors(), itoa(author.ID)).Result(); err != nil {
		t.Fatalf("the author is not pulled: %v", err)
	}
	for _, f := range followers {
		page, err := s.HomeTimeline(ctx, f.ID, Cursor{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if got := pageIDs(page); !slices.Equal(got, want) {
			t.Errorf("%s reads %v, want %v", f.Login, got, want)
		}
	}
}

// A promotion adds its author to the pulls of the followers on its page
// only while each still follows: one whose unfollow had taken the author
// out of their following and pulls (its first step), but not yet out of
// the author's followers (its second), which the page was read from, gets
// no pull back, and no pull_added; the others get both, also from a Redis
// that lost its scripts.
func TestPromotionPassesOverAnUnfollowUnderWay(t *testing.T) {
	t.Parallel()
	s, rdb := newPrivateBackend(t, Options{PullThreshold: 100}) // it flushes the scripts
	ctx := ctxT(t)
	big := signUp(t, s, "big")
	stays, leaving := signUp(t, s, "stays"), signUp(t, s, "leaving")
	follow(t, s, stays.ID, "big")
	follow(t, s, leaving.ID, "big")
	// The unfollow's first step, as unfollow_follower.lua takes it.
	if err := rdb.ZRem(ctx, s.keys.following(leaving.ID), itoa(big.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	l := listen(t, s, rdb, s.bus.UserChannel(stays.ID), s.bus.UserChannel(leaving.ID))
	if err := s.queuePromotion(ctx, big.ID); err != nil {
		t.Fatal(err)
	}
	// As after a restart of Redis: the page's calls come back NOSCRIPT.
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	runJob(t, s, s.keys.job(promoteJobID(big.ID)))
	if _, err := rdb.ZScore(ctx, s.keys.pulls(stays.ID), itoa(big.ID)).Result(); err != nil {
		t.Errorf("a follower does not pull the promoted author: %v", err)
	}
	if _, err := rdb.ZScore(ctx, s.keys.pulls(leaving.ID), itoa(big.ID)).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("a follower whose unfollow is under way pulls the promoted author again (%v)", err)
	}
	got := eventsSoFar(t, l)
	if ev := got[s.bus.UserChannel(stays.ID)]; len(ev) != 1 || ev[0].Type != protocol.TypePullAdded || ev[0].Author != big.ID {
		t.Errorf("the follower who stays was told %+v, want pull_added of %d", ev, big.ID)
	}
	if ev := got[s.bus.UserChannel(leaving.ID)]; len(ev) != 0 {
		t.Errorf("the follower leaving was told %+v, want nothing", ev)
	}
}

// A reader of many pulled authors (who reads only statuses posted once
// pulled) who follows an author while the author is being made pulled gets
// the author's statuses from before the follow by the follow's copy: the
// fan-out pushed them to the followers of then, and the site's pulled
// statuses will never hold them.
func TestFollowDuringPromotionCopies(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{PullThreshold: 3})
	ctx := ctxT(t)
	late := signUp(t, s, "late")
	followPulled(t, s, late, directPulls+1)
	big := signUp(t, s, "big")
	for i := range 3 {
		f := signUp(t, s, fmt.Sprintf("fol%d", i))
		follow(t, s, f.ID, "big") // the third queues the promotion
	}
	if n := s.rdb.Exists(ctx, s.keys.job(promoteJobID(big.ID))).Val(); n != 1 {
		t.Fatal("no promotion queued")
	}
	before := post(t, s, big.ID, "posted while the promotion is queued")
	runJobIfQueued(t, s, s.keys.job(postJobID(before.ID)))
	follow(t, s, late.ID, "big")
	runJob(t, s, s.keys.job(promoteJobID(big.ID)))
	after := post(t, s, big.ID, "posted once pulled")
	page, err := s.HomeTimeline(ctx, late.ID, Cursor{Limit: 30})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(page); !slices.Contains(got, before.ID) || !slices.Contains(got, after.ID) {
		t.Errorf("late's home %v, want both %d (before the follow) and %d (once pulled)", got, before.ID, after.ID)
	}
}

// A reader of many pulled authors, back from long away, gets the statuses
// of an author made pulled while they were away from their home's rebuild:
// the fan-out skipped them, and the site's pulled statuses hold only those
// posted once pulled. Those posted once pulled come by the merge, once.
func TestRebuildCopiesWhatAPulledAuthorPostedBefore(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{PullThreshold: 3})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected"
	reader, token := signUpToken(t, s, "reader")
	followPulled(t, s, reader, directPulls+1)
	big := signUp(t, s, "big")
	follow(t, s, reader.ID, "big")
	lastSeenAgo(t, s, reader.ID, 8*24*time.Hour)
	away := post(t, s, big.ID, "posted while the reader is away")
	runJobIfQueued(t, s, s.keys.job(postJobID(away.ID)))
	for i := range 3 {
		f := signUp(t, s, fmt.Sprintf("fol%d", i))
		follow(t, s, f.ID, "big")
	}
	runJob(t, s, s.keys.job(promoteJobID(big.ID)))
	pulled := post(t, s, big.ID, "posted once pulled")
	s.touches = newTouches(s.touchEvery())
	authenticate(t, s, token)
	runJobIfQueued(t, s, s.keys.job(refillJobID(reader.ID))) // as above
	page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 30})
	if err != nil {
		t.Fatal(err)
	}
	got := pageIDs(page)
	if !slices.Contains(got, away.ID) || !slices.Contains(got, pulled.ID) {
		t.Errorf("back after the author was made pulled, the reader's home %v lacks %d or %d", got, away.ID, pulled.ID)
	}
	if home := homeIDs(t, s, reader.ID); slices.Contains(home, pulled.ID) {
		t.Errorf("the rebuild copied %d, posted once pulled, into the stored home %v", pulled.ID, home)
	}
}
