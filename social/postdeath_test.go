package social

import (
	"cmp"
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
	"chorus/internal/testio"

	"github.com/redis/go-redis/v9"
)

// deathAt makes the instance of a post die at one point of it: after
// round trips before it, and of the next one only the first sent commands
// (a pipeline cut off as it was written; a transaction cut before its
// EXEC, none). Everything after fails.
type deathAt struct {
	before, sent int
	// at, when set, takes the place of before: the instance dies as it
	// sends the first round trip whose first command, as fmt.Sprintln
	// writes its arguments, at matches (sending none of it).
	at func(first string) bool

	mu    sync.Mutex
	trips []int // the commands of each round trip made
	dead  bool
}

var errDied = errors.New("the instance died")

type deathKey struct{}

// deathHook kills the posts whose context carries a *deathAt where it says.
type deathHook struct{}

func (deathHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (deathHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return deathHook{}.run(ctx, []redis.Cmder{cmd}, func(cmds []redis.Cmder) error { return next(ctx, cmds[0]) })
	}
}

func (deathHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return deathHook{}.run(ctx, cmds, func(cmds []redis.Cmder) error { return next(ctx, cmds) })
	}
}

func (deathHook) run(ctx context.Context, cmds []redis.Cmder, next func([]redis.Cmder) error) error {
	d, ok := ctx.Value(deathKey{}).(*deathAt)
	if !ok || cmds[0].Name() == "hello" || cmds[0].Name() == "client" { // a new connection's own
		return next(cmds)
	}
	d.mu.Lock()
	first := fmt.Sprintln(cmds[0].Args()...)
	if d.at != nil && !d.dead && d.at(first) {
		d.dead = true
	}
	if d.dead || d.at == nil && len(d.trips) > d.before {
		d.mu.Unlock()
		for _, c := range cmds {
			c.SetErr(errDied)
		}
		return errDied
	}
	d.trips = append(d.trips, len(cmds))
	if d.at != nil || len(d.trips) <= d.before {
		d.mu.Unlock()
		return next(cmds)
	}
	d.dead = true
	d.mu.Unlock()
	sent := min(d.sent, len(cmds))
	if sent < len(cmds) && cmds[0].Name() == "multi" {
		sent = 0 // a transaction cut before its EXEC: Redis drops it whole
	}
	if sent > 0 {
		_ = next(cmds[:sent])
	}
	for _, c := range cmds[sent:] {
		c.SetErr(errDied)
	}
	return errDied
}

// mortal returns a Service on rdb's Redis that dies where the context of
// each call says (deathKey).
func mortal(tb testing.TB, rdb redis.UniversalClient, opts Options) *Service {
	return New(redistest.WithHook(tb, rdb, deathHook{}), opts)
}

// postTrips returns the commands of each round trip of a post by author
// through dying, once its scripts are loaded, as a Redis that lost them
// would have them loaded again.
func postTrips(tb testing.TB, dying *Service, author int64) []int {
	tb.Helper()
	post(tb, dying, author, "loads the scripts")
	probe := &deathAt{before: 1 << 30}
	if _, err := dying.Post(context.WithValue(ctxT(tb), deathKey{}, probe), author, "probe"); err != nil {
		tb.Fatal(err)
	}
	want := 3 // on a cluster the status is written in a round trip of its own
	if redistest.OnCluster() {
		want = 4
	}
	if len(probe.trips) != want {
		tb.Fatalf("a post made %d round trips (%v), want %d", len(probe.trips), probe.trips, want)
	}
	return probe.trips
}

// A post whose instance dies at any point of it, between round trips or
// within one, is lost only if it was never queued (then no follower ever
// sees it), and otherwise reaches every follower's home timeline, and
// each connected follower's stream once, by another instance's worker.
func TestPostSurvivesDeathAnywhere(t *testing.T) {
	t.Parallel()
	survivor, dying, rdb, _ := instances(t, 500*time.Millisecond)
	ctx := ctxT(t)

	// A post that lives through, to learn the round trips a post makes.
	author := signUp(t, survivor, "author")
	followersOf(t, survivor, "author", 3)
	trips := postTrips(t, dying, author.ID)

	// Every point of death, each its own author of three followers.
	var deaths []*deathAt
	for before, n := range trips {
		for sent := range n + 1 {
			deaths = append(deaths, &deathAt{before: before, sent: sent})
		}
	}
	type victim struct {
		death     *deathAt
		author    User
		followers []User
	}
	victims := make([]victim, len(deaths))
	var channels []string
	for i, d := range deaths {
		a := signUp(t, survivor, fmt.Sprintf("a%02d", i))
		fs := make([]User, 3)
		for j := range fs {
			fs[j] = signUp(t, survivor, fmt.Sprintf("a%02df%d", i, j))
			follow(t, survivor, fs[j].ID, a.Login)
			channels = append(channels, survivor.bus.UserChannel(fs[j].ID))
		}
		victims[i] = victim{death: d, author: a, followers: fs}
	}
	l := listen(t, survivor, rdb, channels...)
	answered := make([]bool, len(victims))
	for i, v := range victims {
		_, err := dying.Post(context.WithValue(ctx, deathKey{}, v.death), v.author.ID, fmt.Sprintf("death %d", i))
		answered[i] = err == nil
	}
	startWorker(t, survivor, "survivor")
	waitJobsDone(t, survivor)
	time.Sleep(300 * time.Millisecond) // a frame sent twice comes right behind
	frames := eventsSoFar(t, l)
	posted := 0
	for i, v := range victims {
		mine := zsetIDs(t, survivor, survivor.keys.profile(v.author.ID))
		if len(mine) > 1 {
			t.Fatalf("%s's profile holds %v", v.author.Login, mine)
		}
		queued := len(mine) == 1
		if queued {
			posted++
		}
		for _, f := range v.followers {
			home := homeIDs(t, survivor, f.ID)
			got := eventIDs(frames[survivor.bus.UserChannel(f.ID)])
			switch {
			case queued && (!slices.Equal(home, mine) || !slices.Equal(got, mine)):
				t.Errorf("died after %d round trips and %d commands: %s's home %v, frames %v; want the status %v once",
					v.death.before, v.death.sent, f.Login, home, got, mine)
			case !queued && (len(home) != 0 || len(got) != 0):
				t.Errorf("died after %d round trips and %d commands, status not written: %s's home %v, frames %v; want none",
					v.death.before, v.death.sent, f.Login, home, got)
			}
		}
		// A death before the job was queued loses the post, never after
		// (on one Redis the second round trip is a transaction: the job is
		// queued once its EXEC was sent).
		jobAt := 1
		if !redistest.OnCluster() {
			jobAt = trips[1]
		}
		if d := v.death; !queued && (d.before > 1 || d.before == 1 && d.sent >= jobAt) {
			t.Errorf("died after %d round trips and %d commands, its job queued: the post was lost", d.before, d.sent)
		}
		// A post answers its status once it knows its job queued (the
		// command that queues it answered), and only then: a client that
		// retries a failed post does not post it twice.
		if d := v.death; answered[i] != (d.before > 1 || d.before == 1 && d.sent >= jobAt) || answered[i] && !queued {
			t.Errorf("died after %d round trips and %d commands (queued %v): answered %v, want it answered once its job was known queued",
				d.before, d.sent, queued, answered[i])
		}
	}
	if posted == 0 || posted == len(victims) {
		t.Errorf("%d of %d posts made it: the deaths did not fall on both sides of the queuing", posted, len(victims))
	}
}

// A post whose request ends before its job is queued posts nothing; one
// whose request ends once it is (on a cluster, where the job is queued in
// a round trip of its own) is finished at once all the same, detached from
// the request, not left to a worker.
func TestPostRequestEndedPart(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{JobClaimIdle: time.Hour})
	author := signUp(t, s, "author")
	fans := followersOf(t, s, "author", 2)
	ctx, cancel := context.WithCancel(ctxT(t))
	s.afterQueue = func() { s.afterQueue = nil; cancel() }
	st, err := s.Post(ctx, author.ID, "ended")
	mine := zsetIDs(t, s, s.keys.profile(author.ID))
	if !redistest.OnCluster() {
		// On one Redis the hook runs before the round trip that queues.
		if !errors.Is(err, context.Canceled) || len(mine) != 0 {
			t.Fatalf("a post whose request ended before its job: %v, profile %v; want context.Canceled and nothing", err, mine)
		}
		if n := jobsLeft(t, ctxT(t), rdb, s.keys); n != 0 {
			t.Errorf("%d jobs left", n)
		}
		return
	}
	if err != nil || !slices.Equal(mine, []int64{st.ID}) {
		t.Fatalf("a post whose request ended once its job was queued: %v, profile %v; want it posted", err, mine)
	}
	for _, f := range fans {
		if home := homeIDs(t, s, f.ID); !slices.Equal(home, []int64{st.ID}) {
			t.Errorf("%s's home %v, want %d", f.Login, home, st.ID)
		}
	}
}

// Redis reaching maxmemory between a post's round trip that writes it and
// the one that pushes it (on one Redis): the pushes are refused, and so is
// the job's move past them, which goes in the same round trip. The post,
// queued, answers its status and logs Redis's error; its job stays, and a
// worker pushes the status once Redis has room again.
func TestPostOutOfMemoryAtItsPushes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // of its own: maxmemory is the server's
	rdb := redistest.ClientOf(t, srv.URL)
	var logged testio.Buffer
	s := New(rdb, Options{Prefix: redistest.Prefix(), BcryptCost: 4, HashWait: time.Minute, JobClaimIdle: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	fans := followersOf(t, s, "author", 3)
	post(t, s, author.ID, "loads the scripts")
	s.afterWrite = func() {
		s.afterWrite = nil
		if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
			t.Error(err)
		}
	}
	st, err := s.Post(ctx, author.ID, "pushes refused")
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("a post whose pushes Redis refused answered %v, want its status", err)
	}
	if log := logged.String(); !strings.Contains(log, "status="+itoa(st.ID)) || !strings.Contains(log, "OOM") {
		t.Errorf("logged %q, want status %d's OOM error", log, st.ID)
	}
	sid := st.ID
	if n := jobsLeft(t, ctx, rdb, s.keys); n != 1 {
		t.Fatalf("%d jobs left after the pushes were refused, want the post's", n)
	}
	startWorker(t, s, "w1")
	testio.Eventually(t, 30*time.Second, func() string {
		for _, f := range fans {
			if got := homeIDs(t, s, f.ID); !slices.Contains(got, sid) {
				return fmt.Sprintf("%s's home %v lacks status %d (jobs left %d)", f.Login, got, sid, jobsLeft(t, ctx, rdb, s.keys))
			}
		}
		return ""
	})
}

// At maxmemory a worker's pass of a job that only deletes (a status's
// cleanup) still moves its job on and finishes it, freeing memory: only a
// post's own last round trip asks advance.lua to write nothing there.
func TestCleanupMovesOnAtMaxmemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // of its own: maxmemory is the server's
	rdb := redistest.ClientOf(t, srv.URL)
	s := New(rdb, Options{Prefix: redistest.Prefix(), BcryptCost: 4, HashWait: time.Minute, FanoutPassSize: 2})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	followersOf(t, s, "author", 5)
	st := post(t, s, author.ID, "to delete")
	runJob(t, s, s.keys.job(postJobID(st.ID)))
	if err := s.DeleteStatus(ctx, author.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.pass(context.Background(), s.keys.job(deleteJobID(st.ID)))
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Errorf("a cleanup's pass at maxmemory: %v", err)
	}
}

// failBesideAdvance, once armed, fails the commands that fail picks in the
// first pipeline that runs advance.lua, and sends the others; and then
// again in the next again pipelines that hold any of them (the post's
// sending them again). They fail with err, or a plain error for nil (one
// resendFailed waits out, as it would a lost connection).
type failBesideAdvance struct {
	fail   func(redis.Cmder) bool
	err    error
	again  int64
	armed  atomic.Bool
	left   atomic.Int64 // pipelines still to fail after the first
	failed atomic.Int64
}

func (h *failBesideAdvance) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failBesideAdvance) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *failBesideAdvance) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		switch {
		case runsScript(cmds, advanceScript, luatext.Compact(advanceSource)) && h.armed.CompareAndSwap(true, false):
			h.left.Store(h.again)
		case slices.ContainsFunc(cmds, h.fail) && h.left.Add(-1) >= 0:
		default:
			return next(ctx, cmds)
		}
		var sent, refused []redis.Cmder
		for _, c := range cmds {
			if h.fail(c) {
				refused = append(refused, c)
			} else {
				sent = append(sent, c)
			}
		}
		if len(sent) > 0 {
			_ = next(ctx, sent)
		}
		err := cmp.Or(h.err, errors.New("refused by the test"))
		for _, c := range refused {
			c.SetErr(err)
		}
		h.failed.Add(int64(len(refused)))
		return err
	}
}

// answerErr is an answer of Redis that does not pass (see passing), as
// "OOM command not allowed when used memory > 'maxmemory'." would not.
type answerErr string

func (e answerErr) Error() string { return string(e) }
func (answerErr) RedisError()     {}

// A command failed beside the job's move, in the post's last round trip,
// is sent again at once, which no job would do (the job has moved on), and
// then while what it met may pass: after pauses, a few times. An answer
// that would come again is sent again once, then logged as an error.
func TestPostSendsAgainWhileTheFailurePasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		err      error
		again    int64
		want     int64 // commands failed
		reaching bool
	}{
		{"at once", nil, 0, 1, true},
		{"a lost connection", nil, 3, 4, true},
		{"an answer", answerErr("OOM command not allowed when used memory > 'maxmemory'."), 100, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logged testio.Buffer
			s, rdb := newService(t, Options{JobClaimIdle: time.Hour, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			author := signUp(t, s, "author")
			fans := followersOf(t, s, "author", 2)
			post(t, s, author.ID, "loads the scripts")
			failing := &failBesideAdvance{err: tc.err, again: tc.again, fail: func(c redis.Cmder) bool {
				if redistest.OnCluster() {
					return c.Name() == "exists"
				}
				return runsScript([]redis.Cmder{c}, pushScript, pushText)
			}}
			rdb.AddHook(failing)
			s.afterWrite = func() { failing.armed.Store(true) }
			st := post(t, s, author.ID, "pushed again")
			if n := failing.failed.Load(); n != tc.want {
				t.Errorf("%d commands failed, want %d", n, tc.want)
			}
			log := logged.String()
			if tc.reaching && (strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN")) {
				t.Errorf("logged %q, want nothing", log)
			}
			if !tc.reaching && !strings.Contains(log, "level=ERROR msg=\"could not finish a post once its job moved on\"") {
				t.Errorf("logged %q, want the post's failure", log)
			}
			if n := jobsLeft(t, ctxT(t), rdb, s.keys); n != 0 {
				t.Errorf("%d jobs left", n)
			}
			if !tc.reaching || redistest.OnCluster() {
				return // on a cluster the command failed is a look, which reaches no one
			}
			for _, f := range fans {
				if got := homeIDs(t, s, f.ID); !slices.Contains(got, st.ID) {
					t.Errorf("%s's home %v lacks status %d", f.Login, got, st.ID)
				}
			}
		})
	}
}

// A pulled author's post queues its jobs, then writes its status, then
// marks the jobs ready. Once they are queued it answers its status, though
// its instance dies then, and a worker writes it.
func TestPulledPostAnsweredOnceQueued(t *testing.T) {
	t.Parallel()
	survivor, dying, rdb, _ := instances(t, 500*time.Millisecond)
	ctx := ctxT(t)
	author := signUp(t, survivor, "author")
	followersOf(t, survivor, "author", 2)
	if err := rdb.ZAdd(ctx, survivor.keys.pulledAuthors(), redis.Z{Score: 1, Member: itoa(author.ID)}).Err(); err != nil {
		t.Fatal(err)
	}
	death := &deathAt{at: func(first string) bool { return strings.HasPrefix(first, "hset "+survivor.keys.statusPrefix()) }}
	st, err := dying.Post(context.WithValue(ctx, deathKey{}, death), author.ID, "queued, then died")
	if err != nil {
		t.Fatalf("a pulled post that died writing its status, its jobs queued, answered %v, want its status", err)
	}
	death.mu.Lock()
	dead := death.dead
	death.mu.Unlock()
	if !dead {
		t.Fatal("the post did not die writing its status")
	}
	startWorker(t, survivor, "survivor")
	waitJobsDone(t, survivor)
	if got := zsetIDs(t, survivor, survivor.keys.profile(author.ID)); !slices.Equal(got, []int64{st.ID}) {
		t.Errorf("the author's profile %v, want %d", got, st.ID)
	}
}

// A post whose lists' job Redis refused as it queued the home job (on a
// cluster, where the two are not queued in one transaction) queues it
// again, and answers its status, left to its jobs: the lists get it too.
func TestPostQueuesAgainAJobRefusedBesideTheOther(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{JobClaimIdle: 500 * time.Millisecond})
	author := signUp(t, s, "author")
	fan := signUp(t, s, "fan")
	follow(t, s, fan.ID, "author")
	list := createList(t, s, fan.ID, "watched")
	addMember(t, s, fan.ID, list.ID, "author")
	refusing := &refuseListJob{}
	rdb.AddHook(refusing)
	st, err := s.Post(ctxT(t), author.ID, "lists too")
	if err != nil {
		t.Fatalf("a post whose home job was queued answered %v, want its status", err)
	}
	if !refusing.refused.Load() {
		t.Fatal("no lists' job was refused")
	}
	startWorker(t, s, "worker")
	waitJobsDone(t, s)
	if got := listTimelineIDs(t, s, list.ID); !slices.Contains(got, st.ID) {
		t.Errorf("the list's timeline %v lacks status %d", got, st.ID)
	}
	if got := homeIDs(t, s, fan.ID); !slices.Contains(got, st.ID) {
		t.Errorf("the fan's home %v lacks status %d", got, st.ID)
	}
}

// refuseListJob fails the first command that queues a lists' post job, and
// sends the rest of its pipeline.
type refuseListJob struct{ refused atomic.Bool }

func (h *refuseListJob) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *refuseListJob) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *refuseListJob) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		i := slices.IndexFunc(cmds, func(c redis.Cmder) bool {
			args := c.Args()
			return runsScript([]redis.Cmder{c}, queueJobScript, luatext.Compact(queueJobSource)) &&
				len(args) > 4 && strings.Contains(fmt.Sprint(args[4]), "job:lists:post:")
		})
		if i < 0 || !h.refused.CompareAndSwap(false, true) {
			return next(ctx, cmds)
		}
		refused := cmds[i]
		_ = next(ctx, slices.Delete(slices.Clone(cmds), i, i+1))
		err := errors.New("refused by the test")
		refused.SetErr(err)
		return err
	}
}

// A post whose read of its page's activity failed, its job queued, reads
// it again and goes on in place: on a cluster in its second round trip,
// on one Redis where the frames call ran again after the transaction (a
// Redis that lost its scripts), which leaves the activity to a round trip
// of its own. Its followers have the status once it is answered, with no
// worker to take its job over.
func TestPostReadsItsPagesActivityAgain(t *testing.T) {
	t.Parallel()
	var logged testio.Buffer
	opts := Options{JobClaimIdle: time.Hour, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	var s *Service
	var rdb redis.UniversalClient
	if redistest.OnCluster() {
		s, rdb = newService(t, opts)
	} else {
		s, rdb = newPrivateService(t, opts) // its scripts flushed below
	}
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected"
	author := signUp(t, s, "author")
	fans := followersOf(t, s, "author", 2)
	post(t, s, author.ID, "loads the scripts")
	if !redistest.OnCluster() {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	failing := &failOnce{fail: func(c redis.Cmder) bool {
		args := c.Args()
		return c.Name() == "zmscore" && len(args) > 1 && args[1] == s.keys.seen()
	}}
	rdb.AddHook(failing)
	st := post(t, s, author.ID, "its page's activity read again")
	if !failing.fired.Load() {
		t.Fatal("no read of the page's activity failed")
	}
	for _, f := range fans {
		if got := homeIDs(t, s, f.ID); !slices.Contains(got, st.ID) {
			t.Errorf("%s's home %v lacks status %d", f.Login, got, st.ID)
		}
	}
	if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
		t.Errorf("%d jobs left", n)
	}
	if log := logged.String(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") {
		t.Errorf("logged %q, want nothing", log)
	}
}

// failOnce fails, with a plain error (as a lost connection), the commands
// that fail picks in the first pipeline that holds any, and sends the
// others.
type failOnce struct {
	fail  func(redis.Cmder) bool
	fired atomic.Bool
}

func (h *failOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *failOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, h.fail) || !h.fired.CompareAndSwap(false, true) {
			return next(ctx, cmds)
		}
		var sent []redis.Cmder
		err := errors.New("refused by the test")
		for _, c := range cmds {
			if h.fail(c) {
				c.SetErr(err)
			} else {
				sent = append(sent, c)
			}
		}
		if len(sent) > 0 {
			_ = next(ctx, sent)
		}
		return err
	}
}
