package social

import (
	"context"
	"fmt"
	"testing"

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
					finished, _, err := s.pass(ctx, job)
					if err != nil {
						b.Fatal(err)
					}
					if finished {
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

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
