package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
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
// (endSessions; Authenticate refuses them from the moment the account is
// marked), and it is hidden from every read: its profile, its statuses
// (timelines already written included, by a job whose first pass runs
// before Suspend returns), and others' reposts of them. It reports whether
// the account was not suspended already; an unknown uid is
// ErrUserNotFound. Once its first write is made it runs though ctx ends,
// and a call for an account suspended already takes the steps after that
// write again: a retry of a call that failed part way finishes it. Should
// no retry come, the job, queued before the account is marked, finishes it
// (see setSuspended).
func (s *Service) Suspend(ctx context.Context, uid int64) (bool, error) {
	return s.setSuspended(ctx, uid, true, "")
}

// Unsuspend lifts uid's suspension: its profile and statuses show again
// (by the same job), and it may sign in.
func (s *Service) Unsuspend(ctx context.Context, uid int64) (bool, error) {
	return s.setSuspended(ctx, uid, false, "")
}

// suspension is what a user's hash says of their suspension.
type suspension struct {
	exists    bool
	suspended bool
	rev       int64 // suspension_rev: the changes made so far, 0 for none
}

// suspensionOf reads uid's suspension.
func (s *Service) suspensionOf(ctx context.Context, uid int64) (suspension, error) {
	v, err := s.rdb.HMGet(ctx, s.keys.user(uid), "id", "suspended", "suspension_rev").Result()
	if err != nil {
		return suspension{}, err
	}
	r, _ := v[2].(string)
	rev, _ := strconv.ParseInt(r, 10, 64)
	return suspension{exists: v[0] != nil, suspended: v[1] != nil, rev: rev}, nil
}

// setSuspended makes uid's account suspended, or not, and has the job of
// its revision (hidePass) carry the rest out: the job's first pass, which
// setSuspended runs, closes the streams and ends the sessions of an
// account suspended, brings the admins' list into agreement
// (settleSuspension), then hides or shows the first page of statuses.
//
// The account's mark (suspend.lua) is its first write, and the job can be
// queued only once the mark gave it its revision: a call cut short between
// the two (the script's answer lost, the job's queueing failed) would
// leave a marked account with no job. So a job ahead is queued first,
// waiting for its maker (inputsPending): the maker takes it out once the
// revision's job is queued; left there, a worker takes the maker for dead
// after JobClaimIdle and runs it, and it queues the job of the account's
// revision, the mark made (see hideAheadPass). So after any one failure a
// marked account gets its steps taken, and Authenticate refuses its
// sessions meanwhile.
//
// record, when not "", is the change's audit record: the mark writes it
// with the change, pending for the log, and nothing when it makes no
// change (see flushAudit).
func (s *Service) setSuspended(ctx context.Context, uid int64, suspend bool, record string) (bool, error) {
	k := s.keys
	// From the first write on, the change runs though the client goes.
	ctx, cancel := detached(ctx)
	defer cancel()
	state, err := s.suspensionOf(ctx, uid)
	if err != nil {
		return false, fmt.Errorf("suspension of %d: %w", uid, err)
	}
	if !state.exists {
		return false, ErrUserNotFound
	}
	changed := false
	var ahead []string // the key of the job queued ahead of the mark, if one was
	if state.suspended != suspend {
		j := aheadJob(uid, state.rev+1)
		ahead = append(ahead, k.job(j.id()))
		rev, err := s.markSuspended(ctx, uid, suspend, j, record)
		if err != nil {
			return false, fmt.Errorf("suspension of %d: %w", uid, err)
		}
		changed = rev > 0
		if changed {
			state = suspension{exists: true, suspended: suspend, rev: rev}
		} else if state, err = s.suspensionOf(ctx, uid); err != nil {
			// Made so meanwhile by a call racing this one: read again for
			// its revision.
			return false, fmt.Errorf("suspension of %d: %w", uid, err)
		}
	}
	if state.suspended != suspend || state.rev <= 0 {
		// Changed back meanwhile (whose job takes the steps), or never
		// suspended: nothing to take.
		pipe := s.rdb.Pipeline()
		s.queueDropJobs(ctx, pipe, ahead...)
		if _, err := pipe.Exec(ctx); err != nil {
			return false, fmt.Errorf("suspension of %d: %w", uid, err)
		}
		return false, nil
	}
	if s.afterSuspendScript != nil {
		s.afterSuspendScript()
	}
	// The revision's job, queued unless it is (by a call taking the steps
	// again, or one racing this), replaces the job ahead: which is taken
	// out only once the revision's job is surely queued, a step after, so
	// that a queueing that failed leaves it to stand in.
	hide := job{kind: jobHide, uid: uid, payload: itoa(state.rev)}
	if err := s.queueJob(ctx, s.rdb, hide, inputsWritten).Err(); err != nil {
		return false, fmt.Errorf("suspension of %d: %w", uid, err)
	}
	if len(ahead) > 0 {
		pipe := s.rdb.Pipeline()
		s.queueDropJobs(ctx, pipe, ahead...)
		if _, err := pipe.Exec(ctx); err != nil {
			return false, fmt.Errorf("suspension of %d: %w", uid, err)
		}
	}
	if _, err := s.pass(ctx, k.job(hide.id())); err != nil {
		return false, fmt.Errorf("suspension of %d: %w", uid, err)
	}
	return changed, nil
}

// markSuspended queues j, the job ahead of the change, waiting for its
// maker, then marks uid's account suspended, or not, with the change's
// audit record (suspend.lua). It returns the account's new revision, 0
// when it was so already.
func (s *Service) markSuspended(ctx context.Context, uid int64, suspend bool, j job, record string) (int64, error) {
	if err := s.queueJob(ctx, s.rdb, j, inputsPending).Err(); err != nil {
		return 0, err
	}
	flag := "0"
	if suspend {
		flag = "1"
	}
	rev, err := suspendScript.Run(ctx, s.rdb, []string{s.keys.user(uid)}, flag, time.Now().UnixMilli(), record).Int64()
	switch {
	case err != nil:
		return 0, err
	case rev < 0:
		return 0, ErrUserNotFound
	}
	return rev, nil
}

// aheadPrefix starts the payload of a job ahead of a change of suspension
// (setSuspended): the revision the change is to give the account follows,
// then a nonce, so that two calls racing never share one (a job's id is
// its payload, see hideJobID). A build before these jobs reads none as its
// own revision, and finishes it.
const aheadPrefix = "ahead:"

// aheadJob is a job ahead of a change of uid's suspension to revision rev.
func aheadJob(uid, rev int64) job {
	return job{kind: jobHide, uid: uid, payload: aheadPrefix + itoa(rev) + ":" + strconv.FormatUint(rand.Uint64(), 36)}
}

// aheadRev reads the revision of a job ahead's payload; ok is false for
// the payload of any other hide job.
func aheadRev(payload string) (rev int64, ok bool) {
	rest, ok := strings.CutPrefix(payload, aheadPrefix)
	if !ok {
		return 0, false
	}
	r, _, _ := strings.Cut(rest, ":")
	rev, err := strconv.ParseInt(r, 10, 64)
	return rev, err == nil
}

// hideAheadPass runs a job ahead of a change of uid's suspension to
// revision rev, whose maker was taken for dead: when the account's
// revision is rev or later, the mark was made (or a later change's), and
// the job of the account's revision is queued, unless it is (a finished
// one again, which takes its steps again: each is idempotent). Else the
// mark was never made: nothing to do.
func (s *Service) hideAheadPass(ctx context.Context, uid, rev int64) (passResult, error) {
	state, err := s.suspensionOf(ctx, uid)
	if err != nil || state.rev < rev {
		return passResult{finished: err == nil}, err
	}
	hide := job{kind: jobHide, uid: uid, payload: itoa(state.rev)}
	return passResult{finished: true}, s.queueJob(ctx, s.rdb, hide, inputsWritten).Err()
}

// queueDropJobs queues on pipe the removal of the jobs (keys) queued
// waiting for their maker, that maker done with them: their hashes, and
// their places among the jobs being made. A worker that gave one an entry
// meanwhile finds it gone.
func (s *Service) queueDropJobs(ctx context.Context, pipe redis.Pipeliner, keys ...string) {
	if len(keys) == 0 {
		return
	}
	members := make([]any, len(keys))
	for i, key := range keys {
		members[i] = key
	}
	pipe.ZRem(ctx, s.keys.making(), members...)
	pipe.Del(ctx, keys...)
}

// settleSuspension takes the steps of the change of uid's suspension at
// revision rev besides its statuses: a suspension closes the account's
// streams on every instance (account_suspended) and ends its sessions;
// either brings the admins' list into agreement with the account, last,
// so that an account listed as suspended had its sessions ended. Each step
// is idempotent: a pass run again takes them again. It reports false,
// doing nothing, when rev is not the account's revision: a later change's
// job takes them, or the change was never made (see setSuspended).
func (s *Service) settleSuspension(ctx context.Context, uid int64, rev string) (bool, error) {
	state, err := s.rdb.HMGet(ctx, s.keys.user(uid), "suspended", "suspension_rev").Result()
	if err != nil {
		return false, err
	}
	if now, _ := state[1].(string); now != rev {
		return false, nil
	}
	if state[0] != nil {
		live, err := s.liveSessions(ctx, uid)
		if err != nil {
			return false, err
		}
		// The revision again, once the sessions are read: a lifting that
		// came since, whose sessions may be among live (signed in once it
		// lifted the mark), has none of them ended, nor its streams closed.
		// One coming after this read may see the sessions it opened end:
		// its user signs in again.
		if mine, err := s.stillRevision(ctx, uid, rev); err != nil || !mine {
			return false, err
		}
		if err := s.bus.Publish(ctx, s.bus.UserChannel(uid), accountSuspendedEvent); err != nil {
			return false, err
		}
		if err := s.endSessions(ctx, uid, live); err != nil {
			return false, err
		}
	}
	return true, s.syncSuspendedList(ctx, uid)
}

// stillRevision reports whether rev is still the revision of uid's
// suspension.
func (s *Service) stillRevision(ctx context.Context, uid int64, rev string) (bool, error) {
	now, err := s.rdb.HGet(ctx, s.keys.user(uid), "suspension_rev").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	return now == rev, nil
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
//
// Its first pass takes the change's other steps (settleSuspension); its
// last flushes the audit records pending in the account's hash.
//
// A job ahead of a change (setSuspended) waits for its maker, who takes it
// out; its maker taken for dead, it runs (hideAheadPass). The mark, the
// maker's one write before it, is not made again: a change asked for and
// never made is no change to make.
func (s *Service) hidePass(ctx context.Context, j job) (passResult, error) {
	k := s.keys
	if rev, ok := aheadRev(j.payload); ok {
		_, wait, err := s.makerDone(ctx, j, func() error { return nil })
		if err != nil || wait {
			return passResult{wait: wait}, err
		}
		return s.hideAheadPass(ctx, j.uid, rev)
	}
	if j.cursor == 0 {
		if mine, err := s.settleSuspension(ctx, j.uid, j.payload); err != nil || !mine {
			return passResult{finished: err == nil}, err
		}
	}
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
	step := s.pageStep(page, j)
	if step.finished {
		// The change's audit record, left pending by a call cut short
		// after its mark, goes to the log though no retry comes.
		if err := s.flushAudit(ctx, k.user(j.uid)); err != nil {
			return passResult{}, err
		}
	}
	return step, nil
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
