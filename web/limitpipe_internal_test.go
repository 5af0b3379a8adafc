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
	many := make([]limitClient, len(clients))
	for i, c := range clients {
		many[i] = limitClient{who: c}
	}
	checks := q.queueMany(ctx, pipe, many)
	_, _ = pipe.Exec(ctx) // each check reads its call's error
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

// A client counted with its site is allowed a unit only when both its own
// key and its site's have one, and then spends both; refused by either, it
// spends neither: a client over its own limit does not spend its
// neighbours' site, nor a full site its clients' own budgets. The site is
// allowed sites times the limit, its wait the longer one.
func TestQueuedLimitSites(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Backend(t)
	prefix := redistest.Prefix()
	s := &Server{social: social.New(rdb, social.Options{Prefix: prefix}), keys: keys{prefix: prefix}, sites: 2}
	var refused atomic.Int64
	q := &queuedLimit{s: s, l: rateLimit{
		name: "sites", limit: redis_rate.PerHour(2), refused: &refused, message: "slow down",
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Three /64s of one site (allowed 4), and one of another, in one call
	// and one at a time.
	const site, other = "2001:db8:1::/48", "2001:db8:2::/48"
	x, y, z := limitClient{"2001:db8:1:1::/64", site}, limitClient{"2001:db8:1:2::/64", site}, limitClient{"2001:db8:1:3::/64", site}
	w := limitClient{"2001:db8:2:1::/64", other}
	pipe := rdb.Pipeline()
	clients := []limitClient{x, x, x, y, w}
	checks := q.queueMany(ctx, pipe, clients)
	_, _ = pipe.Exec(ctx) // each check reads its call's error
	wants := []bool{true, true, false, true, true}
	for _, c := range []limitClient{y, z} {
		checks = append(checks, func() error { return q.take(ctx, c) })
		clients = append(clients, c)
	}
	wants = append(wants, true, false) // the site's fourth unit; none left for z
	for i, want := range wants {
		err := checks[i]()
		var limited *rateLimitedError
		switch {
		case want && err != nil:
			t.Errorf("unit %d, of %v: %v; want it allowed", i, clients[i], err)
		case !want && (!errors.As(err, &limited) || limited.retryAfter <= 0):
			t.Errorf("unit %d, of %v: %v; want it refused with a wait", i, clients[i], err)
		}
	}
	if n := refused.Load(); n != 2 {
		t.Errorf("%d refusals counted; want 2", n)
	}
	// z, refused by its site, spent none of its own.
	if n, err := rdb.Exists(ctx, q.keys(z)[0]).Result(); err != nil || n != 0 {
		t.Errorf("z's own key %s: exists %d, %v; want none", q.keys(z)[0], n, err)
	}
	// Its wait is the site's: a quarter of an hour (4 an hour), less what
	// passed.
	var limited *rateLimitedError
	if err := q.take(ctx, z); !errors.As(err, &limited) || limited.retryAfter < 10*time.Minute {
		t.Errorf("z once more: %v; want refused for the site's wait", err)
	}
}

// The limit's script goes by its hash: a Redis that lost its scripts runs
// each call once more by its text, counting each unit once.
func TestQueuedLimitAfterScriptsLost(t *testing.T) {
	t.Parallel()
	// A Redis of its own, whose scripts no other test needs.
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	prefix := redistest.Prefix()
	s := &Server{social: social.New(rdb, social.Options{Prefix: prefix}), keys: keys{prefix: prefix}}
	var refused atomic.Int64
	q := &queuedLimit{s: s, l: rateLimit{
		name: "flushed", limit: redis_rate.PerHour(3), refused: &refused, message: "slow down",
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for round, want := range []bool{true, true, true, false} {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		pipe := rdb.Pipeline()
		check := q.queue(ctx, pipe, limitClient{who: "a"})
		_, _ = pipe.Exec(ctx)
		err := check()
		if want != (err == nil) {
			t.Fatalf("unit %d after the scripts were flushed: %v, want allowed %v", round, err, want)
		}
		if err != nil && !errors.As(err, new(*rateLimitedError)) {
			t.Fatalf("unit %d: %v, want refused by the limit", round, err)
		}
	}
}
