package social

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkBlock measures the Redis CPU of one block of an account that
// the blocker follows, and that follows back, with 1,000 of the blocked
// account's statuses in the blocker's home timeline (all of it): both
// unfollows, the walk of both home timelines, the friend_removed frames.
// Each op blocks a fresh pair, set up with the timer and the CPU count
// stopped, on a redis-server of its own.
func BenchmarkBlock(b *testing.B) {
	ctx := context.Background()
	s, rdb := newPrivateService(b, Options{})
	var used time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		ann, bob := signUp(b, s, fmt.Sprintf("ann%d", i)), signUp(b, s, fmt.Sprintf("bob%d", i))
		pipe := rdb.Pipeline()
		for j := range 1000 {
			id := int64(1_000_000*(i+1) + j)
			pipe.HSet(ctx, s.keys.status(id), "id", id, "uid", bob.ID, "login", bob.Login, "name", "B",
				"message", "m", "posted", 1)
			pipe.ZAdd(ctx, s.keys.profile(bob.ID), redisZ(float64(id), itoa(id)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		follow(b, s, ann.ID, bob.Login) // copies bob's 1,000 into ann's home
		follow(b, s, bob.ID, ann.Login)
		if n := rdb.ZCard(ctx, s.keys.home(ann.ID)).Val(); n != 1000 {
			b.Fatalf("ann's home holds %d, want 1000", n)
		}
		cpu := redisCPU(b, rdb)
		b.StartTimer()
		if err := s.Block(ctx, ann.ID, bob.Login); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		used += redisCPU(b, rdb) - cpu
		if n := rdb.ZCard(ctx, s.keys.home(ann.ID)).Val(); n != 0 {
			b.Fatalf("ann's home holds %d after the block, want 0", n)
		}
		i++
		b.StartTimer()
	}
	b.ReportMetric(used.Seconds()*1e6/float64(b.N), "redis-us/op")
}
