package social

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkStreamOpenings measures the stream openings' reads on a private
// Redis of 20,000 users (each with 20 notifications, 5 read and a session),
// 200 openings a call, as a storm's batch makes them: "kept" with every
// user's unread count kept in their hash, as after their last opening;
// "counted" with none kept, so that each batch counts them too (the
// field deleted before each call, outside the measure). It reports Redis's
// CPU time (INFO cpu) and commands per opening (those its scripts run included).
func BenchmarkStreamOpenings(b *testing.B) {
	const users, notes, batch = 20_000, 20, 200
	s, rdb := newPrivateService(b, Options{})
	ctx := ctxT(b)
	k := s.keys
	pipe := rdb.Pipeline()
	for uid := int64(1); uid <= users; uid++ {
		pipe.HSet(ctx, k.user(uid), "id", uid, "login", fmt.Sprintf("u%d", uid), "name", "U", "followers", 0,
			"following", 0, "posts", 0, "signup", 1)
		pipe.Set(ctx, k.session(fmt.Sprintf("s%d", uid)), uid, time.Hour)
		for id := int64(1); id <= notes; id++ {
			pipe.ZAdd(ctx, k.notes(uid), redisZ(float64(id), itoa(id)))
		}
		pipe.Set(ctx, k.notesRead(uid), 5, 0)
		if uid%500 == 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	// Every user opened once: their counts kept.
	for from := int64(1); from <= users; from += batch {
		keys := make([]StreamKey, 0, batch)
		for uid := from; uid < from+batch && uid <= users; uid++ {
			keys = append(keys, StreamKey{UID: uid, Session: fmt.Sprintf("s%d", uid)})
		}
		if _, err := s.StreamOpenings(ctx, keys); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"kept", "counted"} {
		b.Run(mode, func(b *testing.B) {
			var cpu time.Duration
			calls := openingCommands(b, rdb)
			var uid int64
			for b.Loop() {
				keys := make([]StreamKey, batch)
				for i := range keys {
					uid = uid%users + 1
					keys[i] = StreamKey{UID: uid, Session: fmt.Sprintf("s%d", uid)}
				}
				if mode == "counted" {
					b.StopTimer()
					pipe := rdb.Pipeline()
					for _, key := range keys {
						pipe.HDel(ctx, k.user(key.UID), "unread")
					}
					if _, err := pipe.Exec(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				before := redisCPU(b, rdb)
				os, err := s.StreamOpenings(ctx, keys)
				cpu += redisCPU(b, rdb) - before
				if err != nil || os[0].Unread != notes-5 {
					b.Fatalf("openings: %v, first %+v", err, os[0])
				}
			}
			opens := float64(b.N * batch)
			b.ReportMetric(cpu.Seconds()*1e6/opens, "redis-us/open")
			b.ReportMetric(float64(openingCommands(b, rdb)-calls)/opens, "commands/open")
		})
	}
}

// openingCommands is how many commands Redis ran, scripts' own included,
// but for the benchmark's own (INFO, and HDEL, which openings never send).
func openingCommands(tb testing.TB, rdb *redis.Client) int64 {
	var n int64
	for name, calls := range commandCalls(tb, rdb) {
		if name != "info" && name != "hdel" {
			n += calls
		}
	}
	return n
}
