package web

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/social"

	"github.com/go-redis/redis_rate/v10"
)

// One call counts a unit for each of many clients, in order, a client named
// twice counting twice, and on the limiter's own keys: what the limiter
// counts after it is the same budget. On a Redis Cluster the clients' keys
// are in several slots, counted one call per slot.
func TestQueuedLimitMany(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Backend(t)
	prefix := redistest.Prefix()
	s := &Server{social: social.New(rdb, social.Options{Prefix: prefix}), keys: keys{prefix: prefix}}
	var refused atomic.Int64
	q := &queuedLimit{s: s, l: rateLimit{
		name: "many", limit: redis_rate.PerHour(2), refused: &refused, message: "slow down",
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pipe := rdb.Pipeline()
	clients := []string{"a", "b", "a", "a", "c"}
	checks := q.queueMany(ctx, pipe, clients)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, true, false, true} {
		err := checks[i]()
		var limited *rateLimitedError
		switch {
		case want && err != nil:
			t.Errorf("unit %d, of %s: %v; want it allowed", i, clients[i], err)
		case !want && (!errors.As(err, &limited) || limited.retryAfter <= 0):
			t.Errorf("unit %d, of %s: %v; want it refused with a wait", i, clients[i], err)
		}
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("%d refusals counted; want 1", n)
	}

	// c has one unit left, by the limiter's own count, then none.
	limiter := redis_rate.NewLimiter(rdb)
	for i, want := range []int{1, 0} {
		res, err := limiter.Allow(ctx, s.keys.limit("many", "c"), redis_rate.PerHour(2))
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed != want {
			t.Errorf("the limiter's unit %d for c: allowed %d; want %d", i, res.Allowed, want)
		}
	}
}
