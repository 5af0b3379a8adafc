package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"chorus/bus"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed session_open.lua
	sessionOpenSource string
	sessionOpenScript = newScript(sessionOpenSource)
)

// A user's sessions are found without a scan through sessions:<uid>, the
// index of their session ids, which a password change reads to end every
// other one. The index is bounded: past MaxSessionsPerUser a sign-in first
// takes out the sessions that ended (expired unused, or signed out where
// the index was not told), then ends the oldest. Sessions opened before
// the index existed are not in it: they end when they expire or sign out.

// openSession makes a new session for uid, notes it in uid's index, and
// returns its token. hash is the password hash the caller checked the
// password against ("" for a sign-up's): a password changed since, or the
// account suspended or deleted since, ends the session (sessionStands).
func (s *Service) openSession(ctx context.Context, uid int64, hash string) (string, error) {
	token, id := newToken()
	now, err := s.now(ctx)
	if err != nil {
		return "", err
	}
	// The session and the index are two slots on a cluster. The index first:
	// an index entry whose session never came is taken out as ended, while
	// a session missing from the index would outlive a password change.
	n, err := sessionOpenScript.Run(ctx, s.rdb, []string{s.keys.sessions(uid)},
		id, now.UnixMilli(), s.opts.MaxSessionsPerUser).Int()
	if err != nil {
		return "", err
	}
	if err := s.rdb.Set(ctx, s.keys.session(id), uid, s.opts.SessionTTL).Err(); err != nil {
		return "", err
	}
	if err := s.sessionStands(ctx, uid, id, hash); err != nil {
		if !errors.Is(err, ErrSuspended) && !errors.Is(err, ErrInvalidCredentials) {
			// Not known to stand, and its token never given: it goes, so
			// that it holds no place among the user's sessions.
			dctx, cancel := detached(ctx)
			defer cancel()
			if err := s.endSessions(dctx, uid, []string{id}); err != nil {
				s.opts.Logger.WarnContext(ctx, "could not end a session whose sign-in failed", "uid", uid, "err", err)
			}
		}
		return "", err
	}
	if n > s.opts.MaxSessionsPerUser {
		live, err := s.liveSessions(ctx, uid)
		if err != nil {
			return "", err
		}
		if over := len(live) - s.opts.MaxSessionsPerUser; over > 0 {
			oldest := slices.DeleteFunc(live[:over:over], func(other string) bool { return other == id })
			s.stats.SessionsEvicted.Add(int64(len(oldest)))
			if err := s.endSessions(ctx, uid, oldest); err != nil {
				return "", err
			}
		}
	}
	return token, nil
}

// sessionStands reads uid's account again once its new session id is
// stored and in the index, and ends the session when the account was
// suspended or deleted, or (hash not "") its password changed from hash,
// since the caller checked it: ErrSuspended, or ErrInvalidCredentials.
// Each of those changes is written before it ends the sessions in the
// index, and ends those whose session key exists: one that came before
// this read sees the session there and ends it, and this read sees any
// that came after.
func (s *Service) sessionStands(ctx context.Context, uid int64, id, hash string) error {
	vals, err := s.rdb.HMGet(ctx, s.keys.user(uid), "id", "suspended", "deleted", "password").Result()
	if err != nil {
		return err
	}
	var why error
	switch {
	case vals[0] == nil || vals[2] != nil:
		why = ErrInvalidCredentials
	case vals[1] != nil:
		why = ErrSuspended
	case hash != "" && vals[3] != hash:
		why = ErrInvalidCredentials
	default:
		return nil
	}
	if err := s.endSessions(ctx, uid, []string{id}); err != nil {
		return err
	}
	return why
}

// sessionOpening is how long an index entry may wait for its session: a
// sign-in notes the session in the index (openSession), then stores it a
// round trip later. An entry younger than that with no session is one
// being opened, neither live nor ended; an older one is a sign-in that
// failed between the two, and is taken out.
const sessionOpening = time.Minute

// liveSessions returns uid's sessions that still exist, oldest first, and
// takes those that ended out of uid's index: at most MaxSessionsPerUser
// and one, so a bounded read. A session being opened is left in the
// index: taken out, it would stand outside it once stored, where a
// password change, a suspension or a deletion does not find it.
func (s *Service) liveSessions(ctx context.Context, uid int64) ([]string, error) {
	k := s.keys
	pipe := s.rdb.Pipeline()
	entries := pipe.ZRangeWithScores(ctx, k.sessions(uid), 0, -1)
	clock := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil || len(entries.Val()) == 0 {
		return nil, err
	}
	opening := float64(clock.Val().Add(-sessionOpening).UnixMilli())
	pipe = s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(entries.Val()))
	for i, z := range entries.Val() {
		cmds[i] = pipe.Exists(ctx, k.session(z.Member.(string)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var live []string
	var ended []any
	for i, c := range cmds {
		z := entries.Val()[i]
		switch {
		case c.Val() == 1:
			live = append(live, z.Member.(string))
		case z.Score < opening:
			ended = append(ended, z.Member)
		}
	}
	if len(ended) > 0 {
		if err := s.rdb.ZRem(ctx, k.sessions(uid), ended...).Err(); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// endSessions ends uid's sessions ids: their tokens stop working at once,
// and their streams, on every instance, are told to close (session_ended).
func (s *Service) endSessions(ctx context.Context, uid int64, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	members := make([]any, len(ids))
	for i, id := range ids {
		pipe.Del(ctx, k.session(id))
		members[i] = id
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if err := s.rdb.ZRem(ctx, k.sessions(uid), members...).Err(); err != nil {
		return err
	}
	// The sessions are gone; closing their streams is a courtesy that may
	// fail without undoing that: a stream's periodic check of its session
	// finds it ended.
	msgs := make([]bus.Message, 0, len(ids))
	for _, id := range ids {
		frame, err := json.Marshal(protocol.Internal{Type: protocol.TypeSessionEnded, Session: id, Ended: true})
		if err != nil {
			return err
		}
		msgs = append(msgs, bus.Message{Channel: s.bus.UserChannel(uid), Payload: frame})
	}
	if err := s.bus.PublishBatch(ctx, msgs); err != nil {
		s.opts.Logger.WarnContext(ctx, "could not close the ended sessions' streams", "uid", uid, "err", err)
	}
	return nil
}

// ChangePassword sets a new password for uid, whose current one must be
// given: checked as a sign-in checks it, from the client address addr, and
// counted against the same limits (a *RateLimitError past them; a wrong one
// is ErrInvalidCredentials). The new one must pass the rules of sign-up.
// Every other session of uid then ends at once, its streams on every
// instance closed; the session of token, which asked, stays.
func (s *Service) ChangePassword(ctx context.Context, uid int64, token, current, next, addr string) error {
	// The rules that need no login first: a new password that cannot be
	// taken costs no attempt at the current one.
	if err := validatePassword("", next); err != nil {
		return err
	}
	c, err := s.checkPassword(ctx, uid, current, addr, nil, "", true)
	if err != nil {
		if errors.Is(err, ErrInvalidCredentials) || errors.Is(err, ErrRateLimited) || errors.Is(err, ErrBusy) {
			return err
		}
		return fmt.Errorf("change password of %d: %w", uid, err)
	}
	if err := validatePassword(c.user.Login, next); err != nil {
		return err
	}
	hash, err := s.hashPassword(ctx, next)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return err
		}
		return fmt.Errorf("change password of %d: %w", uid, err)
	}
	// From the first write on, the change runs though the client goes: cut
	// short, it would leave the other sessions standing, and a retry with
	// the same password no longer matches.
	ctx, cancel := detached(ctx)
	defer cancel()
	n, err := setPasswordScript.Run(ctx, s.rdb, []string{s.keys.user(uid)}, hash).Int()
	if err != nil {
		return fmt.Errorf("change password of %d: %w", uid, err)
	}
	if n == 0 {
		return ErrUserNotFound
	}
	live, err := s.liveSessions(ctx, uid)
	if err != nil {
		return fmt.Errorf("change password of %d: %w", uid, err)
	}
	keep := hashToken(token)
	others := slices.DeleteFunc(live, func(id string) bool { return id == keep })
	if err := s.endSessions(ctx, uid, others); err != nil {
		return fmt.Errorf("change password of %d: %w", uid, err)
	}
	return nil
}

var (
	//go:embed set_password.lua
	setPasswordSource string
	setPasswordScript = newScript(setPasswordSource)
)

// standingFields are the fields of a user's hash that say whether their
// sessions may act (refuseFallen): the account is there, not being
// deleted, not suspended.
var standingFields = []string{"id", "deleted", "suspended"}

// queueStanding queues on pipe the read of uid's standing, for
// refuseFallen: one HMGET of the user's hash, in its own slot, which a
// pipeline sends to its node with the rest on a cluster too.
func (s *Service) queueStanding(ctx context.Context, pipe redis.Pipeliner, uid int64) *redis.SliceCmd {
	return pipe.HMGet(ctx, s.keys.user(uid), standingFields...)
}

// refuseFallen refuses session id of uid (ErrUnauthenticated) when
// standing (queueStanding) says uid's account is gone, being deleted or
// suspended. A suspension, or a deletion, writes its mark first and ends
// the sessions after: cut short between the two, it would leave sessions
// that act. The mark alone refuses them here, at every use, and the
// session refused is ended, as the change would have ended it (its streams
// told). A failure to end it is only logged: the next use refuses it again.
func (s *Service) refuseFallen(ctx context.Context, id string, uid int64, standing *redis.SliceCmd) error {
	v, err := standing.Result()
	if err != nil {
		return fmt.Errorf("authenticate: %w", err)
	}
	if len(v) == len(standingFields) && v[0] != nil && v[1] == nil && v[2] == nil {
		return nil
	}
	s.sessionUsers.Remove(id)
	if err := s.endSessions(ctx, uid, []string{id}); err != nil {
		s.opts.Logger.WarnContext(ctx, "could not end the session of an account suspended or deleted", "uid", uid, "err", err)
	}
	return ErrUnauthenticated
}
