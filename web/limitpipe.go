package web

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"chorus/internal/luatext"
	"chorus/internal/slots"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed limit_gcra.lua
	limitGCRASource string
	// limitGCRAScript goes by its hash (EVALSHA) in the pipelines it
	// shares, and by its text, alone, once after a Redis that lost its
	// scripts answered NOSCRIPT (limitCall).
	limitGCRAScript = redis.NewScript(luatext.Compact(limitGCRASource))
)

// queuedLimit is a rate limit counted in a round trip the request makes
// anyway (a post's first, a stream's opening, a session's check: see
// social.Admit), on the key and with the algorithm of the limiter, so that
// both count one budget. Its gate is checked first, as limit's is.
type queuedLimit struct {
	s    *Server
	l    rateLimit
	gate *gate
}

// newQueuedLimit makes the queued form of l, or nil when no limit applies.
func (s *Server) newQueuedLimit(l rateLimit) *queuedLimit {
	if l.limit.IsZero() || s.limiter == nil {
		return nil
	}
	return &queuedLimit{s: s, l: l, gate: s.gates.newGate(l)}
}

// passGate checks the request against the limit's gate, answering it when
// refused.
func (q *queuedLimit) passGate(w http.ResponseWriter, r *http.Request) bool {
	return q == nil || q.s.gateInLimit(q.gate, w, r)
}

// admit is the social.Admit of the limit: it queues one unit for uid, and
// its check answers a *rateLimitedError when refused.
func (q *queuedLimit) admit() social.Admit {
	if q == nil {
		return nil
	}
	return func(ctx context.Context, pipe redis.Pipeliner, uid int64) func() error {
		return q.queue(ctx, pipe, limitClient{who: q.l.user(uid)})
	}
}

// limitClient is whom one unit of a limit is counted for: who, and, for an
// IPv6 client counted by its address, the site (the /48) its /64 is in,
// which is counted too, at siteFactor times the limit ("" for none).
type limitClient struct{ who, site string }

// take takes one unit of the limit for c in a round trip of its own, and
// answers nil, a *rateLimitedError, or why Redis did not say.
func (q *queuedLimit) take(ctx context.Context, c limitClient) error {
	if c.site == "" {
		res, err := q.s.limiter.Allow(ctx, q.s.keys.limit(q.l.name, c.who), q.l.limit)
		if err != nil {
			return fmt.Errorf("rate limit %s: %w", q.l.name, err)
		}
		if res.Allowed == 0 {
			q.l.refused.Add(1)
			return &rateLimitedError{retryAfter: res.RetryAfter, message: q.l.message}
		}
		return nil
	}
	pipe := q.s.social.Pipeline()
	check := q.queue(ctx, pipe, c)
	_, _ = pipe.Exec(ctx) // the error is the check's
	return check()
}

// queue queues one unit of the limit for c, and returns what reads its
// answer: nil, or a *rateLimitedError.
func (q *queuedLimit) queue(ctx context.Context, pipe redis.Pipeliner, c limitClient) func() error {
	return q.queueMany(ctx, pipe, []limitClient{c})[0]
}

// keys are the keys c is counted under: its own, then its site's, which
// share a slot (the site's hash tag). A client without a site keeps the
// limiter's key.
func (q *queuedLimit) keys(c limitClient) []string {
	if c.site == "" {
		return []string{"rate:" + q.s.keys.limit(q.l.name, c.who)}
	}
	tag := "{" + c.site + "}"
	return []string{"rate:" + q.s.keys.limit(q.l.name, tag+c.who), "rate:" + q.s.keys.limit(q.l.name, tag)}
}

// queueMany queues one unit of the limit for each of clients, in one
// script call (one per slot on a Redis Cluster), and returns what reads
// each one's answer, in order, as queue's.
func (q *queuedLimit) queueMany(ctx context.Context, pipe redis.Pipeliner, clients []limitClient) []func() error {
	lim := q.l.limit
	keys := make([][]string, len(clients))
	for i, c := range clients {
		keys[i] = q.keys(c)
	}
	// The indices of clients each call counts: all in one on one Redis; on
	// a cluster, those whose keys share a slot.
	cluster := q.s.social.Cluster()
	var groups [][]int
	bySlot := make(map[int]int) // slot -> index in groups
	for i, ks := range keys {
		slot := 0
		if cluster {
			slot = slots.Of(ks[0])
		}
		g, ok := bySlot[slot]
		if !ok {
			g = len(groups)
			bySlot[slot] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	checks := make([]func() error, len(keys))
	for _, group := range groups {
		var callKeys []string
		sites := make([]byte, len(group))
		for j, i := range group {
			callKeys = append(callKeys, keys[i]...)
			sites[j] = '0' + byte(len(keys[i])-1)
		}
		call := &limitCall{s: q.s, keys: callKeys,
			args: []any{lim.Burst, lim.Rate, lim.Period.Seconds(), q.s.siteFactor(), string(sites)}}
		call.cmd = limitGCRAScript.EvalSha(ctx, pipe, call.keys, call.args...)
		for j, i := range group {
			checks[i] = func() error { return q.answer(call.result(ctx), j, len(group)) }
		}
	}
	return checks
}

// limitCall is one call of the limit's script, queued by its hash.
type limitCall struct {
	s    *Server
	keys []string
	args []any
	cmd  *redis.Cmd
	once sync.Once
}

// result is the call's answer, once it ran: a Redis that lost its scripts
// (restarted, flushed) answers NOSCRIPT to the hash and runs nothing, and
// the call is then made again alone, by its text, which loads the script
// for the calls after it.
func (c *limitCall) result(ctx context.Context) *redis.Cmd {
	c.once.Do(func() {
		if redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			pipe := c.s.social.Pipeline()
			c.cmd = limitGCRAScript.Eval(ctx, pipe, c.keys, c.args...)
			_, _ = pipe.Exec(ctx) // the error is the command's
		}
	})
	return c.cmd
}

// answer reads the answer for the j-th of the n clients of a limit's call.
func (q *queuedLimit) answer(cmd *redis.Cmd, j, n int) error {
	v, err := cmd.Slice()
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", q.l.name, err)
	}
	if len(v) != 2*n {
		return fmt.Errorf("rate limit %s: answered %v", q.l.name, v)
	}
	if allowed, _ := v[2*j].(int64); allowed == 1 {
		return nil
	}
	wait, _ := v[2*j+1].(string)
	secs, _ := strconv.ParseFloat(wait, 64)
	q.l.refused.Add(1)
	return &rateLimitedError{retryAfter: time.Duration(secs * float64(time.Second)), message: q.l.message}
}
