package social

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// Authentication is one session check of AuthenticateMany: in, the token;
// out, the session's user or why not.
type Authentication struct {
	Token string

	UID int64 // the session's user, when Err is nil
	// Err is ErrUnauthenticated, a refusal of AuthChecks, or what kept
	// Redis from answering.
	Err error
}

// AuthChecks is what decides, beside the sessions, whether the requests of
// an AuthenticateMany go on. Each is queued once for the batch, so that a
// check costs Redis one call for many requests (a rate limit's script over
// their keys), and returns what reads each request's answer: nil lets it
// go on, an error refuses it and is its Err as it is.
type AuthChecks struct {
	// Before is queued in the first round trip, beside the sessions' checks
	// (a limit per client address: it counts the request whatever its
	// session), for the authentications whose token is sent, given by
	// their index in the batch. A session that is gone is refused as such
	// first.
	Before func(ctx context.Context, pipe redis.Pipeliner, sent []int) []func() error
	// Admit is queued in the second round trip for the requests whose
	// session stands and that Before let through, given their users, in
	// the batch's order (a limit per user).
	Admit func(ctx context.Context, pipe redis.Pipeliner, uids []int64) []func() error
}

// Cluster reports whether the service's Redis is a Redis Cluster, where
// the keys of one script call must share a slot.
func (s *Service) Cluster() bool { return s.keys.cluster }

// AuthenticateMany checks the sessions of many requests at once, as
// Authenticate checks one (renewing each, noting its user's activity,
// refusing the sessions of an account suspended or being deleted), in two
// round trips for them all: the sessions with checks.Before, then
// checks.Admit with the users' standing and the activity of the users not
// noted lately (one script call). It is what a reconnect storm's streams cost: two round trips per
// batch of them, not three or four per stream. The rebuilds of users back
// from long away run side by side, for up to rebuildWait in all, after
// every check of the batch is answered (rebuildMany).
func (s *Service) AuthenticateMany(ctx context.Context, as []*Authentication, checks AuthChecks) {
	k := s.keys
	type first struct {
		a       *Authentication
		id      string // the session's
		session *redis.StringCmd
	}
	var firsts []first
	var sent []int
	pipe := s.rdb.Pipeline()
	for i, a := range as {
		a.UID, a.Err = 0, nil
		if !tokenShaped(a.Token) {
			a.Err = ErrUnauthenticated
			continue
		}
		f := first{a: a, id: hashToken(a.Token)}
		f.session = s.queueSession(ctx, pipe, f.id)
		firsts = append(firsts, f)
		sent = append(sent, i)
	}
	if len(firsts) == 0 {
		return
	}
	var befores []func() error
	if checks.Before != nil {
		befores = answers(checks.Before(ctx, pipe, sent), len(sent))
	}
	// Each command's own error is read below: one request's failure is
	// not its batch's.
	_, _ = pipe.Exec(ctx)

	var admitted []*Authentication
	var ids []string // of the admitted sessions
	var uids []int64
	var seen []int64 // the users whose activity is noted, each once
	for j, f := range firsts {
		uid, err := sessionUID(f.session)
		if err != nil {
			f.a.Err = fmt.Errorf("authenticate: %w", err)
			continue
		}
		if uid == 0 {
			f.a.Err = ErrUnauthenticated
			continue
		}
		if befores != nil {
			if err := befores[j](); err != nil {
				f.a.Err = err
				continue
			}
		}
		f.a.UID = uid
		s.sessionUsers.Add(f.id, uid)
		admitted = append(admitted, f.a)
		ids = append(ids, f.id)
		uids = append(uids, uid)
		if !slices.Contains(seen, uid) && !s.touches.recent(uid) {
			seen = append(seen, uid)
		}
	}
	if len(admitted) == 0 {
		return
	}
	pipe = s.rdb.Pipeline()
	var admits []func() error
	if checks.Admit != nil {
		admits = answers(checks.Admit(ctx, pipe, uids), len(uids))
	}
	standings := make(map[int64]*redis.SliceCmd, len(uids))
	for _, uid := range uids {
		if standings[uid] == nil {
			standings[uid] = s.queueStanding(ctx, pipe, uid)
		}
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
	// An account suspended or being deleted whose sessions were not ended
	// yet (the change cut short) opens nothing: its sessions are refused
	// and ended here, as Authenticate does, and it is rebuilt no home.
	fallen := map[int64]bool{}
	for j, a := range admitted {
		if err := s.refuseFallen(ctx, ids[j], a.UID, standings[a.UID]); err != nil {
			fallen[a.UID] = true
			a.UID, a.Err = 0, err
		}
	}
	noted := make(map[int64]error, len(seen))
	var rebuilds []int64
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
			if fallen[uid] {
				continue // refused: no home, nor a refill job for one
			}
			rebuild, err := s.noted(ctx, uid, res[1+i], res[0])
			noted[uid] = err
			if rebuild {
				rebuilds = append(rebuilds, uid)
			}
		}
	}
	s.rebuildMany(ctx, rebuilds)
	for j, a := range admitted {
		if a.Err != nil {
			continue // refused above
		}
		if admits != nil {
			if err := admits[j](); err != nil {
				a.UID, a.Err = 0, err
				continue
			}
		}
		if err := noted[a.UID]; err != nil {
			a.UID, a.Err = 0, fmt.Errorf("authenticate: %w", err)
		}
	}
}

// answers makes a check's answers n long, as AuthChecks promises: one that
// is missing or nil refuses its request with an error, where calling it
// would panic in the batch's goroutine.
func answers(checks []func() error, n int) []func() error {
	out := make([]func() error, n)
	for i := range out {
		if i < len(checks) && checks[i] != nil {
			out[i] = checks[i]
			continue
		}
		out[i] = func() error {
			return fmt.Errorf("authenticate: a check answered %d of %d requests", len(checks), n)
		}
	}
	return out
}
