package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// seedFollowers gives uid n followers directly in Redis (no sign-ups: the
// fan-out reads only the two sides of each follow and writes home
// timelines), with the uids from 1,000,000 on.
func seedFollowers(b *testing.B, s *Service, uid int64, n int) {
	b.Helper()
	seedFollowersFrom(b, s, uid, 1_000_000, n)
}

// seedFollowersFrom gives uid n followers, with the uids from first on.
func seedFollowersFrom(b *testing.B, s *Service, uid, first int64, n int) {
	b.Helper()
	ctx := context.Background()
	pipe := s.rdb.Pipeline()
	for i := range n {
		f := first + int64(i)
		pipe.ZAdd(ctx, s.keys.followers(uid), redisZ(float64(i+1), itoa(f)))
		pipe.ZAdd(ctx, s.keys.following(f), redisZ(float64(i+1), itoa(uid)))
		if i%1000 == 999 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	pipe.Set(ctx, s.keys.followSeq(), n, 0)
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// fillHomes fills the home timelines of the n users from first on with
// size entries each (ids -1 to -size, older than any status), as a site's
// readers' are.
func fillHomes(b *testing.B, s *Service, first int64, n, size int) {
	b.Helper()
	ctx := context.Background()
	members := make([]redis.Z, size)
	for i := range members {
		members[i] = redisZ(float64(-i-1), itoa(int64(-i-1)))
	}
	pipe := s.rdb.Pipeline()
	for i := range n {
		pipe.ZAdd(ctx, s.keys.home(first+int64(i)), members...)
		if i%100 == 99 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPost measures posting a status until every follower's home
// timeline holds it: the post script, then every fan-out pass run in line.
func BenchmarkPost(b *testing.B) {
	for _, n := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("followers=%d", n), func(b *testing.B) {
			s, rdb := newService(b, Options{})
			ctx := context.Background()
			author := signUp(b, s, "author")
			seedFollowers(b, s, author.ID, n)
			b.ResetTimer()
			for b.Loop() {
				st, err := s.Post(ctx, author.ID, "benchmark status")
				if err != nil {
					b.Fatal(err)
				}
				runJob(b, s, s.keys.job(postJobID(st.ID)))
			}
			b.StopTimer()
			if n > 0 {
				last := itoa(int64(1_000_000 + n - 1))
				if c, _ := rdb.ZCard(ctx, s.keys.homePrefix()+last).Result(); c == 0 {
					b.Fatal("the last follower's home timeline is empty")
				}
			}
			rdb.Del(ctx, s.keys.jobs())
		})
	}
}

// BenchmarkHomeTimeline measures reading one page of 30 from a full home
// timeline.
func BenchmarkHomeTimeline(b *testing.B) {
	s, _ := newService(b, Options{})
	ctx := context.Background()
	author := signUp(b, s, "author")
	for i := range 100 {
		if _, err := s.Post(ctx, author.ID, fmt.Sprintf("status %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		page, err := s.HomeTimeline(ctx, author.ID, Cursor{Limit: 30})
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Statuses) != 30 {
			b.Fatalf("page of %d", len(page.Statuses))
		}
	}
}

//go:embed testdata/fanout_pass_unbounded.lua
var unboundedPassSource string

// BenchmarkRefillPass measures the refill job an unfollow queues for a reader
// who still follows 50 users of 1000 statuses each: the whole job per op (as
// Go sees it, round trips included), and its passes: how many, and the
// longest and the average time Redis spent running one (from its slow log,
// which is what blocks every other client). "unbounded" runs the pass script
// as it was before passes were bounded by RefillPassStatuses and by the home
// timeline's floor, for comparison.
func BenchmarkRefillPass(b *testing.B) {
	for _, script := range []struct {
		name   string
		script *redis.Script
	}{
		{"unbounded", redis.NewScript(unboundedPassSource)},
		{"bounded", passScript},
	} {
		for _, layout := range refillLayouts {
			b.Run(script.name+"/"+layout.name, func(b *testing.B) {
				s, rdb := newPrivateService(b, Options{})
				ctx := context.Background()
				w := seedRefill(b, s, layout.ids, layout.goneIDs)
				job := s.keys.job(refillJobID(w.reader.ID))
				if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
					b.Fatal(err)
				}
				rdb.ConfigSet(ctx, "slowlog-max-len", "100000")
				if err := script.script.Load(ctx, rdb).Err(); err != nil { // no NOSCRIPT round in the log
					b.Fatal(err)
				}
				var passes, copied int64
				var longest, total time.Duration
				for b.Loop() {
					b.StopTimer()
					if _, _, err := s.Follow(ctx, w.reader.ID, "gone"); err != nil {
						b.Fatal(err)
					}
					w.resetHome(b, s)
					if _, err := s.Unfollow(ctx, w.reader.ID, "gone"); err != nil {
						b.Fatal(err)
					}
					rdb.SlowLogReset(ctx)
					b.StartTimer()
					for {
						res, err := script.script.Run(ctx, rdb, []string{job, s.keys.jobs()}, s.passArgs()...).Int64Slice()
						if err != nil {
							b.Fatal(err)
						}
						if len(res) > 2 {
							copied += res[2]
						}
						if res[0] == 1 {
							break
						}
					}
					b.StopTimer()
					log, err := rdb.SlowLogGet(ctx, -1).Result()
					if err != nil {
						b.Fatal(err)
					}
					for _, e := range log {
						if len(e.Args) > 0 && (e.Args[0] == "evalsha" || e.Args[0] == "eval") {
							passes++
							total += e.Duration
							longest = max(longest, e.Duration)
						}
					}
					b.StartTimer()
				}
				b.StopTimer()
				if got, want := homeIDs(b, s, w.reader.ID), w.newest(s.opts.HomeSize, false); len(got) != len(want) || got[0] != want[0] {
					b.Fatalf("home holds %d statuses from %d, want %d from %d", len(got), got[0], len(want), want[0])
				}
				b.ReportMetric(float64(passes)/float64(b.N), "passes/op")
				b.ReportMetric(float64(longest.Microseconds())/1000, "longest-pass-ms")
				b.ReportMetric(float64(total.Microseconds())/1000/float64(passes), "avg-pass-ms")
				if copied > 0 {
					b.ReportMetric(float64(copied)/float64(b.N), "copied/op")
				}
			})
		}
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

//go:embed testdata/fanout_pass_lua_post.lua
var luaPostPassSource string

// BenchmarkFanout measures the fan-out's insert rate, and the CPU time
// Redis spends per insert (which bounds the rate once the clients are on
// other machines): posts by `jobs`
// authors of 10,000 followers each, fanned out at once (as the workers of
// several instances would), every pass run until each job is done. "lua"
// runs a post job's passes as they were, inside the pass script (a ZADD, a
// trim and a PUBLISH per follower); "multi" as they are, read by a script
// and written in one MULTI/EXEC (a ZADD per follower, a trim one time in
// 16, a PUBLISH to those connected: here one in ten). Compare inserts/s with
// BenchmarkZAddPipelined, Redis's own limit on the same machine.
func BenchmarkFanout(b *testing.B) {
	const followers = 10_000
	const homeFill = 200 // past 128, Redis keeps a sorted set as a skiplist, as a full home is
	luaPass := redis.NewScript(luaPostPassSource)
	// lua: the old pass script, on one Redis; multi: the passes as they
	// are (pipelines, no longer MULTI), on one Redis; cluster: the same on
	// a Redis Cluster of three masters of the benchmark's own.
	for _, impl := range []string{"lua", "multi", "cluster"} {
		for _, jobs := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/jobs=%d", impl, jobs), func(b *testing.B) {
				var s *Service
				var rdb redis.UniversalClient
				if impl == "cluster" {
					c := redistest.StartCluster(b, 3, 0)
					rdb = redistest.ClusterClientOf(b, c.Addrs())
					s = New(rdb, Options{Prefix: "p:", BcryptCost: 4})
				} else {
					s, rdb = newPrivateService(b, Options{})
				}
				ctx := context.Background()
				authors := make([]User, jobs)
				connected := s.keys.prefix + "connected"
				s.opts.ConnectedKey = connected
				for i := range authors {
					authors[i] = signUp(b, s, fmt.Sprintf("author%d", i))
					first := int64(1_000_000 + i*followers)
					seedFollowersFrom(b, s, authors[i].ID, first, followers)
					fillHomes(b, s, first, followers, homeFill)
					for f := first; f < first+followers; f += 10 {
						rdb.ZAdd(ctx, connected, redisZ(1, itoa(f)))
					}
				}
				run := func(job string) error {
					if impl == "lua" {
						// The Go passes read where a job stops on its first
						// pass; the old script read it from the job.
						if err := rdb.HSetNX(ctx, job, "until", "+inf").Err(); err != nil {
							return err
						}
					}
					for {
						var finished bool
						if impl == "lua" {
							res, err := luaPass.Run(ctx, rdb, []string{job, s.keys.jobs()}, s.passArgs()...).Int64Slice()
							if err != nil {
								return err
							}
							finished = res[0] == 1
						} else {
							res, err := s.pass(ctx, job)
							if err != nil {
								return err
							}
							finished = res.finished
						}
						if finished {
							return nil
						}
					}
				}
				cpu := redisCPU(b, rdb)
				b.ResetTimer()
				for b.Loop() {
					// Every job is queued before the timer runs, so that
					// none runs while the next is queued.
					b.StopTimer()
					jobs := make([]string, len(authors))
					for i, a := range authors {
						job, err := queuedPost(ctx, s, a)
						if err != nil {
							b.Fatal(err)
						}
						jobs[i] = job
					}
					b.StartTimer()
					var wg sync.WaitGroup
					errs := make([]error, len(authors))
					for i, job := range jobs {
						wg.Go(func() { errs[i] = run(job) })
					}
					wg.Wait()
					if err := errors.Join(errs...); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				inserts := float64(jobs * followers * b.N)
				b.ReportMetric(inserts/b.Elapsed().Seconds(), "inserts/s")
				b.ReportMetric((redisCPU(b, rdb)-cpu).Seconds()*1e6/inserts, "redis-us/insert")
				last := int64(1_000_000 + jobs*followers - 1)
				if c, _ := rdb.ZCard(ctx, s.keys.home(last)).Result(); c <= homeFill {
					b.Fatal("the last follower's home timeline holds no new status")
				}
			})
		}
	}
}

// BenchmarkZAddPipelined measures Redis's own limit for the fan-out's
// writes: ZADDs of new members to sorted sets of 200 and more (as
// BenchmarkFanout's home timelines), in pipelines of 1,000, from 4 clients
// at once: the reference BenchmarkFanout's figures are compared with. Its
// shape is that of BenchmarkFanout's: sets=10000 the home timelines of one
// job's followers, sets=40000 those of four jobs' (a ZADD into the larger
// data set costs about a tenth more, its lookups missing the caches more).
func BenchmarkZAddPipelined(b *testing.B) {
	for _, sets := range []int64{10_000, 40_000} {
		b.Run(fmt.Sprintf("sets=%d", sets), func(b *testing.B) {
			_, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			fillZAddSets(b, rdb, sets)
			var n, round atomic.Int64
			b.SetParallelism(2) // 2 per core: 4 clients on 2 cores
			cpu := redisCPU(b, rdb)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// An op adds one new member to 10,000 of the sets, as
					// a post job pushes one status to 10,000 followers (so
					// that an op weighs what one of BenchmarkFanout's does
					// per job); a round adds it, newer than all, to 1,000
					// of them, as a pass adds one status to 1,000 home
					// timelines.
					for range 10 {
						r := round.Add(1)
						member := redisZ(float64(r), strconv.FormatInt(r, 10))
						pipe := rdb.Pipeline()
						for j := range int64(1000) {
							pipe.ZAdd(ctx, "z:"+strconv.FormatInt((r*1000+j)%sets, 10), member)
						}
						if _, err := pipe.Exec(ctx); err != nil {
							b.Error(err)
							return
						}
						n.Add(1000)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "zadds/s")
			b.ReportMetric((redisCPU(b, rdb)-cpu).Seconds()*1e6/float64(n.Load()), "redis-us/zadd")
		})
	}
}

// BenchmarkHomeInsertWays measures the Redis CPU of a status's ZADD into
// home timelines of 1,000 (2,000 of them, 100 a call, newer than all), made
// three ways: by redis.call in a script's loop, as push.lua makes them
// ("lua"); queued in MULTI/EXEC ("multi"); and in a plain pipeline
// ("pipeline").
func BenchmarkHomeInsertWays(b *testing.B) {
	const homes, size, per = 2000, 1000, 100
	const loop = `for i = 1, #KEYS do redis.call('ZADD', KEYS[i], ARGV[1], ARGV[1]) end return 1`
	for _, way := range []string{"lua", "multi", "pipeline"} {
		b.Run(way, func(b *testing.B) {
			_, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			keys := make([]string, homes)
			members := make([]redis.Z, size)
			for i := range members {
				members[i] = redisZ(float64(i), strconv.Itoa(i))
			}
			for h := range keys {
				keys[h] = "home:" + strconv.Itoa(h)
				if err := rdb.ZAdd(ctx, keys[h], members...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			script := redis.NewScript(loop)
			if err := script.Load(ctx, rdb).Err(); err != nil {
				b.Fatal(err)
			}
			sid, n := int64(size), 0
			cpu := redisCPU(b, rdb)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				sid++
				first := (i * per) % homes
				batch := keys[first : first+per]
				var err error
				switch way {
				case "lua":
					err = script.EvalSha(ctx, rdb, batch, sid).Err()
				default:
					pipe := rdb.Pipeline()
					if way == "multi" {
						pipe = rdb.TxPipeline()
					}
					for _, k := range batch {
						pipe.ZAdd(ctx, k, redisZ(float64(sid), strconv.FormatInt(sid, 10)))
					}
					_, err = pipe.Exec(ctx)
				}
				if err != nil {
					b.Fatal(err)
				}
				n += per
			}
			b.StopTimer()
			b.ReportMetric((redisCPU(b, rdb)-cpu).Seconds()*1e6/float64(n), "redis-us/zadd")
		})
	}
}

// fillZAddSets makes sets sorted sets of 200 members for
// BenchmarkZAddPipelined.
func fillZAddSets(b *testing.B, rdb *redis.Client, sets int64) {
	b.Helper()
	ctx := context.Background()
	members := make([]redis.Z, 200)
	for i := range members {
		members[i] = redisZ(float64(-i-1), "x"+strconv.Itoa(i))
	}
	pipe := rdb.Pipeline()
	for k := range sets {
		pipe.ZAdd(ctx, "z:"+strconv.FormatInt(k, 10), members...)
		if k%1000 == 999 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// redisCPU returns the CPU time the redis-server behind rdb has used.
func redisCPU(tb testing.TB, rdb redis.UniversalClient) time.Duration { return redistest.CPU(tb, rdb) }

// BenchmarkPostCost measures one post, until every pass of its fan-out has
// run, by an author of 100, 10,000 and 100,000 followers, half of whom were
// last seen a month ago: "push" pushes to every follower (no pull
// threshold, nobody inactive), "pull" has every author pulled, "hybrid" is
// the defaults (pulled from 10,000 followers; inactive after 7 days).
func BenchmarkPostCost(b *testing.B) {
	modes := []struct {
		name string
		opts Options
		pull bool // the author is pulled whatever their followers
	}{
		{"push", Options{PullThreshold: -1, InactiveAfter: -1}, false},
		{"pull", Options{}, true},
		{"hybrid", Options{}, false},
	}
	for _, n := range []int{100, 10_000, 100_000} {
		for _, m := range modes {
			b.Run(fmt.Sprintf("followers=%d/%s", n, m.name), func(b *testing.B) {
				s, rdb := newPrivateService(b, m.opts)
				ctx := context.Background()
				s.opts.ConnectedKey = s.keys.prefix + "connected"
				author := signUp(b, s, "author")
				seedFollowers(b, s, author.ID, n)
				now, err := s.now(ctx)
				if err != nil {
					b.Fatal(err)
				}
				pipe := rdb.Pipeline()
				for i := range n {
					seen := now
					if i%2 == 1 {
						seen = now.Add(-30 * 24 * time.Hour)
					}
					pipe.ZAdd(ctx, s.keys.seen(), redisZ(float64(seen.UnixMilli()), itoa(int64(1_000_000+i))))
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				if m.pull || (s.opts.PullThreshold > 0 && n >= s.opts.PullThreshold) {
					rdb.ZAdd(ctx, s.keys.pulledAuthors(), redisZ(1, itoa(author.ID)))
				}
				b.ResetTimer()
				for b.Loop() {
					job, err := queuedPost(ctx, s, author)
					if err != nil {
						b.Fatal(err)
					}
					if job != "" {
						runJob(b, s, job)
					}
				}
			})
		}
	}
}

// BenchmarkHomeRead measures reading the newest page of 20 of a home
// timeline, for a reader who follows 50 authors of 200 statuses each, 0, 5
// or all 50 of them pulled (0: all push; 50: all pull), and reports the
// 50th and 99th percentiles of one read.
func BenchmarkHomeRead(b *testing.B) {
	for _, pulled := range []int{0, 5, 50} {
		b.Run(fmt.Sprintf("pulled=%d", pulled), func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			reader := signUp(b, s, "reader")
			// Author a's i-th status has id i*50+a+1: the authors take turns,
			// as time would have them.
			pipe := rdb.Pipeline()
			for a := range 50 {
				author := int64(2_000_000 + a)
				for i := range 200 {
					id := int64(i*50 + a + 1)
					st := itoa(id)
					pipe.HSet(ctx, s.keys.status(id), "id", st, "uid", itoa(author), "login", "a"+itoa(author),
						"name", "Author", "message", "benchmark status", "posted", "1")
					pipe.ZAdd(ctx, s.keys.profile(author), redisZ(float64(id), st))
					if a >= pulled {
						pipe.ZAdd(ctx, s.keys.home(reader.ID), redisZ(float64(id), st))
					}
				}
				if a < pulled {
					pipe.ZAdd(ctx, s.keys.pulls(reader.ID), redisZ(float64(a+1), itoa(author)))
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 20})
				times = append(times, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Statuses) != 20 {
					b.Fatalf("page of %d", len(page.Statuses))
				}
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// The pass script as it was before the passes moved to Go, kept to measure
// the Lua passes against them.
var (
	// The Lua functions the old follow, post and pass scripts shared.
	//
	//go:embed testdata/fanout_pass_lua_shared.lua
	sharedSource string
	//go:embed testdata/fanout_pass_lua.lua
	passSource string
	passScript = redis.NewScript(sharedSource + passSource)
)

// oldChannelPrefix is what the old pass script put a uid after to name its
// channel: the bus's user channel on one Redis, where it ran.
func oldChannelPrefix(prefix string) string { return prefix + "events:user:" }

// passArgs are the old pass script's ARGV.
func (s *Service) passArgs() []any {
	k := s.keys
	return []any{
		s.opts.FanoutPassSize, s.opts.HomeSize, jobGroup,
		k.homePrefix(), k.followersPrefix(), k.followingPrefix(), k.profilePrefix(),
		k.statusPrefix(), oldChannelPrefix(s.opts.Prefix), s.opts.RefillStep, s.opts.RefillPassStatuses,
		k.pullsPrefix(), k.pulledAuthors(), k.statusSeq(),
		k.listsInPrefix(), k.listStatusesPrefix(),
	}
}

// queuedPost writes a status by author and queues its post job, ready, as
// a post does, without running any pass of it; it returns the job's key.
func queuedPost(ctx context.Context, s *Service, author User) (string, error) {
	job, _, err := queuedPostLists(ctx, s, author, false)
	return job, err
}

// queuedPostLists is queuedPost, with the lists' job too when toLists.
func queuedPostLists(ctx context.Context, s *Service, author User, toLists bool) (job, listJob string, err error) {
	pipe := s.rdb.Pipeline()
	sid := pipe.Incr(ctx, s.keys.statusSeq())
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return "", "", err
	}
	st := Status{ID: sid.Val(), UID: author.ID, Login: author.Login, Name: author.Name,
		Message: "benchmark status", Posted: now.Val().UTC(), Mentions: []protocol.Mention{}}
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: st})
	if err != nil {
		return "", "", err
	}
	job, listJob, err = s.queuePostJobs(ctx, st, place{}, payload, toLists)
	if err == nil && job == "" {
		err = fmt.Errorf("status %d left to its job (logged)", st.ID)
	}
	return job, listJob, err
}

// BenchmarkFollowBackfill measures a follow of an author of HomeSize
// statuses by a reader whose home is empty: the backfill copies them all,
// through homeFilter (which reads each status's reply and repost fields).
func BenchmarkFollowBackfill(b *testing.B) {
	s, _ := newPrivateService(b, Options{})
	ctx := context.Background()
	author, reader := signUp(b, s, "author"), signUp(b, s, "reader")
	for i := range s.opts.HomeSize {
		post(b, s, author.ID, fmt.Sprint("status ", i))
	}
	for b.Loop() {
		if _, _, err := s.Follow(ctx, reader.ID, "author"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := s.Unfollow(ctx, reader.ID, "author"); err != nil {
			b.Fatal(err)
		}
		runJobIfQueued(b, s, s.keys.job(refillJobID(reader.ID)))
		b.StartTimer()
	}
}
