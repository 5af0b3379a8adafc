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

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// unfinished is a status whose post died after writing it and pushing it,
// its jobs not ready: a reply to a follower's status that mentions
// another, by an author some list holds, each follower connected. What a
// deletion then races is the jobs' redo.
type unfinished struct {
	survivor  *Service
	author    User
	followers []User // 0 owns the list, 1 is answered, 2 is mentioned
	parent    Status
	list      List
	sid       int64
	l         *listener
}

// instances returns two services on the test's Redis, whose workers take
// over jobs idle for claimIdle: one that lives, and one that dies where the
// context of each call says (mortal).
func instances(t *testing.T, claimIdle time.Duration) (survivor, dying *Service, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	rdb, prefix = redistest.Backend(t)
	opts := Options{Prefix: prefix, BcryptCost: 4, HashWait: time.Minute, JobClaimIdle: claimIdle}
	return New(rdb, opts), mortal(t, rdb, opts), rdb, prefix
}

func dieAfterThePush(t *testing.T) *unfinished {
	t.Helper()
	s, dying, rdb, _ := instances(t, 500*time.Millisecond)
	d := &unfinished{survivor: s}
	d.author = signUp(t, s, "author")
	d.followers = followersOf(t, s, "author", 3)
	for _, f := range d.followers[1:] {
		follow(t, s, d.author.ID, f.Login)
	}
	d.parent = post(t, s, d.followers[1].ID, "the parent")
	reply := func(ctx context.Context, message string) (Status, error) {
		return dying.Reply(ctx, d.author.ID, d.parent.ID, message+" @"+d.followers[2].Login)
	}
	// The round trips of such a reply, the list's pass (after them) aside.
	if _, err := reply(ctxT(t), "loads the scripts"); err != nil {
		t.Fatal(err)
	}
	probe := &deathAt{before: 1 << 30}
	if _, err := reply(context.WithValue(ctxT(t), deathKey{}, probe), "probe"); err != nil {
		t.Fatal(err)
	}
	d.list = createList(t, s, d.followers[0].ID, "watched")
	addMember(t, s, d.followers[0].ID, d.list.ID, "author")
	channels := []string{s.bus.UserChannel(d.author.ID), s.bus.GlobalChannel()}
	for _, f := range d.followers {
		channels = append(channels, s.bus.UserChannel(f.ID))
	}
	d.l = listen(t, s, rdb, channels...)

	// Dead once every round trip but the last (the jobs marked ready) is done.
	death := &deathAt{before: len(probe.trips) - 1}
	if _, err := reply(context.WithValue(ctxT(t), deathKey{}, death), "unfinished"); err != nil {
		t.Fatalf("a post that died before its last round trip, its jobs queued, answered %v, want its status", err)
	}
	profile := zsetIDs(t, s, s.keys.profile(d.author.ID))
	d.sid = profile[len(profile)-1]
	st, err := s.Status(ctxT(t), d.sid)
	if err != nil || st.Message != "unfinished @"+d.followers[2].Login {
		t.Fatalf("the dead post's status %d: %+v, %v", d.sid, st, err)
	}
	if n := len(d.conversation(t)); n != 3 {
		t.Fatalf("the dead post's conversation: %d of 3 writes made", n)
	}
	return d
}

// conversation returns what status d.sid's conversation holds: the
// parent's reply, and the notifications of the person answered and the
// one mentioned.
func (d *unfinished) conversation(t *testing.T) []string {
	t.Helper()
	s, sid := d.survivor, itoa(d.sid)
	var held []string
	if slices.Contains(zsetIDs(t, s, s.keys.replies(d.parent.ID)), d.sid) {
		held = append(held, "the parent's replies")
	}
	for _, n := range []struct {
		to   User
		kind string
	}{{d.followers[1], protocol.NotifyReplied}, {d.followers[2], protocol.NotifyMentioned}} {
		for _, c := range noteCauses(t, s, n.to.ID, n.kind) {
			if strings.HasSuffix(c, ":"+sid) {
				held = append(held, n.to.Login+"'s notification "+c)
			}
		}
	}
	return held
}

// gone checks that status d.sid is nowhere, and that the last frame of
// each channel about it says it is deleted; rewrites is how many times a
// redo may have written it again (each time deleted again), the frames of
// the author and the global timeline with it.
func (d *unfinished) gone(t *testing.T, rewrites int) {
	t.Helper()
	s, ctx := d.survivor, ctxT(t)
	if st, err := s.Status(ctx, d.sid); !errors.Is(err, ErrStatusNotFound) {
		t.Errorf("deleted status %d reads as %+v, %v", d.sid, st, err)
	}
	keys := map[string]string{
		"the author's profile": s.keys.profile(d.author.ID),
		"the author's home":    s.keys.home(d.author.ID),
		"the global timeline":  s.keys.global(),
		"the list":             s.keys.listStatuses(d.list.ID),
	}
	for _, f := range d.followers {
		keys[f.Login+"'s home"] = s.keys.home(f.ID)
	}
	for what, key := range keys {
		if ids := zsetIDs(t, s, key); slices.Contains(ids, d.sid) {
			t.Errorf("%s holds deleted status %d: %v", what, d.sid, ids)
		}
	}
	if held := d.conversation(t); len(held) > 0 {
		t.Errorf("deleted status %d is still in %v", d.sid, held)
	}
	if n, err := s.rdb.HGet(ctx, s.keys.user(d.author.ID), "posts").Int(); err != nil || n != 2 {
		t.Errorf("the author's post count: %d, %v; want 2 (the deleted one out)", n, err)
	}
	// The last frame about it on each channel says it is gone; a frame
	// sent once too often comes right behind.
	testio.Eventually(t, 30*time.Second, func() string { return d.frames(t, rewrites, false) })
	time.Sleep(300 * time.Millisecond)
	if bad := d.frames(t, rewrites, true); bad != "" {
		t.Error(bad)
	}
}

// frames says what is wrong with the frames about status d.sid so far ("":
// nothing), when each channel may carry it 1+rewrites times (the author's
// and the global one) or once; with counted false, only whether the last
// frame about it says it is gone.
func (d *unfinished) frames(t *testing.T, rewrites int, counted bool) string {
	t.Helper()
	s := d.survivor
	for channel, events := range eventsSoFar(t, d.l) {
		sent, last := 0, ""
		for _, ev := range events {
			switch {
			case ev.Status != nil && ev.Status.ID == d.sid:
				sent++
				last = ev.Type
			case ev.ID == d.sid:
				last = ev.Type
			}
		}
		most := 1 // the push before the death
		if channel == s.bus.UserChannel(d.author.ID) || channel == s.bus.GlobalChannel() {
			most += rewrites
		}
		if counted && sent > most || sent > 0 && last != "status_deleted" && last != "global_status_deleted" {
			return fmt.Sprintf("%s: status %d sent %d times (at most %d), the last frame about it %q: %v",
				channel, d.sid, sent, most, last, eventIDs(events))
		}
	}
	return ""
}

// A status its author deleted after its post's instance died part way is
// not written back by the post's jobs, which redo the writes of a maker
// taken for dead.
func TestDeletedStatusOfADeadPostStaysDeleted(t *testing.T) {
	t.Parallel()
	d := dieAfterThePush(t)
	s := d.survivor
	if err := s.DeleteStatus(ctxT(t), d.author.ID, d.sid); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{postJobID(d.sid), listPostJobID(d.sid)} {
		if j, ok, err := s.readJob(ctxT(t), s.keys.job(id)); err != nil || !ok || !j.deleted || j.ready {
			t.Fatalf("job %s after the deletion: %+v, there %v, %v; want it there, not ready, marked deleted", id, j, ok, err)
		}
	}
	time.Sleep(600 * time.Millisecond) // the maker is taken for dead
	startWorker(t, s, "after")
	waitJobsDone(t, s)
	d.gone(t, 0)
}

// redoRacingADeletion lets a worker redo d's dead post, the status
// deleted between the job's read and the redo's writes, with afterRewrite
// run after those writes; and checks the status is gone once the job is.
func (d *unfinished) redoRacingADeletion(t *testing.T, afterRewrite func() error) {
	t.Helper()
	s := d.survivor
	var once sync.Once
	deleted := make(chan error, 1)
	s.beforeRewrite = func(job) {
		once.Do(func() { deleted <- s.DeleteStatus(context.Background(), d.author.ID, d.sid) })
	}
	s.afterRewrite = afterRewrite
	time.Sleep(600 * time.Millisecond) // the maker is taken for dead
	startWorker(t, s, "after")
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the dead post's job did not redo its writes")
	}
	waitJobsDone(t, s)
	d.gone(t, 1)
}

// A deletion that comes between a post job's read and its redo's writes
// is seen after them: what the redo wrote is taken back.
func TestRedoThatRacesADeletionIsTakenBack(t *testing.T) {
	t.Parallel()
	d := dieAfterThePush(t)
	// The deletion's last step, the hash taken, as it lands when it came
	// after the rewrite's: what is taken back is read from the job.
	d.redoRacingADeletion(t, func() error {
		return d.survivor.rdb.Del(context.Background(), d.survivor.keys.status(d.sid)).Err()
	})
}

// A redo that wrote the status back and failed before it took it back
// again is taken back by the job's next try.
func TestRedoThatFailsAfterItsWritesIsTakenBackByTheNextTry(t *testing.T) {
	t.Parallel()
	d := dieAfterThePush(t)
	var failed atomic.Bool
	d.redoRacingADeletion(t, func() error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("the redo's Redis went away")
		}
		return nil
	})
	if !failed.Load() {
		t.Error("the redo never failed")
	}
}

// A repost entry whose repost died after writing it, then undone, is not
// written back by its job's redo: nor is the claim, which would leave its
// reposter unable to repost the status again, nor the notification.
func TestUndoneRepostOfADeadRepostStaysUndone(t *testing.T) {
	t.Parallel()
	s, dying, _, prefix := instances(t, 500*time.Millisecond)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	orig := post(t, s, ada.ID, "worth a repost")
	// Scripts loaded, as a Redis that lost them would have them again.
	if _, err := dying.Repost(ctxT(t), bob.ID, orig.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unrepost(ctxT(t), bob.ID, orig.ID); err != nil {
		t.Fatal(err)
	}
	startWorker(t, s, "after")
	waitJobsDone(t, s)
	var dead atomic.Int64 // the dead repost's entry, as its job redoes it
	s.beforeRewrite = func(j job) {
		if dead.CompareAndSwap(0, j.sid) {
			if _, err := s.Unrepost(context.Background(), bob.ID, orig.ID); err != nil {
				t.Error(err)
			}
		}
	}
	// Dead as it marks its jobs ready, everything else written.
	death := &deathAt{at: func(first string) bool {
		return strings.HasPrefix(first, "evalsha ") && strings.Contains(first, " "+prefix) && strings.Contains(first, "job:post:") && strings.HasSuffix(first, " ready\n")
	}}
	if _, err := dying.Repost(context.WithValue(ctxT(t), deathKey{}, death), bob.ID, orig.ID); err == nil {
		t.Fatal("a repost that died as it marked its jobs ready succeeded")
	}
	waitJobsDone(t, s)
	if dead.Load() == 0 {
		t.Fatal("the dead repost's job did not redo its writes")
	}
	if got := zsetIDs(t, s, s.keys.profile(bob.ID)); len(got) != 0 {
		t.Errorf("bob's profile after the repost was undone: %v", got)
	}
	if causes := noteCauses(t, s, ada.ID, protocol.NotifyReposted); len(causes) != 0 {
		t.Errorf("ada's repost notifications after the repost was undone: %v", causes)
	}
	again, err := s.Repost(ctxT(t), bob.ID, orig.ID)
	if err != nil || again.ID != orig.ID {
		t.Fatalf("repost again: %+v, %v", again, err)
	}
	if got := zsetIDs(t, s, s.keys.profile(bob.ID)); len(got) != 1 || got[0] == dead.Load() {
		t.Errorf("bob's profile after reposting again: %v, want a new entry (the dead one was %d)", got, dead.Load())
	}
}

// A job a worker waits on while its maker writes is not taken over by
// another worker, which would redo beside it what the maker left.
func TestWaitedJobsAreNotTakenOver(t *testing.T) {
	t.Parallel()
	s, dying, _, _ := instances(t, 6*time.Second)
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", 2)
	trips := postTrips(t, dying, author.ID)
	l := createList(t, s, followers[0].ID, "watched")
	addMember(t, s, followers[0].ID, l.ID, "author")

	var mu sync.Mutex
	redos := map[string]int{}
	s.beforeRewrite = func(j job) {
		mu.Lock()
		redos[j.key]++
		mu.Unlock()
		// Its entry delivered once: no worker took it over, whichever
		// redoes it.
		p, err := s.rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{
			Stream: s.keys.jobs(), Group: jobGroup, Start: j.entry, End: j.entry, Count: 1,
		}).Result()
		if err != nil || len(p) != 1 || p[0].RetryCount != 1 {
			t.Errorf("job %s's entry as it is redone: %+v, %v; want it delivered once", j.key, p, err)
		}
		time.Sleep(2500 * time.Millisecond) // a slow redo, past another's claim
	}
	// Two workers to wait on the post's two jobs, and one to take over
	// any left idle.
	for _, name := range []string{"one", "two", "three"} {
		startWorker(t, s, name)
	}
	// Dead once its jobs are queued, before the status is written (on one
	// Redis, where they go in one transaction, once both are, before the
	// jobs are marked ready).
	// (On a cluster the round trip that queues them is the one postTrips
	// learned, with the list job's queuing, after the post's, one more.)
	death := &deathAt{before: 1, sent: trips[1] + 1}
	if !redistest.OnCluster() {
		death = &deathAt{before: 2}
	}
	if _, err := dying.Post(context.WithValue(ctxT(t), deathKey{}, death), author.ID, "unwritten"); err != nil {
		t.Fatalf("a post that died after queuing its jobs answered %v, want its status", err)
	}
	waitJobsDone(t, s)
	mu.Lock()
	defer mu.Unlock()
	if len(redos) != 2 {
		t.Errorf("redone: %v; want the post's job and its lists'", redos)
	}
	for key, n := range redos {
		if n != 1 {
			t.Errorf("job %s redid its maker's writes %d times, want once", key, n)
		}
	}
	if ids := zsetIDs(t, s, s.keys.profile(author.ID)); len(ids) != 3 {
		t.Errorf("the author's profile holds %v, want three statuses", ids)
	}
	if ids := zsetIDs(t, s, s.keys.listStatuses(l.ID)); len(ids) != 3 {
		t.Errorf("the list holds %v, want the author's three statuses", ids)
	}
}

// A worker keeps the entry of its job claimed only while it is its own: one
// another worker took over stays that worker's.
func TestKeepLetsGoOfAJobTakenOver(t *testing.T) {
	t.Parallel()
	s, _, _, _ := instances(t, 3*time.Second)
	ctx := ctxT(t)
	w := s.NewWorker("me", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := w.createGroup(ctx); err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"mine", "theirs"} {
		if err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.keys.jobs(), Values: []string{"job", job}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	read, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: jobGroup, Consumer: "me", Streams: []string{s.keys.jobs(), ">"}, Count: 2,
	}).Result()
	if err != nil || len(read) != 1 || len(read[0].Messages) != 2 {
		t.Fatalf("read the entries: %v, %v", read, err)
	}
	mine, theirs := read[0].Messages[0].ID, read[0].Messages[1].ID
	if err := s.rdb.XClaimJustID(ctx, &redis.XClaimArgs{
		Stream: s.keys.jobs(), Group: jobGroup, Consumer: "other", Messages: []string{theirs},
	}).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // an idle time to reset
	owner := func(entry string) (string, time.Duration) {
		t.Helper()
		p, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: s.keys.jobs(), Group: jobGroup, Start: entry, End: entry, Count: 1,
		}).Result()
		if err != nil || len(p) != 1 {
			t.Fatalf("entry %s pending: %v, %v", entry, p, err)
		}
		return p[0].Consumer, p[0].Idle
	}
	for _, c := range []struct {
		entry string
		held  bool
		owner string
	}{{mine, true, "me"}, {theirs, false, "other"}} {
		w.keptAt = time.Time{} // long ago
		held, err := w.keep(ctx, c.entry)
		if err != nil || held != c.held {
			t.Errorf("keep %s: %v, %v; want %v", c.entry, held, err, c.held)
		}
		who, idle := owner(c.entry)
		if who != c.owner {
			t.Errorf("entry %s is %s's after keep, want %s's", c.entry, who, c.owner)
		}
		if c.held && idle >= 50*time.Millisecond {
			t.Errorf("entry %s kept, idle %s: not claimed again", c.entry, idle)
		}
	}
	// Within a sixth of JobClaimIdle of the last keep nothing is asked of
	// Redis: whatever the entry, it is taken as still held.
	if held, err := w.keep(ctx, theirs); err != nil || !held {
		t.Errorf("keep right after a keep: %v, %v; want held", held, err)
	}
}

// A dead post's author suspended between the job's read and its redo's
// writes: the status the redo writes again is hidden, as the suspension's
// job (which read the author's statuses before the rewrite, the status
// taken out of them meanwhile as a deletion would) hid the rest.
func TestRedoOfASuspendedAuthorsPostIsHidden(t *testing.T) {
	t.Parallel()
	d := dieAfterThePush(t)
	s := d.survivor
	var once sync.Once
	suspended := make(chan error, 1)
	s.beforeRewrite = func(job) {
		once.Do(func() {
			ctx := context.Background()
			// The suspension's job, as it runs when it read the statuses
			// before the redo wrote this one there again.
			err := s.rdb.ZRem(ctx, s.keys.profile(d.author.ID), itoa(d.sid)).Err()
			if err == nil {
				_, err = s.Suspend(ctx, d.author.ID)
			}
			suspended <- err
		})
	}
	time.Sleep(600 * time.Millisecond) // the maker is taken for dead
	startWorker(t, s, "after")
	select {
	case err := <-suspended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the dead post's job did not redo its writes")
	}
	waitJobsDone(t, s)
	if h := s.rdb.HGet(ctxT(t), s.keys.status(d.sid), "hidden").Val(); h != "1" {
		t.Errorf("the redone status of the suspended author: hidden = %q, want 1", h)
	}
}
