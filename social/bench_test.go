package social

import (
	"context"
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// seedFollowers gives uid n followers directly in Redis (no sign-ups: the
// fan-out reads only the followers set and writes home timelines).
func seedFollowers(b *testing.B, s *Service, uid int64, n int) {
	b.Helper()
	ctx := context.Background()
	pipe := s.rdb.Pipeline()
	for i := range n {
		f := int64(1_000_000 + i)
		pipe.ZAdd(ctx, s.keys.followers(uid), redisZ(float64(i+1), itoa(f)))
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
				job := s.keys.job(postJobID(st.ID))
				for {
					res, err := s.pass(ctx, job)
					if err != nil {
						b.Fatal(err)
					}
					if res.finished {
						break
					}
				}
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
