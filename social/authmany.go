package social

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// Authentication is one session check of AuthenticateMany: in, the token
// and what decides beside the session whether the request goes on; out,
// the session's user or why not.
type Authentication struct {
	Token string
	// Before, when set, is queued in the first round trip, beside the
	// session's check (a limit per client address: it counts the request
	// whatever its session), and returns what reads its answer: nil lets
	// the check go on, an error refuses the request and is its Err as it
	// is. A session that is gone is refused as such first.
	Before func(ctx context.Context, pipe redis.Pipeliner) func() error
	// Admit, likewise, is queued in the second round trip, once the
	// session's user is known and Before let the request through (a limit
	// per user).
	Admit func(ctx context.Context, pipe redis.Pipeliner, uid int64) func() error

	UID int64 // the session's user, when Err is nil
	// Err is ErrUnauthenticated, Before's or Admit's refusal, or what kept
	// Redis from answering.
	Err error
}

// AuthenticateMany checks the sessions of many requests at once, as
// Authenticate checks one (renewing each, noting its user's activity), in
// two round trips for them all: the sessions with each Before, then each
// Admit with the activity of the users not noted lately (one script call). It is what a
// reconnect storm's streams cost: two round trips per batch of them, not
// three or four per stream.
func (s *Service) AuthenticateMany(ctx context.Context, as []*Authentication) {
	k := s.keys
	type first struct {
		a       *Authentication
		id      string // the session's
		session *redis.Cmd
		before  func() error
	}
	var firsts []first
	pipe := s.rdb.Pipeline()
	for _, a := range as {
		a.UID, a.Err = 0, nil
		if a.Token == "" || len(a.Token) > 128 {
			a.Err = ErrUnauthenticated
			continue
		}
		f := first{a: a, id: hashToken(a.Token)}
		f.session = authenticateScript.Eval(ctx, pipe, []string{k.session(f.id)}, s.opts.SessionTTL.Milliseconds())
		if a.Before != nil {
			f.before = a.Before(ctx, pipe)
		}
		firsts = append(firsts, f)
	}
	if len(firsts) == 0 {
		return
	}
	// Each command's own error is read below: one request's failure is
	// not its batch's.
	_, _ = pipe.Exec(ctx)

	type second struct {
		a     *Authentication
		admit func() error
	}
	var seconds []second
	var seen []int64 // the users whose activity is noted, each once
	pipe = s.rdb.Pipeline()
	for _, f := range firsts {
		uid, err := f.session.Int64()
		if err != nil {
			f.a.Err = fmt.Errorf("authenticate: %w", err)
			continue
		}
		if uid == 0 {
			f.a.Err = ErrUnauthenticated
			continue
		}
		if f.before != nil {
			if err := f.before(); err != nil {
				f.a.Err = err
				continue
			}
		}
		f.a.UID = uid
		s.sessionUsers.Add(f.id, uid)
		sc := second{a: f.a}
		if f.a.Admit != nil {
			sc.admit = f.a.Admit(ctx, pipe, uid)
		}
		seconds = append(seconds, sc)
		if !slices.Contains(seen, uid) && !s.touches.recent(uid) {
			seen = append(seen, uid)
		}
	}
	if len(seconds) == 0 {
		return
	}
	var seenCmd *redis.Cmd
	if len(seen) > 0 {
		args := make([]any, 0, 2+len(seen))
		args = append(args, s.touchEvery().Milliseconds(), s.inactiveAfter().Milliseconds())
		for _, uid := range seen {
			args = append(args, uid)
		}
		seenCmd = seenScript.Eval(ctx, pipe, []string{k.seen()}, args...)
	}
	_, _ = pipe.Exec(ctx) // as above
	noted := make(map[int64]error, len(seen))
	if seenCmd != nil {
		res, err := seenCmd.Int64Slice()
		if err == nil && len(res) != 1+len(seen) {
			err = fmt.Errorf("activity script answered %v", res)
		}
		for i, uid := range seen {
			if err != nil {
				noted[uid] = err
				continue
			}
			noted[uid] = s.noted(ctx, uid, res[1+i], res[0])
		}
	}
	for _, sc := range seconds {
		if sc.admit != nil {
			if err := sc.admit(); err != nil {
				sc.a.UID, sc.a.Err = 0, err
				continue
			}
		}
		if err := noted[sc.a.UID]; err != nil {
			sc.a.UID, sc.a.Err = 0, fmt.Errorf("authenticate: %w", err)
		}
	}
}
