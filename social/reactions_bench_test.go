package social

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// seedBareUsers writes n bare user hashes, uids first to first+n-1: all a like
// or a repost reads of its user.
func seedBareUsers(b *testing.B, s *Service, first int64, n int) {
	b.Helper()
	ctx := context.Background()
	pipe := s.rdb.Pipeline()
	for i := range int64(n) {
		uid := first + i
		pipe.HSet(ctx, s.keys.user(uid), "id", uid, "login", fmt.Sprintf("u%d", uid), "name", "U")
		if i%1000 == 999 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLike measures a new like of one status by a user who had not
// liked it (its notification stored), and an unlike of it: per like or
// unlike, the Redis commands and the time Redis spent running them (INFO
// commandstats: a script's own commands count twice, in the script and
// on their own) and Redis's CPU time (INFO cpu: reading and answering
// them too).
func BenchmarkLike(b *testing.B) {
	for _, undo := range []bool{false, true} {
		name := "like"
		if undo {
			name = "unlike"
		}
		b.Run(name, func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			author := signUp(b, s, "author")
			st := post(b, s, author.ID, "liked a lot")
			const first = 1_000_000
			seedBareUsers(b, s, first, b.N)
			if undo {
				for i := range int64(b.N) {
					if _, err := s.Like(ctx, first+i, st.ID); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			cpu := redisCPU(b, rdb)
			b.ResetTimer()
			for i := range int64(b.N) {
				act := s.Like
				if undo {
					act = s.Unlike
				}
				if _, err := act(ctx, first+i, st.ID); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu = redisCPU(b, rdb) - cpu
			calls, usec := redisCost(b, rdb)
			b.ReportMetric(float64(calls)/float64(b.N), "redis-cmds/op")
			b.ReportMetric(float64(usec)/float64(b.N), "redis-us/op")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "redis-cpu-us/op")
		})
	}
}

// BenchmarkRepostFanout measures a repost by a user with 10,000 followers
// against a post by them, each until every follower's home timeline holds
// it (the first pass in line, the rest run as a worker would): per repost
// or post, the Redis commands, Redis's time running them and its CPU time,
// as BenchmarkLike. Each repost is
// of a new status by another author with no followers, posted (not
// counted) before it.
func BenchmarkRepostFanout(b *testing.B) {
	const followers = 10_000
	for _, c := range []struct {
		name            string
		repost, cluster bool
	}{
		{"post", false, false},
		{"repost", true, false},
		// Keys laid out as on a cluster, on one Redis: one script call a
		// follower, as a cluster runs them.
		{"repost,call-a-follower", true, true},
	} {
		repost := c.repost
		b.Run(fmt.Sprintf("%s/followers=%d", c.name, followers), func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			s.keys.cluster = c.cluster
			ctx := context.Background()
			author := signUp(b, s, "author")
			other := signUp(b, s, "other")
			seedFollowers(b, s, author.ID, followers)
			var calls, usec int64
			var cpu time.Duration
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				var orig Status
				if repost {
					orig = post(b, s, other.ID, "worth reposting")
				}
				if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				before := redisCPU(b, rdb)
				b.StartTimer()
				var sid int64
				if repost {
					if _, err := s.Repost(ctx, author.ID, orig.ID); err != nil {
						b.Fatal(err)
					}
					sid = orig.ID + 1
				} else {
					st, err := s.Post(ctx, author.ID, "benchmark status")
					if err != nil {
						b.Fatal(err)
					}
					sid = st.ID
				}
				runJob(b, s, s.keys.job(postJobID(sid)))
				b.StopTimer()
				cpu += redisCPU(b, rdb) - before
				c, u := redisCost(b, rdb)
				calls, usec = calls+c, usec+u
				b.StartTimer()
			}
			b.StopTimer()
			if n, _ := rdb.ZCard(ctx, s.keys.home(1_000_000+followers-1)).Result(); n == 0 {
				b.Fatal("the last follower's home timeline is empty")
			}
			b.ReportMetric(float64(calls)/float64(b.N), "redis-cmds/op")
			b.ReportMetric(float64(usec)/float64(b.N)/1000, "redis-ms/op")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "redis-cpu-ms/op")
		})
	}
}
