package social

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// redisCost is what a private Redis has run since its last CONFIG
// RESETSTAT: commands (scripts' own calls included) and the microseconds
// it spent in them, INFO and CONFIG left out.
func redisCost(tb testing.TB, rdb *redis.Client) (calls, usec int64) {
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
			switch k {
			case "calls":
				calls += n
			case "usec":
				usec += n
			}
		}
	}
	return calls, usec
}

// followPulled signs up n authors (reader's login and a number), makes
// each pulled and has reader follow them all.
func followPulled(tb testing.TB, s *Service, reader User, n int) []User {
	tb.Helper()
	ctx := context.Background()
	authors := make([]User, n)
	for i := range authors {
		authors[i] = signUp(tb, s, fmt.Sprintf("%s%04d", reader.Login, i))
		if _, _, err := s.Follow(ctx, reader.ID, authors[i].Login); err != nil {
			tb.Fatal(err)
		}
	}
	pipe := s.rdb.Pipeline()
	for i, a := range authors {
		pipe.ZAdd(ctx, s.keys.pulledAuthors(), redis.Z{Score: 1, Member: a.ID})
		pipe.ZAdd(ctx, s.keys.pulls(reader.ID), redis.Z{Score: float64(i + 1), Member: a.ID})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
	return authors
}

// BenchmarkHomeReadPulledAuthors measures the newest page of 20 of the
// home timeline of a reader who follows one pushed author and 10, 128 or
// 1,000 pulled authors, or 129 of 1,000 pulled authors who post (the
// reader's are 12.9% of the pulled statuses, or none: "silent", where the
// scans find nothing of theirs and a read takes every round). The authors
// take turns: 33 pushed statuses, then one of each pulled author, three
// times. It reports the
// Redis commands and the Redis time of one read: running its commands
// (INFO commandstats) and all of Redis's CPU time, the reading and
// answering of them included (INFO cpu).
func BenchmarkHomeReadPulledAuthors(b *testing.B) {
	for _, c := range []struct {
		name           string
		pulled, follow int  // pulled authors, and how many of them the reader follows
		silent         bool // the reader's pulled authors post nothing: every scan comes back empty
	}{
		{"pulled=10", 10, 10, false},
		{"pulled=128", 128, 128, false},
		{"pulled=129of1000", 1000, 129, false},
		{"pulled=1000", 1000, 1000, false},
		{"pulled=129of1000,silent", 1000, 129, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			reader := signUp(b, s, "reader")
			pushed := signUp(b, s, "pushed")
			if _, _, err := s.Follow(ctx, reader.ID, pushed.Login); err != nil {
				b.Fatal(err)
			}
			authors := followPulled(b, s, reader, c.follow)
			if c.pulled > c.follow {
				authors = append(authors, followPulled(b, s, signUp(b, s, "other"), c.pulled-c.follow)...)
			}
			for range 3 {
				for range 33 {
					if _, err := s.Post(ctx, pushed.ID, "pushed status"); err != nil {
						b.Fatal(err)
					}
				}
				// The reader's pulled authors spread among the others.
				for i := range authors {
					j := (i * 37) % len(authors)
					if c.silent && j < c.follow {
						continue
					}
					if _, err := s.Post(ctx, authors[j].ID, "pulled status"); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			reads, cpu := 0, redisCPU(b, rdb)
			b.ResetTimer()
			for b.Loop() {
				page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 20})
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Statuses) != 20 {
					b.Fatalf("page of %d", len(page.Statuses))
				}
				reads++
			}
			b.StopTimer()
			cpu = redisCPU(b, rdb) - cpu
			calls, usec := redisCost(b, rdb)
			b.ReportMetric(float64(calls)/float64(reads), "redis-cmds/op")
			b.ReportMetric(float64(usec)/float64(reads)/1000, "redis-ms/op")
			b.ReportMetric(float64(cpu.Microseconds())/float64(reads)/1000, "redis-cpu-ms/op")
		})
	}
}
