package social

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
)

// deletedWhileUnfinished is a status whose post died after writing it and
// pushing it (its jobs not ready), by an author some list holds, each
// follower connected: what a deletion then races is the jobs' redo.
type deletedWhileUnfinished struct {
	survivor  *Service
	author    User
	followers []User
	list      List
	sid       int64
	l         *listener
}

func dieAfterThePush(t *testing.T, opts Options) *deletedWhileUnfinished {
	t.Helper()
	rdb, prefix := redistest.Backend(t)
	opts.Prefix, opts.BcryptCost, opts.HashWait = prefix, 4, time.Minute
	d := &deletedWhileUnfinished{survivor: New(rdb, opts)}
	s := d.survivor
	dying := mortal(t, rdb, opts)
	d.author = signUp(t, s, "author")
	d.followers = followersOf(t, s, "author", 3)
	trips := postTrips(t, dying, d.author.ID) // the list's pass comes after these
	d.list = createList(t, s, d.followers[0].ID, "watched")
	addMember(t, s, d.followers[0].ID, d.list.ID, "author")
	channels := []string{s.bus.UserChannel(d.author.ID), s.bus.GlobalChannel()}
	for _, f := range d.followers {
		channels = append(channels, s.bus.UserChannel(f.ID))
	}
	d.l = listen(t, s, rdb, channels...)

	// Dead once the third round trip (the status and its push) is done.
	death := &deathAt{before: len(trips) - 1}
	st, err := dying.Post(context.WithValue(ctxT(t), deathKey{}, death), d.author.ID, "unfinished")
	if err == nil {
		t.Fatal("a post that died before its last round trip succeeded")
	}
	profile := zsetIDs(t, s, s.keys.profile(d.author.ID))
	d.sid = profile[len(profile)-1]
	if st.ID != 0 || d.sid <= 0 {
		t.Fatalf("the dead post's status: %d (profile %v)", d.sid, profile)
	}
	if _, err := s.Status(ctxT(t), d.sid); err != nil {
		t.Fatalf("the dead post's status %d is not there: %v", d.sid, err)
	}
	return d
}

// gone checks that status d.sid is nowhere, and that the last frame of
// each channel about it says it is deleted; rewrites is how many times a
// redo may have written it again (each time deleted again), the frames of
// the author and the global timeline with it.
func (d *deletedWhileUnfinished) gone(t *testing.T, rewrites int) {
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
	time.Sleep(300 * time.Millisecond) // a frame sent again comes right behind
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
		if sent > most || sent > 0 && last != "status_deleted" && last != "global_status_deleted" {
			t.Errorf("%s: status %d sent %d times (at most %d), the last frame about it %q: %v",
				channel, d.sid, sent, most, last, eventIDs(events))
		}
	}
}

// A status its author deleted after its post's instance died part way is
// not written back by the post's jobs, which redo the writes of a maker
// taken for dead.
func TestDeletedStatusOfADeadPostStaysDeleted(t *testing.T) {
	t.Parallel()
	d := dieAfterThePush(t, Options{JobClaimIdle: 500 * time.Millisecond})
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

// A deletion that comes between a post job's read and its redo's writes
// is seen after them: the status is deleted again.
func TestRedoThatRacesADeletionDeletesAgain(t *testing.T) {
	t.Parallel()
	d := dieAfterThePush(t, Options{JobClaimIdle: 500 * time.Millisecond})
	s := d.survivor
	var once sync.Once
	deleted := make(chan error, 1)
	s.beforeRewrite = func() {
		once.Do(func() { deleted <- s.DeleteStatus(context.Background(), d.author.ID, d.sid) })
	}
	time.Sleep(600 * time.Millisecond) // the maker is taken for dead
	startWorker(t, s, "after")
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no redo of the dead post's jobs")
	}
	waitJobsDone(t, s)
	d.gone(t, 1)
}

// A job a worker waits on while its maker writes is not taken over by
// another worker, which would redo the maker's writes beside it.
func TestWaitedJobIsNotTakenOver(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Backend(t)
	opts := Options{Prefix: prefix, BcryptCost: 4, HashWait: time.Minute, JobClaimIdle: 3 * time.Second}
	s := New(rdb, opts)
	dying := mortal(t, rdb, opts)
	author := signUp(t, s, "author")
	followersOf(t, s, "author", 2)
	trips := postTrips(t, dying, author.ID)

	var redos atomic.Int32
	s.beforeRewrite = func() {
		redos.Add(1)
		time.Sleep(1200 * time.Millisecond) // a slow redo, past any other's claim
	}
	startWorker(t, s, "one")
	startWorker(t, s, "two")
	// Dead once its job is queued, before the status is written.
	death := &deathAt{before: 1, sent: trips[1]}
	if _, err := dying.Post(context.WithValue(ctxT(t), deathKey{}, death), author.ID, "unwritten"); err == nil {
		t.Fatal("a post that died after queuing its job succeeded")
	}
	waitJobsDone(t, s)
	if n := redos.Load(); n != 1 {
		t.Errorf("the dead post's writes were redone %d times, want once", n)
	}
	if ids := zsetIDs(t, s, s.keys.profile(author.ID)); len(ids) != 3 {
		t.Errorf("the author's profile holds %v, want three statuses", ids)
	}
}
