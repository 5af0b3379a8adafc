package social

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// evalCost is what a private Redis has run since its last CONFIG
// RESETSTAT: its EVAL calls and the microseconds they took (each script
// with the commands it ran), and every command's calls (scripts' own
// included).
func evalCost(tb testing.TB, rdb *redis.Client) (evals, evalUsec, calls int64) {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, stats, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "cmdstat_"), ":")
		if !ok || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch {
			case k == "calls":
				calls += n
				if name == "eval" {
					evals += n
				}
			case k == "usec" && name == "eval":
				evalUsec += n
			}
		}
	}
	return evals, evalUsec, calls
}

// BenchmarkNotify measures a notification's writes on a private Redis, for
// a user who keeps MaxNotifications already, so that each store trims the
// oldest with its cause: "store" a new one (a like's, with its status in
// the frame), one pipeline per op as a write sends it; "store-again" one
// whose cause is stored (a job's redo); "take-back" one (an unlike). And
// "page": the newest page of 30 (likes of 30 statuses), read and resolved.
// It reports the scripts' Redis time (INFO commandstats: EVAL's usec, the
// script and the commands it runs), all of Redis's CPU time (INFO cpu:
// reading, replies and the PUBLISH to no subscriber included), and Redis
// commands, per op.
func BenchmarkNotify(b *testing.B) {
	s, rdb := newPrivateService(b, Options{})
	ctx := context.Background()
	ann, bob := signUp(b, s, "ann"), signUp(b, s, "bob")
	st := post(b, s, ann.ID, "a status of an ordinary length, liked by someone who follows its author")
	like := func(sid int64) note {
		n := likeNote(bob, st)
		n.sid = sid
		return n
	}
	next := int64(1)
	store := func(b *testing.B, count int, n func(i int) note) {
		for start := 0; start < count; start += 500 {
			pipe := rdb.Pipeline()
			for i := start; i < min(count, start+500); i++ {
				s.queueNotify(ctx, pipe, n(i))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	store(b, MaxNotifications, func(int) note { next++; return like(next) })

	// measure runs ops operations in rounds of at most MaxNotifications
	// (each after its setup, which is not measured) and reports their cost.
	measure := func(b *testing.B, ops int, setup func(n int), run func(n int)) {
		b.Helper()
		b.StopTimer()
		var cpu time.Duration
		var evals, usec, calls int64
		for done := 0; done < ops; {
			n := min(ops-done, MaxNotifications)
			setup(n)
			resetStats(b, rdb)
			before := redisCPU(b, rdb)
			b.StartTimer()
			run(n)
			b.StopTimer()
			cpu += redisCPU(b, rdb) - before
			e, u, c := evalCost(b, rdb)
			evals, usec, calls = evals+e, usec+u, calls+c
			done += n
		}
		b.ReportMetric(float64(usec)/float64(ops), "eval-µs/op")
		b.ReportMetric(float64(evals)/float64(ops), "evals/op")
		b.ReportMetric(float64(cpu.Microseconds())/float64(ops), "redis-cpu-µs/op")
		b.ReportMetric(float64(calls)/float64(ops), "cmds/op")
	}
	noSetup := func(int) {}
	one := func(b *testing.B, queue func(pipe redis.Pipeliner)) {
		pipe := rdb.Pipeline()
		queue(pipe)
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("store", func(b *testing.B) {
		measure(b, b.N, noSetup, func(n int) {
			for range n {
				next++
				one(b, func(pipe redis.Pipeliner) { s.queueNotify(ctx, pipe, like(next)) })
			}
		})
	})
	b.Run("store-again", func(b *testing.B) {
		measure(b, b.N, noSetup, func(n int) {
			for range n {
				one(b, func(pipe redis.Pipeliner) { s.queueNotify(ctx, pipe, like(next)) })
			}
		})
	})
	b.Run("take-back", func(b *testing.B) {
		var first int64
		measure(b, b.N, func(n int) {
			first = next + 1
			store(b, n, func(int) note { next++; return like(next) })
		}, func(n int) {
			for i := range int64(n) {
				one(b, func(pipe redis.Pipeliner) { s.queueUnnotify(ctx, pipe, like(first+i)) })
			}
		})
	})
	b.Run("page", func(b *testing.B) {
		const size = 30
		for i := range size {
			liked := post(b, s, ann.ID, fmt.Sprintf("status %d", i))
			store(b, 1, func(int) note { return likeNote(bob, liked) })
		}
		measure(b, b.N, noSetup, func(n int) {
			for range n {
				page, err := s.Notifications(ctx, ann.ID, 0, size)
				if err != nil || len(page.Notifications) != size {
					b.Fatalf("page of %d, %v; want %d", len(page.Notifications), err, size)
				}
			}
		})
	})
}
