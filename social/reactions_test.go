package social

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// usersN signs up n users, prefix00 to prefix(n-1).
func usersN(tb testing.TB, s *Service, prefix string, n int) []User {
	tb.Helper()
	users := make([]User, n)
	var wg sync.WaitGroup
	for i := range users {
		wg.Go(func() { users[i] = signUp(tb, s, fmt.Sprintf("%s%02d", prefix, i)) })
	}
	wg.Wait()
	return users
}

// waitJobsDone waits until the job stream is empty: a worker ran every job.
func waitJobsDone(tb testing.TB, s *Service) {
	tb.Helper()
	testio.Eventually(tb, 30*time.Second, func() string {
		if n := jobsLeft(tb, ctxT(tb), s.rdb, s.keys); n != 0 {
			return fmt.Sprintf("%d jobs queued", n)
		}
		return ""
	})
}

// noteCauses returns the causes of uid's stored notifications of kind.
func noteCauses(tb testing.TB, s *Service, uid int64, kind string) []string {
	tb.Helper()
	causes, err := s.rdb.HKeys(ctxT(tb), s.keys.noteCauses(uid)).Result()
	if err != nil {
		tb.Fatal(err)
	}
	causes = slices.DeleteFunc(causes, func(c string) bool { return !strings.HasPrefix(c, kind+":") })
	slices.Sort(causes)
	return causes
}

func likeCount(tb testing.TB, s *Service, sid int64) int64 {
	tb.Helper()
	n, err := s.rdb.ZCard(ctxT(tb), s.keys.likes(sid)).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// 100 users like one status at once: exactly 100, each liker's index holds
// it, and the author is told once each; each likes it again: still 100.
// Then each likes and unlikes it many times at once, ending with a like
// (even ones) or an unlike (odd ones): the count, the likers' indexes and
// the author's notifications agree with what each did last.
func TestLikesStayExact(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	st := post(t, s, author.ID, "like me")
	likers := usersN(t, s, "liker", 100)
	var wg sync.WaitGroup
	for round := range 2 {
		errs := make(chan error, len(likers))
		for _, u := range likers {
			wg.Go(func() {
				if _, err := s.Like(ctx, u.ID, st.ID); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n := likeCount(t, s, st.ID); n != 100 {
			t.Fatalf("round %d: %d likes, want 100", round, n)
		}
	}
	if got := noteCauses(t, s, author.ID, protocol.NotifyLiked); len(got) != 100 {
		t.Fatalf("the author holds %d liked notifications, want 100", len(got))
	}

	for i, u := range likers {
		wg.Go(func() {
			for range 5 {
				if _, err := s.Unlike(ctx, u.ID, st.ID); err != nil {
					t.Error(err)
				}
				if _, err := s.Like(ctx, u.ID, st.ID); err != nil {
					t.Error(err)
				}
			}
			last := s.Like
			if i%2 == 1 {
				last = s.Unlike
			}
			if _, err := last(ctx, u.ID, st.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := likeCount(t, s, st.ID); n != 50 {
		t.Fatalf("after the races, %d likes, want 50", n)
	}
	var want []string
	for i, u := range likers {
		_, err := s.rdb.ZScore(ctx, s.keys.liked(u.ID), itoa(st.ID)).Result()
		if liked := err == nil; liked != (i%2 == 0) {
			t.Errorf("%s's liked index holds the status: %v, want %v", u.Login, liked, i%2 == 0)
		}
		if i%2 == 0 {
			want = append(want, fmt.Sprintf("liked:%d:%d", u.ID, st.ID))
		}
	}
	slices.Sort(want)
	if got := noteCauses(t, s, author.ID, protocol.NotifyLiked); !slices.Equal(got, want) {
		t.Errorf("liked notifications after the races:\n%v\nwant\n%v", got, want)
	}
	page, err := s.Likers(ctx, st.ID, Page{Limit: 100})
	if err != nil || len(page) != 50 {
		t.Fatalf("likers page: %d users, %v; want 50", len(page), err)
	}
}

// A like of a repost entry likes its original; a like of a status that is
// not there, or deleted, is ErrStatusNotFound and writes nothing; liking
// one's own status tells no one; deleting a liked status takes its likes
// out of the likers' indexes.
func TestLikeTargets(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	alice, bob := signUp(t, s, "alice"), signUp(t, s, "bob")
	st := post(t, s, alice.ID, "original")
	if _, err := s.Repost(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	entry := zsetIDs(t, s, s.keys.profile(bob.ID))
	if len(entry) != 1 {
		t.Fatalf("bob's profile = %v, want one repost entry", entry)
	}
	got, err := s.Like(ctx, bob.ID, entry[0])
	if err != nil || got.ID != st.ID {
		t.Fatalf("like of the entry = %d, %v; want the original %d", got.ID, err, st.ID)
	}
	if _, err := s.Like(ctx, alice.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if n := likeCount(t, s, st.ID); n != 2 {
		t.Fatalf("%d likes, want 2", n)
	}
	if n := rdb.Exists(ctx, s.keys.likes(entry[0])).Val(); n != 0 {
		t.Error("the entry has likes of its own")
	}
	if got := noteCauses(t, s, alice.ID, protocol.NotifyLiked); !slices.Equal(got, []string{fmt.Sprintf("liked:%d:%d", bob.ID, st.ID)}) {
		t.Errorf("alice's liked notifications = %v, want bob's only", got)
	}
	for _, id := range []int64{st.ID + 1000, 0} {
		if _, err := s.Like(ctx, bob.ID, id); !errors.Is(err, ErrStatusNotFound) {
			t.Errorf("like of %d: %v, want ErrStatusNotFound", id, err)
		}
	}
	if err := s.DeleteStatus(ctx, alice.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{alice, bob} {
		if _, err := rdb.ZScore(ctx, s.keys.liked(u.ID), itoa(st.ID)).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s's liked index still holds the deleted status (%v)", u.Login, err)
		}
	}
	if n := rdb.Exists(ctx, s.keys.likes(st.ID), s.keys.reposts(st.ID)).Val(); n != 0 {
		t.Errorf("%d of the deleted status's likes and reposts sets are left", n)
	}
	if _, err := s.Like(ctx, bob.ID, st.ID); !errors.Is(err, ErrStatusNotFound) {
		t.Errorf("like of a deleted status: %v, want ErrStatusNotFound", err)
	}
	if n := rdb.Exists(ctx, s.keys.likes(st.ID)).Val(); n != 0 {
		t.Error("a like of a deleted status was left written")
	}
}

// A repost reaches each of the reposter's followers once: not one who has
// the original, and not one who follows two reposters of it. Reposting
// twice, or racing, makes one entry; the original's author is told once.
func TestRepostReachesFollowersOnce(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	alice, bob, carol := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "carol")
	dave, erin, frank := signUp(t, s, "dave"), signUp(t, s, "erin"), signUp(t, s, "frank")
	follow(t, s, dave.ID, "bob")
	follow(t, s, dave.ID, "carol")
	follow(t, s, erin.ID, "alice")
	follow(t, s, erin.ID, "bob")
	follow(t, s, frank.ID, "carol")
	l := listen(t, s, rdb, s.UserChannel(dave.ID), s.UserChannel(erin.ID), s.UserChannel(frank.ID))
	st := post(t, s, alice.ID, "worth repeating")

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := s.Repost(ctx, bob.ID, st.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := s.Repost(ctx, carol.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	bobs, carols := zsetIDs(t, s, s.keys.profile(bob.ID)), zsetIDs(t, s, s.keys.profile(carol.ID))
	if len(bobs) != 1 || len(carols) != 1 {
		t.Fatalf("profiles after the reposts: bob %v, carol %v; want one entry each", bobs, carols)
	}
	if n := rdb.ZCard(ctx, s.keys.reposts(st.ID)).Val(); n != 2 {
		t.Fatalf("%d reposts, want 2", n)
	}
	if got := homeIDs(t, s, dave.ID); !slices.Equal(got, bobs) {
		t.Errorf("dave's home = %v, want bob's repost %v only", got, bobs)
	}
	if got := homeIDs(t, s, erin.ID); !slices.Equal(got, []int64{st.ID}) {
		t.Errorf("erin's home = %v, want the original %d only", got, st.ID)
	}
	if got := homeIDs(t, s, frank.ID); !slices.Equal(got, carols) {
		t.Errorf("frank's home = %v, want carol's repost %v", got, carols)
	}
	events := eventsSoFar(t, l)
	want := map[string][]int64{
		s.UserChannel(dave.ID): bobs, s.UserChannel(erin.ID): {st.ID}, s.UserChannel(frank.ID): carols,
	}
	for ch, ids := range want {
		if got := eventIDs(ofType(events[ch], protocol.TypeStatus)); !slices.Equal(got, ids) {
			t.Errorf("%s was sent %v, want %v", ch, got, ids)
		}
	}
	page, err := s.HomeTimeline(ctx, dave.ID, Cursor{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := s.Decorate(ctx, dave.ID, page.Statuses)
	if err != nil || len(sts) != 1 || sts[0].RepostOf == nil || sts[0].RepostOf.ID != st.ID ||
		sts[0].RepostOf.Message != st.Message || sts[0].RepostOf.Reposts != 2 || sts[0].Login != "bob" {
		t.Fatalf("dave's home decorated = %+v, %v; want bob's repost of %d with 2 reposts", sts, err, st.ID)
	}
	wantCauses := []string{fmt.Sprintf("reposted:%d:%d", bob.ID, st.ID), fmt.Sprintf("reposted:%d:%d", carol.ID, st.ID)}
	if got := noteCauses(t, s, alice.ID, protocol.NotifyReposted); !slices.Equal(got, wantCauses) {
		t.Errorf("alice's reposted notifications = %v, want %v", got, wantCauses)
	}
	// Reposting one's own status, or a repost entry, is allowed; the first
	// tells no one, the second reposts the original.
	if got, err := s.Repost(ctx, alice.ID, bobs[0]); err != nil || got.ID != st.ID {
		t.Fatalf("alice reposting bob's entry = %d, %v; want her original", got.ID, err)
	}
	if got := noteCauses(t, s, alice.ID, protocol.NotifyReposted); len(got) != 2 {
		t.Errorf("alice was told of her own repost: %v", got)
	}
	// Erin had the original; the repost by alice, whom she follows, is not
	// pushed to her either.
	if got := homeIDs(t, s, erin.ID); !slices.Equal(got, []int64{st.ID}) {
		t.Errorf("erin's home after alice's own repost = %v, want the original only", got)
	}
}

// A repost whose first repost left the follower's home counts as absent:
// once bob's repost is undone, carol's reaches dave.
func TestRepostAfterUndoReaches(t *testing.T) {
	t.Parallel()
	s, rdb := newPrivateBackend(t, Options{}) // it flushes the scripts
	ctx := ctxT(t)
	alice, bob, carol, dave := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "carol"), signUp(t, s, "dave")
	follow(t, s, dave.ID, "bob")
	follow(t, s, dave.ID, "carol")
	l := listen(t, s, rdb, s.UserChannel(dave.ID), s.UserChannel(bob.ID))
	st := post(t, s, alice.ID, "original")
	if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Repost(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	bobs := zsetIDs(t, s, s.keys.profile(bob.ID))
	got, err := s.Unrepost(ctx, bob.ID, st.ID)
	if err != nil || got.ID != st.ID {
		t.Fatalf("undo = %d, %v", got.ID, err)
	}
	if _, err := s.Unrepost(ctx, bob.ID, st.ID); err != nil {
		t.Fatalf("undo again: %v, want nothing done", err)
	}
	for _, key := range []string{s.keys.profile(bob.ID), s.keys.home(bob.ID), s.keys.home(dave.ID)} {
		if ids := zsetIDs(t, s, key); len(ids) != 0 {
			t.Errorf("%s = %v after the undo, want empty", key, ids)
		}
	}
	if n := rdb.ZCard(ctx, s.keys.reposts(st.ID)).Val(); n != 0 {
		t.Errorf("%d reposts after the undo, want 0", n)
	}
	if n := rdb.Exists(ctx, s.keys.status(bobs[0])).Val(); n != 0 {
		t.Error("the undone entry's hash is left")
	}
	if got := noteCauses(t, s, alice.ID, protocol.NotifyReposted); len(got) != 0 {
		t.Errorf("alice's reposted notifications after the undo = %v, want none", got)
	}
	if got := noteCauses(t, s, alice.ID, protocol.NotifyLiked); len(got) != 1 {
		t.Errorf("the undo took bob's like notification too: %v", got)
	}
	events := eventsSoFar(t, l)
	for _, ch := range []string{s.UserChannel(dave.ID), s.UserChannel(bob.ID)} {
		if got := eventIDs(ofType(events[ch], protocol.TypeStatusDeleted)); !slices.Equal(got, bobs) {
			t.Errorf("%s was told of deletions %v, want %v", ch, got, bobs)
		}
	}
	// With the scripts flushed (a restarted Redis), the push loads its
	// script again and sends what Redis refused.
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Repost(ctx, carol.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	carols := zsetIDs(t, s, s.keys.profile(carol.ID))
	if got := homeIDs(t, s, dave.ID); !slices.Equal(got, carols) {
		t.Errorf("dave's home = %v, want carol's repost %v", got, carols)
	}
	// Bob reposts again: a new entry, which dave, holding carol's, does not
	// get.
	if _, err := s.Repost(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if again := zsetIDs(t, s, s.keys.profile(bob.ID)); len(again) != 1 || again[0] == bobs[0] {
		t.Errorf("bob's profile after reposting again = %v, want one new entry", again)
	}
	if got := homeIDs(t, s, dave.ID); !slices.Equal(got, carols) {
		t.Errorf("dave's home = %v, want carol's repost %v only", got, carols)
	}
}

// Deleting the original takes every repost out: from the reposters'
// profiles and their followers' home timelines (each told), with the
// likes and the claims, over several passes of the job.
func TestDeletingOriginalRemovesReposts(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	alice := signUp(t, s, "alice")
	reposters := usersN(t, s, "rp", 5)
	readers := usersN(t, s, "rd", 3)
	var channels []string
	for _, r := range readers {
		channels = append(channels, s.UserChannel(r.ID))
		for _, rp := range reposters {
			follow(t, s, r.ID, rp.Login)
		}
	}
	l := listen(t, s, rdb, channels...)
	st := post(t, s, alice.ID, "soon gone")
	var entries []int64
	for _, rp := range reposters {
		if _, err := s.Repost(ctx, rp.ID, st.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Like(ctx, rp.ID, st.ID); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, zsetIDs(t, s, s.keys.profile(rp.ID))...)
		runJobIfQueued(t, s, s.keys.job(postJobID(entries[len(entries)-1])))
	}
	first := entries[0]
	for _, r := range readers {
		if got := homeIDs(t, s, r.ID); !slices.Equal(got, []int64{first}) {
			t.Fatalf("%s's home = %v, want the first repost %d only", r.Login, got, first)
		}
	}
	eventsSoFar(t, l)
	startWorker(t, s, "cleaner")
	if err := s.DeleteStatus(ctx, alice.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	waitJobsDone(t, s)
	for _, rp := range reposters {
		if ids := zsetIDs(t, s, s.keys.profile(rp.ID)); len(ids) != 0 {
			t.Errorf("%s's profile = %v, want empty", rp.Login, ids)
		}
		if _, err := rdb.ZScore(ctx, s.keys.liked(rp.ID), itoa(st.ID)).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s's liked index holds the deleted status", rp.Login)
		}
	}
	for _, r := range readers {
		if ids := homeIDs(t, s, r.ID); len(ids) != 0 {
			t.Errorf("%s's home = %v, want empty", r.Login, ids)
		}
	}
	for _, id := range entries {
		if n := rdb.Exists(ctx, s.keys.status(id)).Val(); n != 0 {
			t.Errorf("entry %d's hash is left", id)
		}
	}
	if n := rdb.Exists(ctx, s.keys.likes(st.ID), s.keys.reposts(st.ID)).Val(); n != 0 {
		t.Errorf("%d of the likes and reposts sets are left", n)
	}
	events := eventsSoFar(t, l)
	for _, ch := range channels {
		if got := eventIDs(ofType(events[ch], protocol.TypeStatusDeleted)); !slices.Equal(got, []int64{first}) {
			t.Errorf("%s was told of deletions %v, want %v", ch, got, []int64{first})
		}
	}
}

// Repost entries are timeline entries of their own: a home timeline read
// page by page, one status a page, gives every post and repost once, in
// the order of their own ids, by cursors in either direction.
func TestRepostCursors(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	alice, bob, reader := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "reader")
	follow(t, s, reader.ID, "bob")
	var want []int64
	for i := range 4 {
		st := post(t, s, alice.ID, fmt.Sprintf("by alice %d", i))
		mine := post(t, s, bob.ID, fmt.Sprintf("by bob %d", i))
		if _, err := s.Repost(ctx, bob.ID, st.ID); err != nil {
			t.Fatal(err)
		}
		want = append(want, mine.ID, mine.ID+1)
	}
	if got := homeIDs(t, s, reader.ID); !slices.Equal(got, want) {
		t.Fatalf("reader's home = %v, want %v", got, want)
	}
	var back []int64
	c := Cursor{Limit: 1}
	for {
		page, err := s.HomeTimeline(ctx, reader.ID, c)
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, statusIDs(page.Statuses)...)
		if page.NextBefore == nil {
			break
		}
		c.Before = *page.NextBefore
	}
	if !slices.Equal(back, reversed(want)) {
		t.Errorf("pages newest first = %v, want %v", back, reversed(want))
	}
	var forth []int64
	c = Cursor{Limit: 1, Forward: true}
	for {
		page, err := s.HomeTimeline(ctx, reader.ID, c)
		if err != nil {
			t.Fatal(err)
		}
		forth = append(forth, statusIDs(page.Statuses)...)
		if page.NextAfter == nil || len(page.Statuses) == 0 {
			break
		}
		c.After = *page.NextAfter
	}
	if !slices.Equal(forth, want) {
		t.Errorf("pages oldest first = %v, want %v", forth, want)
	}
}

// A worker that dies part way through a repost's fan-out leaves it to
// another, which finishes it: every follower has the entry once and is
// told once. A reposting instance that dies once the jobs are queued,
// before writing anything, leaves it to a worker too, which writes the
// entry, the claim and the notification from the job and fans it out.
func TestRepostFanoutSurvivesDeadWorkers(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 10, JobClaimIdle: 200 * time.Millisecond})
	ctx := ctxT(t)
	alice, bob, carol := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "carol")
	const n = 55
	followers := make([]User, n)
	for i := range followers {
		followers[i] = signUp(t, s, fmt.Sprintf("f%02d", i))
		follow(t, s, followers[i].ID, "bob")
		follow(t, s, followers[i].ID, "carol")
	}
	channels := make([]string, n)
	for i, f := range followers {
		channels[i] = s.UserChannel(f.ID)
	}
	l := listen(t, s, rdb, channels...)
	st := post(t, s, alice.ID, "passed around")
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))

	// Bob's repost: worker A dies after two passes of its own.
	if _, err := s.Repost(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	entry := zsetIDs(t, s, s.keys.profile(bob.ID))[0]
	ctxA, killA := context.WithCancel(ctx)
	a := s.NewWorker("a", discard)
	passes := 0
	a.afterPass = func() {
		if passes++; passes == 2 {
			killA()
		}
	}
	a.Run(ctxA)
	if passes != 2 {
		t.Fatalf("worker A ran %d passes, want 2", passes)
	}
	reached := 0
	for _, f := range followers {
		if _, err := rdb.ZScore(ctx, s.keys.home(f.ID), itoa(entry)).Result(); err == nil {
			reached++
		}
	}
	if reached != 30 {
		t.Fatalf("after the inline pass and two of A's, %d followers have the repost, want 30", reached)
	}
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	go s.NewWorker("b", discard).Run(ctxB)
	got := eventsUntil(t, l, 30*time.Second, func(got map[string][]event) bool { return len(got) == n })
	if len(got) != n {
		t.Fatalf("only %d of %d followers got the repost", len(got), n)
	}
	time.Sleep(300 * time.Millisecond) // anything sent twice comes right behind
	for ch, evs := range eventsSoFar(t, l) {
		got[ch] = append(got[ch], evs...)
	}
	for ch, evs := range got {
		if ids := eventIDs(evs); !slices.Equal(ids, []int64{entry}) {
			t.Fatalf("%s was told %v, want the repost %d once", ch, ids, entry)
		}
	}

	// Carol's repost: her instance dies right after queuing its jobs.
	dead, die := context.WithCancel(ctx)
	s.afterQueue = die
	if _, err := s.Repost(dead, carol.ID, st.ID); err == nil {
		t.Fatal("a repost whose context ended part way succeeded")
	}
	s.afterQueue = nil
	if n := rdb.ZCard(ctx, s.keys.profile(carol.ID)).Val(); n != 0 {
		t.Fatalf("carol's profile holds %d entries, want none written yet", n)
	}
	waitJobsDone(t, s)
	carols := zsetIDs(t, s, s.keys.profile(carol.ID))
	if len(carols) != 1 {
		t.Fatalf("carol's profile = %v, want her repost", carols)
	}
	if claim, err := rdb.ZScore(ctx, s.keys.reposts(st.ID), itoa(carol.ID)).Result(); err != nil || int64(claim) != carols[0] {
		t.Errorf("carol's claim = %v, %v; want %d", claim, err, carols[0])
	}
	if got := noteCauses(t, s, alice.ID, protocol.NotifyReposted); len(got) != 2 {
		t.Errorf("alice's reposted notifications = %v, want bob's and carol's", got)
	}
	// Every follower had bob's: carol's reaches none of them.
	for _, f := range followers {
		if ids := homeIDs(t, s, f.ID); !slices.Equal(ids, []int64{entry}) {
			t.Fatalf("%s's home = %v, want bob's repost %d only", f.Login, ids, entry)
		}
	}
	for ch, evs := range eventsSoFar(t, l) {
		if len(evs) != 0 {
			t.Errorf("%s was told %v of carol's repost", ch, eventIDs(evs))
		}
	}
}

// A pulled reposter's repost is read as their posts are, and a list that
// holds a reposter gets the repost in its timeline.
func TestRepostPulledAndListed(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PullThreshold: 3})
	ctx := ctxT(t)
	alice, star, lister := signUp(t, s, "alice"), signUp(t, s, "star"), signUp(t, s, "lister")
	fans := followersOf(t, s, "star", 3)
	follow(t, s, lister.ID, "star")
	list, err := s.CreateList(ctx, lister.ID, "stars")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddListMember(ctx, lister.ID, list.ID, "star"); err != nil {
		t.Fatal(err)
	}
	// The follow that reached the threshold queued star's promotion.
	runJob(t, s, s.keys.job(promoteJobID(star.ID)))
	if _, err := rdb.ZScore(ctx, s.keys.pulledAuthors(), itoa(star.ID)).Result(); err != nil {
		t.Fatalf("star is not pulled: %v", err)
	}
	st := post(t, s, alice.ID, "seen by a star")
	if _, err := s.Repost(ctx, star.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	entry := zsetIDs(t, s, s.keys.profile(star.ID))
	entry = entry[len(entry)-1:]
	page, err := s.HomeTimeline(ctx, fans[0].ID, Cursor{Limit: 1})
	if err != nil || !slices.Equal(statusIDs(page.Statuses), entry) {
		t.Errorf("a fan's newest home status = %v, %v; want the repost %v", statusIDs(page.Statuses), err, entry)
	}
	if n := rdb.ZCard(ctx, s.keys.home(fans[0].ID)).Val(); n != 0 {
		t.Errorf("a pulled reposter's repost was pushed to %d home entries", n)
	}
	lp, err := s.ListTimeline(ctx, lister.ID, list.ID, Cursor{Limit: 1})
	if err != nil || !slices.Equal(statusIDs(lp.Statuses), entry) {
		t.Errorf("the list's newest status = %v, %v; want the repost %v", statusIDs(lp.Statuses), err, entry)
	}
}

// A deleting instance that dies once the deletion's jobs are queued, before
// it wrote anything, leaves the deletion to a worker, which deletes the
// status and then its reposts and likes.
func TestDeletionOfRepostedStatusSurvivesDeadMaker(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{JobClaimIdle: 200 * time.Millisecond})
	ctx := ctxT(t)
	alice, bob, carol := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "carol")
	follow(t, s, carol.ID, "bob")
	st := post(t, s, alice.ID, "doomed")
	if _, err := s.Repost(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Like(ctx, carol.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	entry := zsetIDs(t, s, s.keys.profile(bob.ID))
	if got := homeIDs(t, s, carol.ID); !slices.Equal(got, entry) {
		t.Fatalf("carol's home = %v, want bob's repost %v", got, entry)
	}
	dead, die := context.WithCancel(ctx)
	s.afterQueue = die
	if err := s.DeleteStatus(dead, alice.ID, st.ID); err == nil {
		t.Fatal("a deletion whose context ended part way succeeded")
	}
	s.afterQueue = nil
	if n := rdb.Exists(ctx, s.keys.status(st.ID)).Val(); n != 1 {
		t.Fatal("the dead deletion wrote something")
	}
	startWorker(t, s, "heir")
	waitJobsDone(t, s)
	for key, what := range map[string]string{
		s.keys.status(st.ID): "the status", s.keys.status(entry[0]): "the repost", s.keys.likes(st.ID): "the likes",
		s.keys.reposts(st.ID): "the reposts", s.keys.profile(bob.ID): "bob's profile", s.keys.home(carol.ID): "carol's home",
	} {
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("%s is left after the worker finished the deletion", what)
		}
	}
	if _, err := rdb.ZScore(ctx, s.keys.liked(carol.ID), itoa(st.ID)).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("carol's liked index holds the deleted status (%v)", err)
	}
}

// A repost made again between the two steps of the take-back of the one
// before it (its claim, then its notification) keeps its notification,
// though it shares its cause with the one taken: also when its author is
// suspended meanwhile, which hides the repost until the suspension ends.
func TestRepostMadeAgainDuringATakeBackKeepsItsNotification(t *testing.T) {
	t.Parallel()
	for _, suspended := range []bool{false, true} {
		t.Run(fmt.Sprint("suspended=", suspended), func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{})
			ctx := ctxT(t)
			ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
			orig := post(t, s, ada.ID, "worth two reposts")
			if _, err := s.Repost(ctx, bob.ID, orig.ID); err != nil {
				t.Fatal(err)
			}
			first := zsetIDs(t, s, s.keys.profile(bob.ID))
			var again Status
			s.afterUnclaim = func() {
				s.afterUnclaim = nil
				var err error
				if again, err = s.Repost(ctx, bob.ID, orig.ID); err != nil {
					t.Error(err)
				}
				if suspended {
					if _, err := s.Suspend(ctx, bob.ID); err != nil {
						t.Error(err)
					}
				}
			}
			if _, err := s.Unrepost(ctx, bob.ID, orig.ID); err != nil {
				t.Fatal(err)
			}
			if again.ID != orig.ID {
				t.Fatalf("the repost made again: %+v", again)
			}
			mine := zsetIDs(t, s, s.keys.profile(bob.ID))
			if len(mine) != 1 || slices.Equal(mine, first) {
				t.Fatalf("bob's profile: %v; want one repost entry, not the first (%v)", mine, first)
			}
			want := []string{fmt.Sprintf("%s:%d:%d", protocol.NotifyReposted, bob.ID, orig.ID)}
			if got := noteCauses(t, s, ada.ID, protocol.NotifyReposted); !slices.Equal(got, want) {
				t.Errorf("ada's repost notifications: %v, want %v", got, want)
			}
		})
	}
}

// A like made again between the two steps of an unlike (the like, then its
// notification) keeps its notification, though it shares its cause with
// the one taken: the unlike looks at the like again once it took the
// notification.
func TestLikeMadeAgainDuringAnUnlikeKeepsItsNotification(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	st := post(t, s, ada.ID, "worth two likes")
	if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	s.afterUnclaim = func() {
		s.afterUnclaim = nil
		if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
			t.Error(err)
		}
	}
	if _, err := s.Unlike(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if n := likeCount(t, s, st.ID); n != 1 {
		t.Fatalf("likes = %d after the like made again, want 1", n)
	}
	checkOneNotification(t, s, ada.ID, protocol.NotifyLiked, bob.ID, st.ID)
}

// An unlike whose notification's take-back failed, the like itself taken
// out already, takes the notification back when tried again: no
// notification outlives its like.
func TestUnlikeTriedAgainTakesTheNotificationBack(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	st := post(t, s, ada.ID, "liked, then not")
	if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	checkOneNotification(t, s, ada.ID, protocol.NotifyLiked, bob.ID, st.ID)
	cause := note{kind: protocol.NotifyLiked, from: bob.ID, sid: st.ID}.cause()
	failing := &failOnce{fail: func(c redis.Cmder) bool { return slices.Contains(c.Args(), any(cause)) }}
	rdb.AddHook(failing)
	if _, err := s.Unlike(ctx, bob.ID, st.ID); err == nil {
		t.Fatal("the unlike whose take-back failed succeeded")
	}
	if !failing.fired.Load() {
		t.Fatal("the unlike took no notification back")
	}
	if n := likeCount(t, s, st.ID); n != 0 {
		t.Fatalf("likes = %d after the unlike's first step, want 0", n)
	}
	if _, err := s.Unlike(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if got := noteSizes(t, s, ada.ID); got != [3]int64{} {
		t.Errorf("ada's notification ids, records, causes after the unlike tried again: %v, want none", got)
	}
	if count, _, err := s.UnreadNotifications(ctx, ada.ID); err != nil || count != 0 {
		t.Errorf("ada's unread: %d, %v; want 0", count, err)
	}
}

// A like or a repost whose cause an undo took before its look, and made
// again between that look and the take-back of its notification (which the
// make again found stored, so stored none of its own), keeps its
// notification: notifyWhile looks again after its take-back.
func TestNotificationMadeAgainDuringItsTakeBackStays(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{protocol.NotifyLiked, protocol.NotifyReposted} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{})
			ctx := ctxT(t)
			ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
			st := post(t, s, ada.ID, "made, undone, made again")
			key, again := s.keys.likes(st.ID), func() error { _, err := s.Like(ctx, bob.ID, st.ID); return err }
			if kind == protocol.NotifyReposted {
				key, again = s.keys.reposts(st.ID), func() error { _, err := s.Repost(ctx, bob.ID, st.ID); return err }
			}
			s.beforeTakeBack = func() {
				s.beforeTakeBack = nil
				if err := again(); err != nil {
					t.Error(err)
				}
			}
			// The first make's notification, its cause gone (never written
			// here, as after an undo that ran before the look).
			n := note{to: ada.ID, from: bob.ID, kind: kind, sid: st.ID, status: &st,
				fromUser: protocol.User{ID: bob.ID, Login: bob.Login, Name: bob.Name}}
			if err := s.notifyWhile(ctx, n, key, itoa(bob.ID)); err != nil {
				t.Fatal(err)
			}
			if s.beforeTakeBack != nil {
				t.Fatal("the notification was not taken back: the test made nothing again")
			}
			checkOneNotification(t, s, ada.ID, kind, bob.ID, st.ID)
		})
	}
}

// checkOneNotification checks that uid's notifications of kind are one,
// from `from` about sid, in the causes and in the page a client reads.
func checkOneNotification(tb testing.TB, s *Service, uid int64, kind string, from, sid int64) {
	tb.Helper()
	want := []string{fmt.Sprintf("%s:%d:%d", kind, from, sid)}
	if got := noteCauses(tb, s, uid, kind); !slices.Equal(got, want) {
		tb.Errorf("notifications' causes: %v, want %v", got, want)
	}
	page, err := s.Notifications(ctxT(tb), uid, 0, 50)
	if err != nil {
		tb.Fatal(err)
	}
	var got []string
	for _, n := range page.Notifications {
		if n.Type == kind {
			got = append(got, fmt.Sprintf("%s:%d:%d", n.Type, n.From.ID, n.Status.ID))
		}
	}
	if !slices.Equal(got, want) {
		tb.Errorf("notifications read: %v, want %v", got, want)
	}
}

// A like and an unlike racing, one's write of either key landing after the
// whole of the other (as a cluster, writing the status's likes and the
// liker's index on two masters at once, may land them), leave the index
// agreeing with the likes.
func TestLikeAndUnlikeRacingKeepTheIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		likeLast bool
		late     string // which of the outer one's writes lands after the inner one
	}{{false, "liked"}, {true, "liked"}, {true, "likes"}, {false, "likes"}} {
		likeLast := tc.likeLast
		t.Run(fmt.Sprintf("liked at the end=%v, late %s", likeLast, tc.late), func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
			st := post(t, s, ada.ID, "liked and not")
			if likeLast {
				if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
					t.Fatal(err)
				}
			}
			s.afterLikeWrites = func() {
				s.afterLikeWrites = nil
				var err error
				// The inner one whole, then the outer one's late write.
				key, member := s.keys.liked(bob.ID), itoa(st.ID)
				if tc.late == "likes" {
					key, member = s.keys.likes(st.ID), itoa(bob.ID)
				}
				if likeLast {
					_, err = s.Like(ctx, bob.ID, st.ID) // during the unlike
					err = errors.Join(err, rdb.ZRem(ctx, key, member).Err())
				} else {
					_, err = s.Unlike(ctx, bob.ID, st.ID) // during the like
					err = errors.Join(err, rdb.ZAdd(ctx, key, redis.Z{Score: 1, Member: member}).Err())
				}
				if err != nil {
					t.Error(err)
				}
			}
			var err error
			if likeLast {
				_, err = s.Unlike(ctx, bob.ID, st.ID)
			} else {
				_, err = s.Like(ctx, bob.ID, st.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, errLikes := rdb.ZScore(ctx, s.keys.likes(st.ID), itoa(bob.ID)).Result()
			_, errLiked := rdb.ZScore(ctx, s.keys.liked(bob.ID), itoa(st.ID)).Result()
			if likes, liked := errLikes == nil, errLiked == nil; likes != liked {
				t.Errorf("bob likes the status: %v in its likes, %v in his index", likes, liked)
			}
		})
	}
}

// A like whose notification is stored after its status's deletion has
// taken the likes' notifications, and looked at before that deletion's
// cleanup takes the like, takes the notification back: it saw the status
// gone. (Made here: the deletion and its cleanup run as the notification is
// about to be stored, and the like is put back as the cleanup had yet to
// take it.)
func TestLikeRacingItsStatusDeletionLeavesNoNotification(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	st := post(t, s, ada.ID, "soon gone")
	cause := note{kind: protocol.NotifyLiked, from: bob.ID, sid: st.ID}.cause()
	hook := &beforeOnce{
		match: func(c redis.Cmder) bool { return slices.Contains(c.Args(), any(cause)) },
		do: func() {
			if err := s.DeleteStatus(ctx, ada.ID, st.ID); err != nil {
				t.Error(err)
			}
			runJobIfQueued(t, s, s.keys.job(dropReactionsJobID(st.ID)))
			if err := rdb.ZAdd(ctx, s.keys.likes(st.ID), redis.Z{Score: 1, Member: itoa(bob.ID)}).Err(); err != nil {
				t.Error(err)
			}
		},
	}
	rdb.AddHook(hook)
	if _, err := s.Like(ctx, bob.ID, st.ID); err != nil && !errors.Is(err, ErrStatusNotFound) {
		t.Fatal(err)
	}
	if !hook.fired.Load() {
		t.Fatal("the like stored no notification")
	}
	if got := noteSizes(t, s, ada.ID); got != [3]int64{} {
		t.Errorf("ada's notification ids, records, causes: %v, want none (the status is deleted)", got)
	}
}

// beforeOnce runs do once, before the first command or pipeline that has a
// command match takes.
type beforeOnce struct {
	match func(redis.Cmder) bool
	do    func()
	fired atomic.Bool
}

func (h *beforeOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.match(cmd) && h.fired.CompareAndSwap(false, true) {
			h.do()
		}
		return next(ctx, cmd)
	}
}

func (h *beforeOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, h.match) && h.fired.CompareAndSwap(false, true) {
			h.do()
		}
		return next(ctx, cmds)
	}
}

// An unlike settling the liker's index after the status was deleted, its
// likes not yet paged by the deletion's cleanup, drops the like from both
// rather than listing it again in the index, which the cleanup had passed.
func TestUnlikeOfADeletedStatusListsNoLike(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	st := post(t, s, ada.ID, "soon gone")
	if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	s.afterLikeWrites = func() {
		s.afterLikeWrites = nil
		// The status deleted; its cleanup took bob out of the index and
		// has yet to take the likes (put back here as they were).
		err := errors.Join(s.DeleteStatus(ctx, ada.ID, st.ID),
			rdb.ZAdd(ctx, s.keys.likes(st.ID), redis.Z{Score: 1, Member: itoa(bob.ID)}).Err(),
			rdb.ZRem(ctx, s.keys.liked(bob.ID), itoa(st.ID)).Err())
		if err != nil {
			t.Error(err)
		}
	}
	if _, err := s.Unlike(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if ids := zsetIDs(t, s, s.keys.liked(bob.ID)); len(ids) != 0 {
		t.Errorf("bob's index lists %v after the status's deletion", ids)
	}
}

// A repost undone while its original is being deleted (its hash gone, its
// drop_reactions job to come) leaves no reposted notification: the claim is
// left to that job, which takes the notification back.
func TestRepostUndoneAsItsOriginalIsDeleted(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	alice, rob := signUp(t, s, "alice"), signUp(t, s, "rob")
	st := post(t, s, alice.ID, "original")
	if _, err := s.Repost(ctx, rob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	eid := int64(rdb.ZScore(ctx, s.keys.reposts(st.ID), itoa(rob.ID)).Val())
	if n := len(rdb.HKeys(ctx, s.keys.noteCauses(alice.ID)).Val()); n != 1 {
		t.Fatalf("alice has %d notifications, want the repost's", n)
	}
	// alice's deletion of st, up to its writeDelete, as DeleteStatus makes
	// it; its drop_reactions job waits.
	payload := []byte(`{"type":"status_deleted","id":` + itoa(st.ID) + `}`)
	pipe := rdb.Pipeline()
	drop := s.queueDropReactions(ctx, pipe, alice.ID, st.ID, 0, string(payload))
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.writeDelete(ctx, alice.ID, st.ID, payload); err != nil {
		t.Fatal(err)
	}
	// Meanwhile rob undoes his repost by deleting his entry.
	if err := s.DeleteStatus(ctx, rob.ID, eid); err != nil {
		t.Fatal(err)
	}
	// alice's deletion goes on: its drop_reactions job.
	if err := s.markReady(ctx, drop); err != nil {
		t.Fatal(err)
	}
	runJob(t, s, drop)
	causes := rdb.HKeys(ctx, s.keys.noteCauses(alice.ID)).Val()
	if len(causes) != 0 {
		t.Errorf("a reposted notification of a deleted status, its repost undone, stays: %v", causes)
	}
}
