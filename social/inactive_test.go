package social

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/luatext"
	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// signUpToken signs up login and returns the user with a session token.
func signUpToken(tb testing.TB, s *Service, login string) (User, string) {
	tb.Helper()
	u, token, err := s.SignUp(ctxT(tb), login, "Name of "+login, "password-"+login)
	if err != nil {
		tb.Fatalf("sign up %s: %v", login, err)
	}
	return u, token
}

// lastSeenAgo sets uid's last activity to d ago, as if they had not made a
// request since.
func lastSeenAgo(tb testing.TB, s *Service, uid int64, d time.Duration) {
	tb.Helper()
	ctx := ctxT(tb)
	now, err := s.now(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.rdb.ZAdd(ctx, s.keys.seen(), redisZ(float64(now.Add(-d).UnixMilli()), itoa(uid))).Err(); err != nil {
		tb.Fatal(err)
	}
}

func authenticate(tb testing.TB, s *Service, token string) int64 {
	tb.Helper()
	uid, err := s.Authenticate(ctxT(tb), token)
	if err != nil {
		tb.Fatal(err)
	}
	return uid
}

// A batch of stream opens by users back from long away rebuilds their home
// timelines side by side, under a deadline of its own: run one after
// another, each rebuild (a second here, its passes one status each) used
// up the batch's deadline, and the users checked after it were refused.
func TestAuthenticateManyRebuildsSideBySide(t *testing.T) {
	s, rdb := newService(t, Options{RefillPassStatuses: 1, RefillStep: 1})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	pipe := rdb.Pipeline()
	for i := int64(1); i <= 3000; i++ {
		id := 1_000_000 + i
		pipe.HSet(ctx, s.keys.status(id), "id", id, "uid", author.ID, "login", "author", "name", "A", "message", "m", "posted", 1)
		pipe.ZAdd(ctx, s.keys.profile(author.ID), redisZ(float64(id), itoa(id)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 7
	var as []*Authentication
	var uids []int64
	for i := range n {
		u, token := signUpToken(t, s, fmt.Sprintf("back%d", i))
		follow(t, s, u.ID, "author")
		if err := rdb.Del(ctx, s.keys.home(u.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		lastSeenAgo(t, s, u.ID, 8*24*time.Hour)
		as = append(as, &Authentication{Token: token})
		uids = append(uids, u.ID)
	}
	s.touches = newTouches(s.touchEvery()) // forget the sign-ups' notes
	// Past two rebuilds' worth of rebuildWait: one after another, the
	// fourth user's checks would find it spent.
	batch, cancel := context.WithTimeout(ctx, 2*rebuildWait+rebuildWait/2)
	defer cancel()
	s.AuthenticateMany(batch, as, AuthChecks{})
	for i, a := range as {
		if a.Err != nil || a.UID != uids[i] {
			t.Errorf("user %d of the batch: uid %d, err %v; want %d admitted", i, a.UID, a.Err, uids[i])
		}
		if len(homeIDs(t, s, uids[i])) == 0 {
			t.Errorf("user %d of the batch: nothing rebuilt before the batch answered", i)
		}
	}
}

// A post is not pushed to followers away longer than InactiveAfter; those
// never seen, and those connected now whatever their last request, get it.
// The one away gets a full home timeline back on their first request, from
// a rebuild queued once however many requests race for it.
func TestInactiveFollowersSkippedAndRebuilt(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected"
	author := signUp(t, s, "author")
	away, awayToken := signUpToken(t, s, "away")
	awayOnline := signUp(t, s, "awayonline")
	recent := signUp(t, s, "recent")
	never := signUp(t, s, "never")
	for _, f := range []User{away, awayOnline, recent, never} {
		follow(t, s, f.ID, "author")
	}
	rdb.ZRem(ctx, s.keys.seen(), itoa(never.ID)) // from before activity was kept
	lastSeenAgo(t, s, away.ID, 8*24*time.Hour)
	lastSeenAgo(t, s, awayOnline.ID, 8*24*time.Hour)
	lastSeenAgo(t, s, recent.ID, 6*24*time.Hour)
	rdb.ZAdd(ctx, s.opts.ConnectedKey, redisZ(1, itoa(awayOnline.ID)))

	var posted []int64
	for i := range 3 {
		st, err := s.Post(ctx, author.ID, fmt.Sprintf("status %d", i))
		if err != nil {
			t.Fatal(err)
		}
		runJob(t, s, s.keys.job(postJobID(st.ID)))
		posted = append(posted, st.ID)
	}
	for _, f := range []User{awayOnline, recent, never} {
		if got := homeIDs(t, s, f.ID); !slices.Equal(got, posted) {
			t.Errorf("home of %s = %v, want %v", f.Login, got, posted)
		}
	}
	if got := homeIDs(t, s, away.ID); len(got) != 0 {
		t.Fatalf("home of the follower away = %v, want nothing pushed", got)
	}

	// Many first requests at once, alone and in batches (streams opening
	// together, the user twice in each): one rebuild.
	rdb.Del(ctx, s.keys.jobs())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				if uid, err := s.Authenticate(ctx, awayToken); err != nil || uid != away.ID {
					t.Errorf("authenticate = %d, %v; want %d", uid, err, away.ID)
				}
				return
			}
			as := []*Authentication{{Token: awayToken}, {Token: awayToken}}
			s.AuthenticateMany(ctx, as, AuthChecks{})
			for _, a := range as {
				if a.Err != nil || a.UID != away.ID {
					t.Errorf("AuthenticateMany = %d, %v; want %d", a.UID, a.Err, away.ID)
				}
			}
		})
	}
	wg.Wait()
	if got := homeIDs(t, s, away.ID); !slices.Equal(got, posted) {
		t.Fatalf("home after coming back = %v, want %v", got, posted)
	}
	if n := jobsLeft(t, ctx, rdb, s.keys); n > 1 {
		t.Errorf("%d jobs queued for one return, want at most 1 (finished jobs leave none)", n)
	}
	if n, _ := rdb.Exists(ctx, s.keys.job(refillJobID(away.ID))).Result(); n != 0 {
		t.Error("the rebuild job is still there after the first request")
	}

	// Back for good: the next post reaches them, and no rebuild is queued.
	st, err := s.Post(ctx, author.ID, "welcome back")
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, s, s.keys.job(postJobID(st.ID)))
	authenticate(t, s, awayToken)
	if n, _ := rdb.Exists(ctx, s.keys.job(refillJobID(away.ID))).Result(); n != 0 {
		t.Error("a request by an active user queued a rebuild")
	}
	if got := homeIDs(t, s, away.ID); !slices.Contains(got, st.ID) {
		t.Errorf("home after coming back = %v, missing the new post %d", got, st.ID)
	}
}

// With InactiveAfter negative, nobody is ever skipped.
func TestInactiveAfterNever(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{InactiveAfter: -1})
	author := signUp(t, s, "author")
	away, token := signUpToken(t, s, "away")
	follow(t, s, away.ID, "author")
	lastSeenAgo(t, s, away.ID, 365*24*time.Hour)
	st, err := s.Post(ctxT(t), author.ID, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if got := homeIDs(t, s, away.ID); !slices.Contains(got, st.ID) {
		t.Fatalf("home = %v, want the post", got)
	}
	authenticate(t, s, token)
	if n, _ := s.rdb.Exists(ctxT(t), s.keys.job(refillJobID(away.ID))).Result(); n != 0 {
		t.Error("a rebuild was queued with InactiveAfter negative")
	}
}

// A fan-out pass's live frames go to connected followers only; the others
// read the status from their home timeline when they come. (A post's own
// first page, on one Redis, names every follower of the page in one
// message, which each instance hands to those it holds streams of:
// TestFramesCallAnswers. Here that page is the first follower alone, and
// a worker's passes reach the others.)
func TestFanoutPublishesToConnectedOnly(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 1})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected"
	author := signUp(t, s, "author")
	first, on, off := signUp(t, s, "first"), signUp(t, s, "online"), signUp(t, s, "offline")
	for _, u := range []User{first, on, off} {
		follow(t, s, u.ID, "author")
	}
	rdb.ZAdd(ctx, s.opts.ConnectedKey, redisZ(1, itoa(first.ID)), redisZ(1, itoa(on.ID)))
	l := listen(t, s, rdb, s.UserChannel(first.ID), s.UserChannel(on.ID), s.UserChannel(off.ID))
	startWorker(t, s, "worker")
	st, err := s.Post(ctx, author.ID, "live")
	if err != nil {
		t.Fatal(err)
	}
	marker, err := s.Post(ctx, author.ID, "marker")
	if err != nil {
		t.Fatal(err)
	}
	waitJobsDone(t, s)
	events := eventsUntil(t, l, 10*time.Second, func(got map[string][]event) bool {
		return slices.Contains(eventIDs(got[s.UserChannel(on.ID)]), marker.ID) &&
			slices.Contains(eventIDs(got[s.UserChannel(first.ID)]), marker.ID)
	})
	for _, u := range []User{first, on} {
		if got := eventIDs(events[s.UserChannel(u.ID)]); !slices.Equal(got, []int64{st.ID, marker.ID}) {
			t.Errorf("the connected follower %s was told %v, want %v", u.Login, got, []int64{st.ID, marker.ID})
		}
	}
	if got := events[s.UserChannel(off.ID)]; len(got) != 0 {
		t.Errorf("the follower not connected was told %v", eventIDs(got))
	}
	if ids := homeIDs(t, s, off.ID); !slices.Contains(ids, st.ID) {
		t.Errorf("home of the follower not connected = %v, want the post", ids)
	}
}

// The fan-out trims a home timeline one insert in trimEvery: after many
// posts it holds at most HomeSize plus trimEvery-1 statuses, and reads the
// newest HomeSize.
func TestFanoutTrimsHomeTimelines(t *testing.T) {
	t.Parallel()
	const size = 10
	s, rdb := newService(t, Options{HomeSize: size})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	reader := signUp(t, s, "reader")
	follow(t, s, reader.ID, "author")
	var posted []int64
	for i := range 100 {
		st, err := s.Post(ctx, author.ID, fmt.Sprintf("status %d", i))
		if err != nil {
			t.Fatal(err)
		}
		posted = append(posted, st.ID)
		if n, _ := rdb.ZCard(ctx, s.keys.home(reader.ID)).Result(); n > size+trimEvery-1 {
			t.Fatalf("after %d posts the home timeline holds %d, want at most %d", i+1, n, size+trimEvery-1)
		}
	}
	page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: size})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, st := range page.Statuses {
		got = append(got, st.ID)
	}
	want := slices.Clone(posted[len(posted)-size:])
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Fatalf("newest page = %v, want %v", got, want)
	}
}

// A user back after a long absence whose refill is queued already (one
// with a floor, as an unfollow or a followee's deletion queues it) gets the
// rebuild's home all the same: the refill is widened into it, where its
// floor would have left out every status skipped while they were away.
func TestReturnWidensAQueuedRefill(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected" // away is not
	author := signUp(t, s, "author")
	away, token := signUpToken(t, s, "away")
	follow(t, s, away.ID, "author")
	lastSeenAgo(t, s, away.ID, 8*24*time.Hour)
	var posted []int64
	for i := range 3 {
		st, err := s.Post(ctx, author.ID, fmt.Sprintf("while away %d", i))
		if err != nil {
			t.Fatal(err)
		}
		runJob(t, s, s.keys.job(postJobID(st.ID)))
		posted = append(posted, st.ID)
	}
	if got := homeIDs(t, s, away.ID); len(got) != 0 {
		t.Fatalf("home of the follower away = %v, want nothing pushed", got)
	}
	refill := job{kind: jobRefill, uid: away.ID, floor: itoa(posted[0])}
	if err := s.queueJob(ctx, s.rdb, refill, inputsWritten).Err(); err != nil {
		t.Fatal(err)
	}
	authenticate(t, s, token)
	runJobIfQueued(t, s, s.keys.job(refillJobID(away.ID)))
	if got := homeIDs(t, s, away.ID); !slices.Equal(got, posted) {
		t.Errorf("home after coming back = %v, want %v", got, posted)
	}
}

// widen_refill.lua widens a refill with a floor into a rebuild once: a
// rebuild is left as it is, and no refill is made where none is queued.
func TestWidenRefill(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	key := s.keys.job(refillJobID(7))
	if err := s.queueJob(ctx, rdb, job{kind: jobRefill, uid: 7, floor: "42", cursor: 3, part: "9", below: "40"}, inputsWritten).Err(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 2} {
		if got, err := widenRefillScript.Run(ctx, rdb, []string{key}).Int(); err != nil || got != want {
			t.Fatalf("widening %d answered %d (%v), want %d", i, got, err, want)
		}
	}
	j, ok, err := s.readJob(ctx, key)
	if err != nil || !ok || j.floor != "+inf" || j.cursor != 0 || j.part != "" || j.below != "" || j.pass != 1 {
		t.Errorf("the widened refill: %+v (there %v, %v); want floor +inf from the start, its pass moved once", j, ok, err)
	}
	rdb.Del(ctx, key)
	if got, err := widenRefillScript.Run(ctx, rdb, []string{key}).Int(); err != nil || got != 0 || rdb.Exists(ctx, key).Val() != 0 {
		t.Errorf("widening no refill answered %d (%v), and made one: %v", got, err, rdb.Exists(ctx, key).Val())
	}
}

// A follower away longer than InactiveAfter is reached while connected. On
// one Redis whether they are, or are active again, is checked as their push
// runs (the page's activity is left out of the reads before the frames, see
// followerActivity), on a cluster as the page's activity is read, and for
// those found away then, again once the status is written: a follower
// connecting, going, or making a request in between is reached, or not, as
// Redis says at that point; those active by their last request are reached
// either way. A post whose frames did not go ahead (its
// author's unfollow count moved) reads the activity in one more round
// trip, after the one that writes the status.
func TestAwayFollowerReachedWhileConnected(t *testing.T) {
	t.Parallel()
	for _, moved := range []bool{false, true} {
		t.Run(fmt.Sprintf("unfollows moved=%v", moved), func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			s.opts.ConnectedKey = s.keys.prefix + "connected"
			author := signUp(t, s, "author")
			comes, goes, stays, recent := signUp(t, s, "comes"), signUp(t, s, "goes"), signUp(t, s, "stays"), signUp(t, s, "recent")
			returns := signUp(t, s, "returns")
			everyone := []User{comes, goes, stays, recent, returns}
			for _, f := range everyone {
				follow(t, s, f.ID, "author")
			}
			for _, f := range []User{comes, goes, stays, returns} {
				lastSeenAgo(t, s, f.ID, 8*24*time.Hour)
			}
			rdb.ZAdd(ctx, s.opts.ConnectedKey, redisZ(1, itoa(goes.ID)), redisZ(1, itoa(stays.ID)))
			post(t, s, author.ID, "loads the scripts") // a Redis lacking them costs round trips
			// Between the reads and the pushes: after the round trip that
			// writes the status (on a cluster, after the pushes too).
			s.afterWrite = func() {
				s.afterWrite = nil
				rdb.ZAdd(ctx, s.opts.ConnectedKey, redisZ(1, itoa(comes.ID)))
				rdb.ZRem(ctx, s.opts.ConnectedKey, itoa(goes.ID))
				// A request, not connected (Redis's clock is this machine's).
				rdb.ZAdd(ctx, s.keys.seen(), redisZ(float64(time.Now().UnixMilli()), itoa(returns.ID)))
			}
			if moved {
				// Before the round trip that sends the frames (on a cluster,
				// before the pushes): an unfollow of the author by no one
				// of these counts itself.
				s.afterQueue = func() {
					s.afterQueue = nil
					rdb.Incr(ctx, s.keys.unfollows(author.ID))
				}
			}
			counter := &commandCounter{}
			rdb.AddHook(counter)
			st := post(t, s, author.ID, "hello")
			// The hooks' own: three, and the count's one.
			trips := counter.roundTrips.Load() - 3
			if moved {
				trips--
			}
			reached, want := []User{stays, recent}, int64(4)
			if !redistest.OnCluster() {
				want = 3
			}
			switch {
			case !redistest.OnCluster() && !moved:
				reached = append(reached, comes, returns) // checked as pushed
			case !redistest.OnCluster():
				reached, want = append(reached, goes), want+1 // presence's set read, before the hook
			default:
				// goes checked as read; comes and returns, found away as
				// read, read again once the status is written, and pushed
				// in two round trips more (pushReturned)
				reached, want = append(reached, goes, comes, returns), want+2
			}
			if trips != want {
				t.Errorf("the post made %d round trips, want %d", trips, want)
			}
			for _, f := range everyone {
				got := homeIDs(t, s, f.ID)
				if want := slices.Contains(reached, f); want != slices.Contains(got, st.ID) {
					t.Errorf("%s's home = %v; reached: %v", f.Login, got, want)
				}
			}
			// The unfollow count moved during a post to every follower:
			// its job is left to a worker, who reads the followers again
			// (lateFollowers), in no round trip of the post's.
			if left := rdb.Exists(ctx, s.keys.job(postJobID(st.ID))).Val() == 1; left != moved {
				t.Errorf("the post's job left: %v, want %v", left, moved)
			}
		})
	}
}

// A follower away past InactiveAfter who comes back as a post is made,
// after it read its page's activity and before it wrote the status (on a
// cluster, where the status is written in the round trip after the
// activity's; on one Redis the pushes check the activity after the write),
// has their home rebuilt before the status is there, and is skipped by the
// pushes as read: the post reads those it found away again once the status
// is written, and pushes it to those back.
func TestFollowerBackAsAPostIsMade(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected" // presence kept: the away are skipped
	author := signUp(t, s, "author")
	away, token := signUpToken(t, s, "away")
	stays := signUp(t, s, "stays")
	follow(t, s, away.ID, "author")
	follow(t, s, stays.ID, "author")
	post(t, s, author.ID, "loads the scripts")
	lastSeenAgo(t, s, away.ID, 8*24*time.Hour)
	lastSeenAgo(t, s, stays.ID, 8*24*time.Hour)
	returned := false
	s.afterQueue = func() {
		s.afterQueue = nil
		if _, err := s.Authenticate(ctx, token); err != nil {
			t.Error(err)
		}
		returned = true
	}
	st := post(t, s, author.ID, "as you come back")
	if !returned {
		t.Fatal("the follower did not come back during the post")
	}
	if got := homeIDs(t, s, away.ID); !slices.Contains(got, st.ID) {
		t.Errorf("the follower back during the post: home %v lacks status %d (jobs left %d)", got, st.ID, jobsLeft(t, ctx, rdb, s.keys))
	}
	if got := homeIDs(t, s, stays.ID); slices.Contains(got, st.ID) {
		t.Errorf("the follower still away: home %v holds status %d", got, st.ID)
	}
}

// TestPostAnsweredThoughAReturnPushFailed fails the push to a follower
// back as a post is made (pushReturned, on a cluster): the status is
// written and its job done, so the post answers it and logs that the push
// failed, rather than answer an error that a retry would turn into a
// second status. On one Redis the pushes check the activity after the
// write, and no such push is made.
func TestPostAnsweredThoughAReturnPushFailed(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	s, rdb := newService(t, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected" // presence kept: the away are skipped
	author := signUp(t, s, "author")
	away, token := signUpToken(t, s, "away")
	follow(t, s, away.ID, "author")
	post(t, s, author.ID, "loads the scripts")
	lastSeenAgo(t, s, away.ID, 8*24*time.Hour)
	failing := &failPushAlone{}
	rdb.AddHook(failing)
	s.afterQueue = func() {
		s.afterQueue = nil
		if _, err := s.Authenticate(ctx, token); err != nil {
			t.Error(err)
		}
	}
	s.afterWrite = func() { failing.armed.Store(true) }
	st := post(t, s, author.ID, "as you come back")
	if redistest.OnCluster() != failing.failed.Load() {
		t.Fatalf("a push alone failed: %v, want %v", failing.failed.Load(), redistest.OnCluster())
	}
	if redistest.OnCluster() && !strings.Contains(logged.String(), "status="+itoa(st.ID)) {
		t.Errorf("nothing logged of status %d: %q", st.ID, logged.String())
	}
	if n, err := rdb.Exists(ctx, s.keys.status(st.ID)).Result(); err != nil || n != 1 {
		t.Errorf("status %d exists: %d %v", st.ID, n, err)
	}
	if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
		t.Errorf("%d jobs left", n)
	}
}

// runsScript reports whether cmds run sc, by its hash or its text.
func runsScript(cmds []redis.Cmder, sc *redis.Script, text string) bool {
	for _, c := range cmds {
		if args := c.Args(); len(args) > 1 && (args[1] == sc.Hash() || args[1] == text) {
			return true
		}
	}
	return false
}

// failPushAlone fails, once armed, the first pipeline that runs push.lua
// without advance.lua (a post's own last round trip carries both).
type failPushAlone struct {
	armed, failed atomic.Bool
}

func (h *failPushAlone) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failPushAlone) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *failPushAlone) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.Load() && runsScript(cmds, pushScript, pushText) && !runsScript(cmds, advanceScript, luatext.Compact(advanceSource)) &&
			h.failed.CompareAndSwap(false, true) {
			err := errors.New("push refused by the test")
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}
