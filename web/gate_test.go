package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/social"
	"chorus/web"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// A client far over a limit is refused in process: once the gate in front
// of the limit bites, a flood of refused requests costs Redis no command,
// signed in (a per-user limit, whose requests are authenticated first) or
// not (a per-address one).
func TestGateRefusesFloodsWithoutRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	var commands atomic.Int64
	e.rdb.AddHook(requestCommands{&commands})
	const burst = 2
	e.limits = web.Limits{
		PostsPerUser:     redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: burst},
		SignUpPerAddress: redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: burst},
	}
	in := e.start()
	flooder := in.signUp(t, "flooder")
	anon := in.anon(t)

	// Past the limit's burst Redis refuses; past the gate's, the gate does.
	bites := web.DefaultGateFactor * burst
	const flood = 200
	for _, tc := range []struct {
		name string
		send func(i int) response
		sent int // requests of the limit sent before the flood
	}{
		{"posts of a signed-in user", func(i int) response {
			return flooder.do("POST", "/api/v1/statuses", map[string]string{"message": "again"})
		}, 0},
		{"sign-ups from one address", func(i int) response {
			return anon.do("POST", "/api/v1/users", map[string]any{"login": "flood" + strconv.Itoa(i), "name": "F", "password": "password-flood"})
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			costly := 0
			for i := tc.sent; i < flood; i++ {
				before := commands.Load()
				res := tc.send(i)
				cost := commands.Load() - before
				if i >= burst && res.Status != http.StatusTooManyRequests {
					t.Fatalf("request %d: %d %s, want 429", i+1, res.Status, res.Body)
				}
				if i >= bites && cost > 0 {
					costly++
				}
			}
			if costly > 0 {
				t.Errorf("%d of the %d requests past the gate (%d) cost Redis commands, want none", costly, flood-bites, bites)
			}
		})
	}
	// A limit per address is gated by address: made-up tokens, each a
	// client of its own to a limit per user, do not get past it.
	for i := range 20 {
		before := commands.Load()
		res := anon.do("POST", "/api/v1/users", map[string]any{"login": "token" + strconv.Itoa(i), "name": "T", "password": "password-token"},
			"Authorization", "Bearer made-up-"+strconv.Itoa(i))
		if cost := commands.Load() - before; res.Status != http.StatusTooManyRequests || cost > 0 {
			t.Fatalf("sign-up %d with a made-up token, past the address's gate: %d %s, %d Redis commands; want 429 and none", i, res.Status, res.Body, cost)
		}
	}

	res := anon.do("GET", "/metrics", nil)
	for _, want := range []string{
		"chorus_rate_limited_in_process_total " + strconv.Itoa(2*(flood-bites)+20),
	} {
		if !strings.Contains(string(res.Body), want) {
			t.Errorf("/metrics does not say %s", want)
		}
	}
}

// An IPv6 client is gated by its /48 too, as its limits count it: a flood
// from one site, each request from a /64 of its own, costs Redis nothing
// once past the site's gate.
func TestGateCountsIPv6Sites(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	var commands atomic.Int64
	e.rdb.AddHook(requestCommands{&commands})
	const burst, sites = 1, 2
	e.limits = web.Limits{SignUpPerAddress: redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: burst}}
	e.proxies, e.sites = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, sites
	in := e.start()
	anon := in.anon(t)
	// The site's gate lets through gate factor × sites × the burst.
	bites := web.DefaultGateFactor * sites * burst
	for i := range 100 {
		before := commands.Load()
		res := anon.do("POST", "/api/v1/users", map[string]any{"login": "site" + strconv.Itoa(i), "name": "S", "password": "password-site"},
			"X-Forwarded-For", fmt.Sprintf("2001:db8:7:%x::1", i))
		cost := commands.Load() - before
		switch {
		case i < sites*burst && res.Status != http.StatusCreated:
			t.Fatalf("sign-up %d, within the site's limit: %d %s", i, res.Status, res.Body)
		case i >= sites*burst && res.Status != http.StatusTooManyRequests:
			t.Fatalf("sign-up %d, past the site's limit: %d %s, want 429", i, res.Status, res.Body)
		case i >= bites && cost > 0:
			t.Fatalf("sign-up %d, past the site's gate (%d): %d Redis commands, want none", i, bites, cost)
		}
	}
}

// requestCommands counts the Redis commands run for HTTP requests (their
// context carries a request id), not the instance's background work.
type requestCommands struct{ n *atomic.Int64 }

func (requestCommands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c requestCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if middleware.GetReqID(ctx) != "" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c requestCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if middleware.GetReqID(ctx) != "" {
			c.n.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// Made-up tokens, each a client of its own to the limits' gates, are
// gated by their address: past the tokens with no session an address may
// bring, its requests that carry one are refused in process, costing Redis
// nothing, on every way a session is looked up (a request, a post, a
// stream's opening).
func TestMadeUpTokensGatedByAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	var commands atomic.Int64
	e.rdb.AddHook(requestCommands{&commands})
	in := e.start()
	in.signUp(t, "ann_tokens")
	anon := in.anon(t)
	token := func(i int) []string { return []string{"Authorization", "Bearer made-up-" + strconv.Itoa(i)} }
	var refused [3]int
	costly := 0
	const flood = 300
	for i := range flood {
		before := commands.Load()
		var res response
		switch i % 3 {
		case 0:
			res = anon.do("GET", "/api/v1/me", nil, token(i)...)
		case 1:
			res = anon.do("POST", "/api/v1/statuses", map[string]string{"message": "hi"}, token(i)...)
		default:
			res = anon.do("GET", "/api/v1/stream", nil, append(token(i), "Accept", "text/event-stream")...)
		}
		switch res.Status {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			refused[i%3]++
			if res.Header.Get("Retry-After") == "" || !strings.Contains(string(res.Body), `"rate_limited"`) {
				t.Fatalf("request %d refused without Retry-After or rate_limited: %v %s", i, res.Header, res.Body)
			}
			if commands.Load() > before {
				costly++
			}
		default:
			t.Fatalf("request %d with a made-up token: %d %s, want 401 or 429", i, res.Status, res.Body)
		}
	}
	// The gate lets some tens through, and a few more a second: a flood
	// this long meets it, whatever the machine's speed.
	if refused[0] == 0 || refused[1] == 0 || refused[2] == 0 {
		t.Fatalf("requests with made-up tokens refused: %v (a request, a post, a stream), want some of each", refused)
	}
	if costly > 0 {
		t.Errorf("%d of the refused requests cost Redis commands, want none", costly)
	}
}
