package social

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// BenchmarkPushActivityCheck measures what Redis spends on a post's push
// to 100 followers, all active, with their activity read apart before it
// ("read apart": a ZMSCORE of users:seen, then push.lua with no follower
// flagged) or checked by push.lua as it pushes ("in push": every follower
// flagged 4). users:seen holds 20,000 users.
func BenchmarkPushActivityCheck(b *testing.B) {
	for _, inPush := range []bool{false, true} {
		b.Run(map[bool]string{false: "read apart", true: "in push"}[inPush], func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			s.opts.ConnectedKey = s.keys.prefix + "connected"
			const n, first = 100, 1_000_000
			author := signUp(b, s, "author")
			seedFollowers(b, s, author.ID, n)
			now := time.Now().UnixMilli()
			pipe := rdb.Pipeline()
			for i := range 20_000 {
				pipe.ZAdd(ctx, s.keys.seen(), redis.Z{Score: float64(now - int64(i)), Member: first + i})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			uids, members := make([]int64, n), make([]string, n)
			connected, onlyIfOn := make([]bool, n), make([]bool, n)
			for i := range n {
				uids[i], members[i], onlyIfOn[i] = first+int64(i), itoa(first+int64(i)), inPush
			}
			cpu := redisCPU(b, rdb)
			posts := 0
			for b.Loop() {
				sid := rdb.Incr(ctx, s.keys.statusSeq()).Val()
				payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: Status{ID: sid, UID: author.ID}})
				if err != nil {
					b.Fatal(err)
				}
				if !inPush {
					if err := rdb.ZMScore(ctx, s.keys.seen(), members...).Err(); err != nil {
						b.Fatal(err)
					}
				}
				pipe := rdb.Pipeline()
				h := s.queuePush(ctx, pipe, author.ID, sid, 0, string(payload), uids, connected, onlyIfOn, "0")
				cmds, err := pipe.Exec(ctx)
				added, err := h.results(ctx, rdb, cmds, err)
				if err != nil {
					b.Fatal(err)
				}
				for i, a := range added {
					if a != pushAdded {
						b.Fatalf("follower %d: push answered %d", i, a)
					}
				}
				posts++
			}
			b.StopTimer()
			b.ReportMetric((redisCPU(b, rdb)-cpu).Seconds()*1e6/float64(posts), "redis-us/post")
		})
	}
}
