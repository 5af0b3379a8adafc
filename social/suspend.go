package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// ErrSuspended: the account is suspended; it may not sign in or act.
var ErrSuspended = errors.New("account suspended")

var (
	//go:embed suspend.lua
	suspendSource string
	suspendScript = newScript(suspendSource)

	//go:embed hide_status.lua
	hideStatusSource string
	hideStatusScript = newScript(hideStatusSource)
)

var accountSuspendedEvent, _ = json.Marshal(protocol.Internal{Type: protocol.TypeAccountSuspended})

func hideJobID(uid int64, rev string) string { return "hide:" + itoa(uid) + ":" + rev }

// Suspend suspends account uid: it can no longer sign in (ErrSuspended),
// every stream of it closes at once on every instance, its sessions end
// (endSessions), and it is hidden from every read: its profile, its
// statuses (timelines already written included, by a job whose first pass
// runs before Suspend returns), and others' reposts of them. It reports
// whether the account was not suspended already; an unknown uid is
// ErrUserNotFound. Once its first write is made it runs though ctx ends,
// and a call for an account suspended already takes the steps after that
// write again: a retry of a call that failed part way finishes it.
func (s *Service) Suspend(ctx context.Context, uid int64) (bool, error) {
	return s.setSuspended(ctx, uid, true)
}

// Unsuspend lifts uid's suspension: its profile and statuses show again
// (by the same job), and it may sign in.
func (s *Service) Unsuspend(ctx context.Context, uid int64) (bool, error) {
	return s.setSuspended(ctx, uid, false)
}

func (s *Service) setSuspended(ctx context.Context, uid int64, suspend bool) (bool, error) {
	k := s.keys
	flag := "0"
	if suspend {
		flag = "1"
	}
	// From the first write on, the change runs though the client goes.
	ctx, cancel := detached(ctx)
	defer cancel()
	rev, err := suspendScript.Run(ctx, s.rdb, []string{k.user(uid)}, flag, time.Now().UnixMilli()).Int64()
	switch {
	case err != nil:
		return false, fmt.Errorf("suspension of %d: %w", uid, err)
	case rev < 0:
		return false, ErrUserNotFound
	}
	changed := rev > 0
	if !changed {
		// So already: the steps below are taken again, for a call that
		// failed after the script (each is idempotent), while the account
		// is still as asked.
		state, err := s.rdb.HMGet(ctx, k.user(uid), "suspended", "suspension_rev").Result()
		if err != nil {
			return false, fmt.Errorf("suspension of %d: %w", uid, err)
		}
		r, _ := state[1].(string)
		if rev, _ = strconv.ParseInt(r, 10, 64); rev <= 0 || (state[0] != nil) != suspend {
			return false, nil
		}
	}
	if s.afterSuspendScript != nil {
		s.afterSuspendScript()
	}
	hide := job{kind: jobHide, uid: uid, payload: itoa(rev)}
	pipe := s.rdb.Pipeline()
	if suspend {
		s.bus.Queue(ctx, pipe, s.bus.UserChannel(uid), string(accountSuspendedEvent))
	}
	s.queueJob(ctx, pipe, hide, inputsWritten)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("suspension of %d: %w", uid, err)
	}
	if err := s.syncSuspendedList(ctx, uid); err != nil {
		return false, fmt.Errorf("suspension of %d: %w", uid, err)
	}
	if suspend {
		live, err := s.liveSessions(ctx, uid)
		if err == nil {
			err = s.endSessions(ctx, uid, live)
		}
		if err != nil {
			return false, fmt.Errorf("suspension of %d: %w", uid, err)
		}
	}
	s.inlinePass(ctx, k.job(hide.id()))
	return changed, nil
}

// syncSuspendedList makes the admins' list of suspended accounts agree
// about uid with the account's own flag (its value the time it was set),
// which the suspension script writes first (mirrorMember), the list's
// only writer: a suspension and its lifting racing each other write the
// list in either order.
func (s *Service) syncSuspendedList(ctx context.Context, uid int64) error {
	k := s.keys
	err := s.mirrorMember(ctx, k.suspended(), itoa(uid), func() (float64, error) {
		return s.rdb.HGet(ctx, k.user(uid), "suspended").Float64()
	}, nil)
	if err != nil {
		return fmt.Errorf("the suspension of %d: %w", uid, err)
	}
	return nil
}

// Suspended returns the suspended accounts, most recently suspended first,
// as admins see them: a page of at most limit from offset.
func (s *Service) Suspended(ctx context.Context, p Page) ([]User, error) {
	ids, err := s.rdb.ZRevRange(ctx, s.keys.suspended(), int64(p.Offset), int64(p.Offset+p.Limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("suspended accounts: %w", err)
	}
	users, err := s.usersByIDAll(ctx, parseIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("suspended accounts: %w", err)
	}
	return users, nil
}

// maxHideRounds bounds how often one pass writes its page again for a
// suspension changed meanwhile.
const maxHideRounds = 3

// hidePass hides (or shows) the next page of an account's statuses, as
// the account's suspension says. A job whose revision is no longer the
// account's finishes: the later change's job walks every status. Its page
// is written again after a change that raced it, so that a later job which
// passed the page first is not undone.
func (s *Service) hidePass(ctx context.Context, j job) (passResult, error) {
	k := s.keys
	page, err := s.jobPage(ctx, k.profile(j.uid), j.cursor, "+inf")
	if err != nil {
		return passResult{}, err
	}
	rev := j.payload
	for round := 0; ; round++ {
		state, err := s.rdb.HMGet(ctx, k.user(j.uid), "suspended", "suspension_rev").Result()
		if err != nil {
			return passResult{}, err
		}
		hidden, _ := state[0].(string)
		now, _ := state[1].(string)
		if now != rev {
			if round == 0 {
				return passResult{finished: true}, nil
			}
			if round == maxHideRounds {
				return passResult{finished: true}, nil // the latest job writes this page too
			}
		}
		rev = now
		flag := "0"
		if hidden != "" {
			flag = "1"
		}
		pipe := s.rdb.Pipeline()
		for _, z := range page {
			id, _ := z.Member.(string)
			sid, _ := strconv.ParseInt(id, 10, 64)
			hideStatusScript.Eval(ctx, pipe, []string{k.status(sid)}, flag)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return passResult{}, err
		}
		after, err := s.rdb.HGet(ctx, k.user(j.uid), "suspension_rev").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return passResult{}, err
		}
		if after == rev {
			break
		}
	}
	if rev != j.payload {
		return passResult{finished: true}, nil
	}
	return s.pageStep(page, j), nil
}

// errAccountGone: the account acting was deleted, or its deletion began,
// as its request wrote (a status, a follow, a like, a block or a mute),
// and what it wrote was taken back. A request answers it as the ended
// session it is (ErrUnauthenticated).
var errAccountGone = fmt.Errorf("the account was deleted: %w", ErrUnauthenticated)

// goneFields are the fields of a user's hash that accountGone reads.
var goneFields = []string{"id", "deleted"}

// accountGone reports whether goneFields, as read, say the account is gone
// (no id) or being deleted (the deleted mark).
func accountGone(v []any) bool { return len(v) != 2 || v[0] == nil || v[1] != nil }

// authorLook are the fields of an author's hash that a post looks at again
// once its status is written (settleAuthor).
var authorLook = []string{"login", "suspended", "deleted"}

// queueAuthorLook queues on pipe the read settleAuthor needs of uid.
func (s *Service) queueAuthorLook(ctx context.Context, pipe redis.Pipeliner, uid int64) *redis.SliceCmd {
	return pipe.HMGet(ctx, s.keys.user(uid), authorLook...)
}

// settleAuthor makes status sid, written where its author uid owns it,
// agree with what the account became after the post checked it (in its
// first round trip), as look (queueAuthorLook, read after the write) says.
// A suspension's job, or an account deletion's, that read the author's
// statuses before sid was among them passed it over; their suspension or
// mark came before that read, so before look. A deleted account's status
// is taken back (remove) and the post answered errAccountGone, an
// ErrUnauthenticated (the deletion ended its session); a suspended one's
// is hidden, as the suspension's job hides the rest.
func (s *Service) settleAuthor(ctx context.Context, uid, sid int64, look []any, remove func() error) error {
	if len(look) != len(authorLook) {
		return nil
	}
	login, _ := look[0].(string)
	suspended, _ := look[1].(string)
	deleted, _ := look[2].(string)
	switch {
	case login == "" || deleted != "":
		if err := remove(); err != nil && !errors.Is(err, ErrStatusNotFound) {
			return err
		}
		return errAccountGone
	case suspended != "":
		return s.settleHidden(ctx, uid, sid)
	}
	return nil
}

// settleAuthorOf is settleAuthor for post sid, deleted as DeleteStatus
// deletes it. Its jobs are ready, maybe done, by then, so no redo comes
// after: ctx should be detached from the request.
func (s *Service) settleAuthorOf(ctx context.Context, uid, sid int64, look []any) error {
	return s.settleAuthor(ctx, uid, sid, look, func() error { return s.DeleteStatus(ctx, uid, sid) })
}

// settleTimeout bounds what a post does once its jobs are ready.
const settleTimeout = 30 * time.Second

// detached is ctx without its end (a request's deadline, a client gone),
// bounded by settleTimeout instead: for the steps after which no redo
// comes.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// settleHidden hides status sid, or shows it, as its author's suspension
// says, and again while the suspension's revision moves across the write,
// as hidePass does a page: a later change's job that passed sid before
// this write is not undone. After maxHideRounds the latest change's job,
// which reads the statuses after sid was written, settles it.
func (s *Service) settleHidden(ctx context.Context, uid, sid int64) error {
	k := s.keys
	for range maxHideRounds {
		state, err := s.rdb.HMGet(ctx, k.user(uid), "suspended", "suspension_rev").Result()
		if err != nil {
			return err
		}
		flag := "0"
		if v, _ := state[0].(string); v != "" {
			flag = "1"
		}
		if err := hideStatusScript.Run(ctx, s.rdb, []string{k.status(sid)}, flag).Err(); err != nil {
			return err
		}
		after, err := s.rdb.HGet(ctx, k.user(uid), "suspension_rev").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if rev, _ := state[1].(string); after == rev {
			return nil
		}
	}
	return nil
}
