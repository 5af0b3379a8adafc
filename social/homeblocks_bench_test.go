package social

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkHomeReadBlocks measures the Redis CPU of a home page read as
// GET /timelines/home makes it (HomeTimeline, 30 statuses, then Decorate
// for the reader), by a reader who follows 50 authors with 1,000 statuses
// in their home, blocking none and blocking 10,000 accounts (none of the
// 50: the page stays full), on a redis-server of its own.
func BenchmarkHomeReadBlocks(b *testing.B) {
	ctx := context.Background()
	for _, blocks := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("blocks-%d", blocks), func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			reader := signUp(b, s, "reader")
			for a := range 50 {
				author := signUp(b, s, fmt.Sprintf("author%02d", a))
				follow(b, s, reader.ID, author.Login)
				for range 20 {
					post(b, s, author.ID, "benchmark status")
				}
			}
			if blocks > 0 {
				zs := make([]redis.Z, blocks)
				for i := range zs {
					zs[i] = redisZ(1, itoa(int64(10_000_000+i)))
				}
				if err := rdb.ZAdd(ctx, s.keys.blocks(reader.ID), zs...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			cpu := redisCPU(b, rdb)
			b.ResetTimer()
			for b.Loop() {
				page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 30})
				if err != nil {
					b.Fatal(err)
				}
				sts, err := s.Decorate(ctx, reader.ID, page.Statuses)
				if err != nil || len(sts) != 30 {
					b.Fatalf("%d statuses, %v", len(sts), err)
				}
			}
			b.ReportMetric((redisCPU(b, rdb)-cpu).Seconds()*1e6/float64(b.N), "redis-us/op")
		})
	}
}
