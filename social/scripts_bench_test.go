package social

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkScriptText measures what Redis spends on a call of push.lua that
// does nearly nothing (its job gone: frames mode, answering 0), by
// its full text (EVAL, as the post's last round trip sent it), by its
// compact text (luatext.Compact, as it sends it now), and by its hash
// (EVALSHA): Redis reads and hashes the text it is sent on every call.
func BenchmarkScriptText(b *testing.B) {
	for _, c := range []struct{ name, cmd, body string }{
		{"full", "eval", pushSource},
		{"compact", "eval", pushText},
		{"hash", "evalsha", pushScript.Hash()},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			if err := pushScript.Load(ctx, rdb).Err(); err != nil {
				b.Fatal(err)
			}
			k := s.keys
			args := []any{c.cmd, c.body, 2, k.job("gone"), k.unfollows(1),
				1, 1, "", s.opts.HomeSize, "PUBLISH", "{}", "", "0", "", "", "", 0, ""}
			cpu := redisCPU(b, rdb)
			calls := 0
			b.ResetTimer()
			for b.Loop() {
				pipe := rdb.Pipeline()
				for range 100 {
					_ = pipe.Process(ctx, redis.NewCmd(ctx, args...))
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				calls += 100
			}
			b.StopTimer()
			b.ReportMetric((redisCPU(b, rdb)-cpu).Seconds()*1e6/float64(calls), "redis-us/call")
		})
	}
}
