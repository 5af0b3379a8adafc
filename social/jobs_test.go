package social

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// queueJob writes each kind's hash with the fields and values older
// instances wrote, so that either runs the other's jobs: a job queued
// before its inputs has no "ready", and a refill never has one.
func TestQueuedJobHashesKeepTheirLayout(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	const uid, sid, payload = 7, 9, `{"type":"status"}`
	for _, tc := range []struct {
		j      job
		inputs jobInputs
		want   map[string]string
	}{
		{job{kind: jobPost, uid: uid, sid: sid, payload: payload}, inputsPending,
			map[string]string{"kind": "post", "uid": "7", "sid": "9", "cursor": "0", "payload": payload}},
		{job{kind: jobListPost, uid: uid, sid: sid, payload: payload}, inputsPending,
			map[string]string{"kind": "list_post", "uid": "7", "sid": "9", "cursor": "0", "payload": payload}},
		{job{kind: jobDelete, uid: uid, sid: sid, payload: payload}, inputsPending,
			map[string]string{"kind": "delete", "uid": "7", "sid": "9", "cursor": "0", "payload": payload}},
		{job{kind: jobListDelete, uid: uid, sid: sid, payload: payload}, inputsPending,
			map[string]string{"kind": "list_delete", "uid": "7", "sid": "9", "cursor": "0", "payload": payload}},
		{job{kind: jobDropReactions, uid: uid, sid: sid, payload: payload}, inputsPending,
			map[string]string{"kind": "drop_reactions", "uid": "7", "sid": "9", "cursor": "0", "payload": payload}},
		{job{kind: jobDropReactions, uid: uid, sid: sid + 1, payload: payload, of: sid}, inputsPending,
			map[string]string{"kind": "drop_reactions", "uid": "7", "sid": "10", "cursor": "0", "payload": payload, "of": "9"}},
		{job{kind: jobPromote, uid: uid}, inputsWritten,
			map[string]string{"kind": "promote", "uid": "7", "cursor": "0", "ready": "1"}},
		{job{kind: jobRefill, uid: uid, floor: "+inf"}, inputsWritten,
			map[string]string{"kind": "refill", "uid": "7", "cursor": "0", "floor": "+inf"}},
		{job{kind: jobRefill, uid: uid + 1, floor: "41"}, inputsWritten,
			map[string]string{"kind": "refill", "uid": "8", "cursor": "0", "floor": "41"}},
	} {
		t.Run(tc.j.id(), func(t *testing.T) {
			key := s.keys.job(tc.j.id())
			// Once through a pipeline (Post, DeleteStatus), once on the
			// client (the others): the second finds the job queued.
			pipe := rdb.Pipeline()
			first := s.queueJob(ctx, pipe, tc.j, tc.inputs)
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := first.Int(); err != nil || n != 1 {
				t.Fatalf("queue = %d, %v; want 1", n, err)
			}
			if n, err := s.queueJob(ctx, rdb, tc.j, tc.inputs).Int(); err != nil || n != 0 {
				t.Fatalf("queue again = %d, %v; want 0", n, err)
			}
			got, err := rdb.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			// A job queued with its inputs has its stream entry; one queued
			// before them has none, and is among the jobs being made, by
			// when it was queued.
			making, merr := rdb.ZScore(ctx, s.keys.making(), key).Result()
			if tc.inputs == inputsWritten {
				entries, err := rdb.XRange(ctx, s.keys.jobs(), got["entry"], got["entry"]).Result()
				if err != nil || len(entries) != 1 || entries[0].Values["job"] != key {
					t.Errorf("entry %q names %v, %v; want the job", got["entry"], entries, err)
				}
				if !errors.Is(merr, redis.Nil) {
					t.Errorf("a job queued ready is among those being made (%v, %v)", making, merr)
				}
			} else {
				queued, _ := strconv.ParseInt(got["queued"], 10, 64)
				if got["entry"] != "" || time.Since(time.UnixMilli(queued)).Abs() > time.Minute || merr != nil || making != float64(queued) {
					t.Errorf("a job queued before its inputs: entry %q, queued %q, among those being made at %v (%v); want no entry, now, and there",
						got["entry"], got["queued"], making, merr)
				}
			}
			delete(got, "entry")
			delete(got, "queued")
			if !maps.Equal(got, tc.want) {
				t.Errorf("hash = %v, want %v", got, tc.want)
			}
			if j := parseJob(key, got); j.kind != tc.j.kind || j.uid != tc.j.uid || j.sid != tc.j.sid ||
				j.payload != tc.j.payload || j.floor != tc.j.floor || j.ready != (tc.inputs == inputsWritten) || j.of != tc.j.of {
				t.Errorf("parsed back = %+v, want %+v", j, tc.j)
			}
		})
	}
}

// oldJob writes a job hash field by field as an older instance did, with
// its stream entry, and returns its key.
func oldJob(tb testing.TB, s *Service, id string, fields ...any) string {
	tb.Helper()
	ctx := ctxT(tb)
	k := s.keys
	if err := s.rdb.XGroupCreateMkStream(ctx, k.jobs(), jobGroup, "0").Err(); err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		tb.Fatal(err)
	}
	key := k.job(id)
	entry, err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.jobs(), Values: []any{"job", key}}).Result()
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.rdb.HSet(ctx, key, append([]any{"entry", entry}, fields...)...).Err(); err != nil {
		tb.Fatal(err)
	}
	return key
}

// Jobs an older instance queued, one of them part way through, run to
// their end: a post job resumed after its first pass, a refill, a
// promotion and a cleanup, each leaving no hash and no stream entry.
func TestJobsQueuedByAnOlderInstanceRun(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	k := s.keys
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", 5)
	homes := func() [][]int64 {
		var got [][]int64
		for _, f := range followers {
			got = append(got, homeIDs(t, s, f.ID))
		}
		return got
	}
	done := func(key string) {
		t.Helper()
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("%s is left after its job", key)
		}
		if n := jobsLeft(t, ctx, rdb, k); n != 0 {
			t.Errorf("job stream holds %d entries after the job, want 0", n)
		}
	}

	// A status written, whose post job reached the first follower only.
	sid := rdb.Incr(ctx, k.statusSeq()).Val()
	st := Status{ID: sid, UID: author.ID, Login: author.Login, Name: author.Name, Message: "old",
		Posted: time.Now().UTC().Truncate(time.Millisecond)}
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.writePost(ctx, st, place{}, payload); err != nil {
		t.Fatal(err)
	}
	first, err := rdb.ZRangeWithScores(ctx, k.followers(author.ID), 0, 0).Result()
	if err != nil || len(first) != 1 {
		t.Fatalf("first follower = %v, %v", first, err)
	}
	seq := rdb.Get(ctx, k.followSeq()).Val()
	key := oldJob(t, s, "post:"+itoa(sid), "kind", "post", "uid", author.ID, "sid", sid,
		"cursor", first[0].Score, "payload", payload, "ready", 1, "until", seq, "pass", 1)
	if passes := runJob(t, s, key); len(passes) != 3 {
		t.Errorf("the post job ran %d passes, want 3 (4 followers left, 2 a pass, and one finding none)", len(passes))
	}
	want := [][]int64{nil, {sid}, {sid}, {sid}, {sid}}
	if got := homes(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("homes after the post job = %v, want %v", got, want)
	}
	done(key)

	// The first follower's home is refilled.
	key = oldJob(t, s, "refill:"+itoa(followers[0].ID), "kind", "refill", "uid", followers[0].ID, "cursor", 0, "floor", "+inf")
	if passes := runJob(t, s, key); len(passes) != 1 || passes[0].copied != 1 {
		t.Errorf("the refill ran %+v, want one pass copying the status", passes)
	}
	if got := homeIDs(t, s, followers[0].ID); !slices.Equal(got, []int64{sid}) {
		t.Errorf("home after the refill = %v, want %v", got, []int64{sid})
	}
	done(key)

	// The author is made pulled.
	key = oldJob(t, s, "promote:"+itoa(author.ID), "kind", "promote", "uid", author.ID, "cursor", 0, "ready", 1)
	runJob(t, s, key)
	if _, err := rdb.ZScore(ctx, k.pulledAuthors(), itoa(author.ID)).Result(); err != nil {
		t.Errorf("the author is not pulled after the promotion: %v", err)
	}
	for _, f := range followers {
		if _, err := rdb.ZScore(ctx, k.pulls(f.ID), itoa(author.ID)).Result(); err != nil {
			t.Errorf("follower %d does not pull the author: %v", f.ID, err)
		}
	}
	done(key)

	// The status is deleted, and its cleanup takes it out of every home.
	deleted, err := json.Marshal(protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.writeDelete(ctx, author.ID, sid, deleted); err != nil {
		t.Fatal(err)
	}
	key = oldJob(t, s, "delete:"+itoa(sid), "kind", "delete", "uid", author.ID, "sid", sid, "cursor", 0,
		"payload", deleted, "ready", 1)
	runJob(t, s, key)
	want = [][]int64{nil, nil, nil, nil, nil}
	if got := homes(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("homes after the cleanup = %v, want %v", got, want)
	}
	done(key)
}

// markReady marks the jobs still queued ready, and makes none that is gone:
// a second deletion of one status, whose queuing found the first's jobs,
// marks them after the first's passes finished them.
func TestMarkReadyMakesNoJobAgain(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	queued := job{kind: jobPost, uid: 1, sid: 7, payload: "{}"}
	if err := s.queueJob(ctx, rdb, queued, inputsPending).Err(); err != nil {
		t.Fatal(err)
	}
	gone := s.keys.job(postJobID(8))
	if err := s.markReady(ctx, s.keys.job(queued.id()), "", gone); err != nil {
		t.Fatal(err)
	}
	if ready := rdb.HGet(ctx, s.keys.job(queued.id()), "ready").Val(); ready != "1" {
		t.Errorf("the queued job's ready = %q, want 1", ready)
	}
	if n := rdb.Exists(ctx, gone).Val(); n != 0 {
		t.Errorf("marking a job gone made it again: %v", rdb.HGetAll(ctx, gone).Val())
	}
}

// A job queued before its inputs enters the job stream only when a worker
// has something to do in it: a post whose maker finishes its first pass
// (most posts) wakes no worker; one with pages left gets its entry as its
// maker moves it on; one whose maker died gets it from a worker that
// adopts it, once JobClaimIdle has gone. Until then the backlog counts it.
func TestJobsEnterTheStreamOnlyForAWorker(t *testing.T) {
	t.Parallel()
	const claimIdle = time.Second
	s, rdb := newService(t, Options{FanoutPassSize: 3, JobClaimIdle: claimIdle})
	ctx := ctxT(t)
	k := s.keys
	added := func() int64 {
		info, err := rdb.XInfoStream(ctx, k.jobs()).Result()
		if err != nil {
			return 0 // no stream yet
		}
		return info.EntriesAdded
	}
	hasEntry := func(key string) bool {
		entry := rdb.HGet(ctx, key, "entry").Val()
		msgs := rdb.XRangeN(ctx, k.jobs(), entry, entry, 1).Val()
		return entry != "" && len(msgs) == 1 && msgs[0].Values["job"] == key
	}
	making := func(key string) bool { return rdb.ZScore(ctx, k.making(), key).Err() == nil }

	short := signUp(t, s, "short")
	shortFollowers := followersOf(t, s, "short", 2)
	before := added()
	one := post(t, s, short.ID, "one page")
	if n := added() - before; n != 0 {
		t.Errorf("a post of one page added %d stream entries, want 0", n)
	}
	if n := jobsLeft(t, ctx, rdb, k); n != 0 {
		t.Errorf("a post of one page left %d jobs, want 0", n)
	}

	// A maker that died after queueing: its job waits among those being
	// made, counted in the backlog, with no entry.
	dead := k.job(postJobID(one.ID))
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: one})
	if err != nil {
		t.Fatal(err)
	}
	queued := time.Now()
	if err := s.queueJob(ctx, rdb, job{kind: jobPost, uid: short.ID, sid: one.ID, payload: string(payload)}, inputsPending).Err(); err != nil {
		t.Fatal(err)
	}
	// Adopted only once its maker has had JobClaimIdle.
	if n, _, err := s.adoptJobs(ctx); err != nil || n != 0 {
		t.Errorf("adopted %d (%v) within JobClaimIdle, want 0", n, err)
	}
	if !making(dead) || hasEntry(dead) {
		t.Errorf("a job queued before its inputs: among those being made %v, with an entry %v; want true, false", making(dead), hasEntry(dead))
	}
	if n, oldest, err := s.JobBacklog(ctx); err != nil || n != 1 || oldest > time.Minute {
		t.Errorf("backlog with a job being made = %d, %v, %v; want 1, under a minute", n, oldest, err)
	}

	long := signUp(t, s, "long")
	longFollowers := make([]User, 5)
	for i := range longFollowers {
		longFollowers[i] = signUp(t, s, fmt.Sprintf("l%02d", i))
		follow(t, s, longFollowers[i].ID, "long")
	}
	two := post(t, s, long.ID, "two pages")
	moved := k.job(postJobID(two.ID))
	if !hasEntry(moved) || making(moved) {
		t.Errorf("a post with a page left: entry %v, among those being made %v; want true, false", hasEntry(moved), making(moved))
	}

	time.Sleep(time.Until(queued.Add(claimIdle + 100*time.Millisecond)))
	if n, full, err := s.adoptJobs(ctx); err != nil || n != 1 || full {
		t.Errorf("adopted %d (a whole batch %v, %v) after JobClaimIdle, want 1 (false)", n, full, err)
	}
	if !hasEntry(dead) || making(dead) {
		t.Errorf("an adopted job: entry %v, among those being made %v; want true, false", hasEntry(dead), making(dead))
	}
	if n, _, err := s.adoptJobs(ctx); err != nil || n != 0 {
		t.Errorf("adopted %d (%v) again, want 0", n, err)
	}

	startWorker(t, s, "w")
	waitJobsDone(t, s)
	for _, f := range shortFollowers {
		if got := homeIDs(t, s, f.ID); !slices.Equal(got, []int64{one.ID}) {
			t.Errorf("%s's home = %v, want [%d]", f.Login, got, one.ID)
		}
	}
	for _, f := range longFollowers {
		if got := homeIDs(t, s, f.ID); !slices.Equal(got, []int64{two.ID}) {
			t.Errorf("%s's home = %v, want [%d]", f.Login, got, two.ID)
		}
	}
}

// A job an older build queued before its inputs, with its stream entry and
// no "queued", waits for its maker until JobClaimIdle after its entry was
// added, then has its maker's writes redone and runs: the entry's time
// stands for when it was queued.
func TestOlderBuildsJobWaitsForItsMaker(t *testing.T) {
	t.Parallel()
	const claimIdle = time.Second
	s, rdb := newService(t, Options{JobClaimIdle: claimIdle})
	ctx := ctxT(t)
	k := s.keys
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", 2)
	st := post(t, s, author.ID, "pushed twice")
	// The first follower's copy gone, as if the maker died before its push.
	if err := rdb.ZRem(ctx, k.home(followers[0].ID), itoa(st.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: st})
	if err != nil {
		t.Fatal(err)
	}
	added := time.Now()
	key := oldJob(t, s, postJobID(st.ID), "kind", "post", "uid", author.ID, "sid", st.ID, "cursor", 0, "payload", payload)
	res, err := s.pass(ctx, key)
	if err != nil || !res.wait {
		t.Fatalf("a pass within JobClaimIdle of the entry = %+v, %v; want it to wait", res, err)
	}
	if got := homeIDs(t, s, followers[0].ID); len(got) != 0 {
		t.Fatalf("a waiting pass wrote %v into a home", got)
	}
	time.Sleep(time.Until(added.Add(claimIdle + 100*time.Millisecond)))
	if res, err := s.pass(ctx, key); err != nil || res.wait || !res.finished {
		t.Fatalf("a pass past JobClaimIdle of the entry = %+v, %v; want it to finish", res, err)
	}
	for _, f := range followers {
		if got := homeIDs(t, s, f.ID); !slices.Equal(got, []int64{st.ID}) {
			t.Errorf("%s's home = %v, want [%d]", f.Login, got, st.ID)
		}
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 || jobsLeft(t, ctx, rdb, k) != 0 {
		t.Errorf("after the job: its hash %d, %d jobs left; want none", n, jobsLeft(t, ctx, rdb, k))
	}
}
