package social

import (
	"bufio"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// newPrivateService returns a service on a redis-server of the test's own,
// whose command counts only the test moves.
func newPrivateService(tb testing.TB, opts Options) (*Service, *redis.Client) {
	tb.Helper()
	srv := redistest.Start(tb)
	rdb := redistest.ClientOf(tb, srv.URL)
	opts.Prefix = "p:"
	opts.BcryptCost = 4
	return New(rdb, opts), rdb
}

// newPrivateBackend is newService on a Redis of the test's own, of the
// backend's kind (one Redis, or a cluster of three masters): for a test
// that flushes the scripts, which on the shared one would cost the tests
// running beside it (those of other packages too, which go test runs at
// once) a round trip they count.
func newPrivateBackend(tb testing.TB, opts Options) (*Service, redis.UniversalClient) {
	tb.Helper()
	if !redistest.OnCluster() {
		return newPrivateService(tb, opts)
	}
	c := redistest.StartCluster(tb, 3, 0)
	rdb := redistest.ClusterClientOf(tb, c.Addrs())
	opts.Prefix = "p:"
	opts.BcryptCost = 4
	opts.HashWait = time.Minute // as newService
	return New(rdb, opts), rdb
}

// commandCalls returns how many times each command ran since the last
// CONFIG RESETSTAT, by lower-case name, commands run by scripts included.
func commandCalls(tb testing.TB, rdb *redis.Client) map[string]int64 {
	tb.Helper()
	info, err := rdb.Info(ctxT(tb), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	calls := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, stats, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(stats, ",")
		calls[name], _ = strconv.ParseInt(n, 10, 64)
	}
	return calls
}

func resetStats(tb testing.TB, rdb *redis.Client) {
	tb.Helper()
	if err := rdb.ConfigResetStat(ctxT(tb)).Err(); err != nil {
		tb.Fatal(err)
	}
}

// refillWorld is a reader who follows `followees` seeded users (statuses
// only, no accounts) and one real user, "gone", about to be unfollowed.
type refillWorld struct {
	reader    User
	followees []int64
	owner     map[int64]int64 // status id -> author uid
	gone      User
}

const refillFollowees, refillStatuses = 50, 1000

// seedRefill builds a refillWorld in which every followee has 1000
// statuses, owner says who wrote each status id, and the reader's home
// timeline holds the newest HomeSize of them all, as fan-out leaves it.
func seedRefill(tb testing.TB, s *Service, ids func(i, k int) int64, goneIDs []int64) refillWorld {
	tb.Helper()
	ctx := ctxT(tb)
	w := refillWorld{owner: map[int64]int64{}}
	w.reader = signUp(tb, s, "reader")
	w.gone = signUp(tb, s, "gone")
	pipe := s.rdb.Pipeline()
	for i := range refillFollowees {
		f := int64(2_000_000 + i)
		w.followees = append(w.followees, f)
		pipe.ZAdd(ctx, s.keys.following(w.reader.ID), redisZ(float64(i+1), itoa(f)))
		for k := range refillStatuses {
			id := ids(i, k)
			w.owner[id] = f
			pipe.ZAdd(ctx, s.keys.profile(f), redisZ(float64(id), itoa(id)))
			pipe.HSet(ctx, s.keys.status(id), "id", id) // copies keep only statuses that exist
		}
		if _, err := pipe.Exec(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	for _, id := range goneIDs {
		w.owner[id] = w.gone.ID
		pipe.ZAdd(ctx, s.keys.profile(w.gone.ID), redisZ(float64(id), itoa(id)))
		pipe.HSet(ctx, s.keys.status(id), "id", id)
	}
	pipe.Set(ctx, s.keys.followSeq(), refillFollowees, 0)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
	if _, _, err := s.Follow(ctx, w.reader.ID, "gone"); err != nil {
		tb.Fatal(err)
	}
	w.resetHome(tb, s)
	return w
}

// resetHome puts the newest HomeSize statuses of everyone the reader
// follows into the reader's home timeline, and nothing else.
func (w refillWorld) resetHome(tb testing.TB, s *Service) {
	tb.Helper()
	ctx := ctxT(tb)
	home := s.keys.home(w.reader.ID)
	pipe := s.rdb.TxPipeline()
	pipe.Del(ctx, home)
	for _, id := range w.newest(s.opts.HomeSize, true) {
		pipe.ZAdd(ctx, home, redisZ(float64(id), itoa(id)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
}

// newest returns the n newest status ids, with or without those of "gone",
// in ascending order.
func (w refillWorld) newest(n int, withGone bool) []int64 {
	var all []int64
	for id, by := range w.owner {
		if withGone || by != w.gone.ID {
			all = append(all, id)
		}
	}
	slices.Sort(all)
	return all[max(0, len(all)-n):]
}

func homeIDs(tb testing.TB, s *Service, uid int64) []int64 {
	tb.Helper()
	return zsetIDs(tb, s, s.keys.home(uid))
}

// runJob runs passes of the job at key until it finishes, and returns what
// each pass did.
func runJob(tb testing.TB, s *Service, key string) []passResult {
	tb.Helper()
	var passes []passResult
	for {
		res, err := s.pass(context.Background(), key)
		if err != nil {
			tb.Fatal(err)
		}
		passes = append(passes, res)
		if res.finished {
			return passes
		}
		if len(passes) > 10_000 {
			tb.Fatal("the job did not finish in 10,000 passes")
		}
	}
}

// Layouts of statuses for refill tests: which ids the 50 followees wrote,
// and which "gone" wrote.
var refillLayouts = []struct {
	name    string
	ids     func(i, k int) int64
	goneIDs []int64
}{{
	// "gone" wrote the 1000 newest: the home timeline is empty after the
	// unfollow, and the refill has no floor.
	name:    "home emptied",
	ids:     func(i, k int) int64 { return int64(1 + k*refillFollowees + i) },
	goneIDs: idRange(refillFollowees*refillStatuses+1, 1000, func(int) bool { return true }),
}, {
	// Among the 1000 newest, "gone" wrote 3 in 5: 400 remain after the
	// unfollow, and the refill copies from below the lowest of them.
	name: "home partly kept",
	ids: func(i, k int) int64 {
		if k < 992 {
			return int64(1 + k*refillFollowees + i)
		}
		// The 8 newest of each followee are the top range's positions
		// p with p%5 >= 3, dealt out in turn.
		n := (k-992)*refillFollowees + i // 0..399
		p := n/2*5 + 3 + n%2
		return int64(992*refillFollowees + 1 + p)
	},
	goneIDs: idRange(992*refillFollowees+1, 1000, func(p int) bool { return p%5 < 3 }),
}}

func idRange(first, n int, keep func(p int) bool) []int64 {
	var ids []int64
	for p := range n {
		if keep(p) {
			ids = append(ids, int64(first+p))
		}
	}
	return ids
}

// After an unfollow leaves the home timeline short, refill passes copy no
// more than RefillPassStatuses each, and the home timeline ends holding
// exactly the newest HomeSize statuses of those still followed.
func TestRefillPassesAreBounded(t *testing.T) {
	t.Parallel()
	for _, layout := range refillLayouts {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			w := seedRefill(t, s, layout.ids, layout.goneIDs)
			if _, err := s.Unfollow(ctx, w.reader.ID, "gone"); err != nil {
				t.Fatal(err)
			}
			job := s.keys.job(refillJobID(w.reader.ID))
			if rdb.Exists(ctx, job).Val() != 1 {
				t.Fatal("the unfollow queued no refill job")
			}
			passes := runJob(t, s, job)
			var total int64
			for i, p := range passes {
				total += p.copied
				if p.copied > int64(s.opts.RefillPassStatuses) {
					t.Errorf("pass %d copied %d statuses, want at most %d", i, p.copied, s.opts.RefillPassStatuses)
				}
				if p.reached > int64(s.opts.RefillStep) {
					t.Errorf("pass %d looked at %d followees, want at most %d", i, p.reached, s.opts.RefillStep)
				}
			}
			t.Logf("%d passes copied %d statuses", len(passes), total)
			if got, want := homeIDs(t, s, w.reader.ID), w.newest(s.opts.HomeSize, false); !slices.Equal(got, want) {
				t.Fatalf("home holds %d statuses (%v...), want the newest %d of those followed (%v...)",
					len(got), got[:min(3, len(got))], len(want), want[:3])
			}
			if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
				t.Fatalf("job stream holds %d entries after the refill, want 0", n)
			}
		})
	}
}

// A refill pass that finds the home timeline full and nothing newer than
// its lowest below the floor reads one range per followee and copies
// nothing.
func TestRefillPassOverFullHomeCopiesNothing(t *testing.T) {
	t.Parallel()
	// A refill mark above the home size queues a refill on every unfollow.
	s, rdb := newPrivateService(t, Options{RefillBelow: DefaultHomeSize + 1})
	ctx := ctxT(t)
	// "gone" wrote only statuses older than any in the home timeline.
	w := seedRefill(t, s, func(i, k int) int64 { return int64(10_000 + k*refillFollowees + i) }, idRange(1, 100, func(int) bool { return true }))
	if _, err := s.Unfollow(ctx, w.reader.ID, "gone"); err != nil {
		t.Fatal(err)
	}
	before := homeIDs(t, s, w.reader.ID)
	resetStats(t, rdb)
	passes := runJob(t, s, s.keys.job(refillJobID(w.reader.ID)))
	calls := commandCalls(t, rdb)
	if len(passes) != 1 || passes[0].copied != 0 {
		t.Errorf("passes: %+v, want one that copied nothing", passes)
	}
	if calls["zadd"] != 0 {
		t.Errorf("%d ZADD, want none", calls["zadd"])
	}
	if calls["zrevrangebyscore"] != refillFollowees {
		t.Errorf("%d range reads of profiles, want one per followee (%d)", calls["zrevrangebyscore"], refillFollowees)
	}
	if after := homeIDs(t, s, w.reader.ID); !slices.Equal(before, after) {
		t.Error("the home timeline changed")
	}
}

// Following someone copies at most HomeSize of their statuses, and into a
// full home timeline only those newer than its lowest.
func TestFollowBackfill(t *testing.T) {
	t.Parallel()
	const homeSize = 100
	s, rdb := newPrivateService(t, Options{HomeSize: homeSize})
	ctx := ctxT(t)
	reader := signUp(t, s, "reader")
	author := signUp(t, s, "author")
	seed := func(key string, ids ...int64) {
		for _, id := range ids {
			rdb.ZAdd(ctx, key, redisZ(float64(id), itoa(id)))
		}
	}
	// The author's statuses exist: a copy takes out again those that do
	// not, as deleted meanwhile.
	seedProfile := func(ids ...int64) {
		seed(s.keys.profile(author.ID), ids...)
		for _, id := range ids {
			rdb.HSet(ctx, s.keys.status(id), "id", id)
		}
	}
	// The home timeline is full with ids 1001..1100; the author wrote
	// 1..500, older than all of it.
	home := s.keys.home(reader.ID)
	seed(home, idRange(1001, homeSize, func(int) bool { return true })...)
	seedProfile(idRange(1, 500, func(int) bool { return true })...)
	resetStats(t, rdb)
	if _, _, err := s.Follow(ctx, reader.ID, "author"); err != nil {
		t.Fatal(err)
	}
	calls := commandCalls(t, rdb)
	// The follow itself adds to the following and followers sets, the
	// ranking and the followee's notifications; no status is
	// older-but-kept, so none is copied.
	if calls["zadd"] != 4 {
		t.Errorf("%d ZADD following a user with only older statuses into a full home, want 4 (the follow sets, the ranking, the notification)", calls["zadd"])
	}
	if got := homeIDs(t, s, reader.ID); len(got) != homeSize || got[0] != 1001 {
		t.Errorf("home = %d statuses from %v, want the same %d from 1001", len(got), got[:1], homeSize)
	}

	// Newer statuses do come in (the author writes the odd ids 1051..1249),
	// and the home keeps its newest.
	if _, err := s.Unfollow(ctx, reader.ID, "author"); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, s.keys.jobs(), s.keys.job(refillJobID(reader.ID)))
	seed(home, idRange(1001, homeSize, func(int) bool { return true })...)
	seedProfile(idRange(1051, 200, func(p int) bool { return p%2 == 0 })...) // 1051, 1053, ... 1249
	if _, _, err := s.Follow(ctx, reader.ID, "author"); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for id := int64(1001); id <= 1100; id++ {
		want = append(want, id)
	}
	for id := int64(1101); id <= 1249; id += 2 {
		want = append(want, id)
	}
	want = want[len(want)-homeSize:]
	if got := homeIDs(t, s, reader.ID); !slices.Equal(got, want) {
		t.Errorf("home after following a user with newer statuses = %v, want %v", got, want)
	}
}
