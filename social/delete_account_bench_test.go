package social

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkDeleteAccount measures deleting an account of 10,000 statuses
// and 10,000 followers, from DELETE /me until its last job has run: the
// Redis CPU of it all (a private redis-server, INFO's CPU before and after)
// and the wall time. With 10,000 followers the author is pulled (the
// default -pull-threshold), so its statuses were never pushed and each
// deletion's fan-out ends at its first pass. Run with -benchtime 1x: the
// setup posts 10,000 statuses.
func BenchmarkDeleteAccount(b *testing.B) {
	ctx := context.Background()
	const n = 10_000
	i := 0
	var used, wall time.Duration
	for b.Loop() {
		b.StopTimer()
		s, rdb := newPrivateService(b, Options{})
		author, _ := signUpToken(b, s, fmt.Sprintf("leaver%d", i))
		seedFollowers(b, s, author.ID, n)
		if err := rdb.ZAdd(ctx, s.keys.pulledAuthors(), redisZ(1, itoa(author.ID))).Err(); err != nil {
			b.Fatal(err)
		}
		for j := range n {
			if _, err := s.Post(ctx, author.ID, fmt.Sprint("status ", j)); err != nil {
				b.Fatal(err)
			}
		}
		if got := rdb.ZCard(ctx, s.keys.profile(author.ID)).Val(); got != n {
			b.Fatalf("the author has %d statuses, want %d", got, n)
		}
		startWorker(b, s, fmt.Sprint("w", i))
		cpu, start := redisCPU(b, rdb), time.Now()
		b.StartTimer()
		if err := s.DeleteAccount(ctx, author.ID, "password-"+author.Login, "192.0.2.1"); err != nil {
			b.Fatal(err)
		}
		for jobsLeft(b, ctx, rdb, s.keys) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		b.StopTimer()
		wall += time.Since(start)
		used += redisCPU(b, rdb) - cpu
		if got := rdb.Exists(ctx, s.keys.profile(author.ID), s.keys.followers(author.ID), s.keys.user(author.ID)).Val(); got != 0 {
			b.Fatalf("%d of the author's keys are left", got)
		}
		i++
		b.StartTimer()
	}
	b.ReportMetric(used.Seconds()*1e3/float64(b.N), "redis-ms/op")
	b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s/op")
}
