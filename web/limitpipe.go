package web

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"chorus/internal/luatext"
	"chorus/internal/slots"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed limit_gcra.lua
	limitGCRASource string
	// limitGCRAScript goes by its text (EVAL) in the pipelines it shares,
	// where a NOSCRIPT could not be retried alone: its compact text, as
	// Redis reads and hashes it on every call.
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
		return q.queue(ctx, pipe, q.l.user(uid))
	}
}

// queue queues one unit of the limit for client (a uid, an address), and
// returns what reads its answer: nil, or a *rateLimitedError.
func (q *queuedLimit) queue(ctx context.Context, pipe redis.Pipeliner, client string) func() error {
	return q.queueMany(ctx, pipe, []string{client})[0]
}

// queueMany queues one unit of the limit for each of clients, in one
// script call (one per slot on a Redis Cluster), and returns what reads
// each one's answer, in order, as queue's.
func (q *queuedLimit) queueMany(ctx context.Context, pipe redis.Pipeliner, clients []string) []func() error {
	lim := q.l.limit
	keys := make([]string, len(clients))
	for i, client := range clients {
		keys[i] = "rate:" + q.s.keys.limit(q.l.name, client)
	}
	// The indices of clients each call counts: all in one on one Redis; on
	// a cluster, those whose keys share a slot.
	cluster := q.s.social.Cluster()
	var groups [][]int
	bySlot := make(map[int]int) // slot -> index in groups
	for i, key := range keys {
		slot := 0
		if cluster {
			slot = slots.Of(key)
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
		callKeys := make([]string, len(group))
		for j, i := range group {
			callKeys[j] = keys[i]
		}
		cmd := limitGCRAScript.Eval(ctx, pipe, callKeys, lim.Burst, lim.Rate, lim.Period.Seconds())
		for j, i := range group {
			checks[i] = func() error { return q.answer(cmd, j, len(group)) }
		}
	}
	return checks
}

// answer reads the answer for the j-th of the n keys of a limit's call.
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
