package social

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// dropReactionsJobID names the drop_reactions job of deleted status sid.
func dropReactionsJobID(sid int64) string { return "reactions:drop:" + itoa(sid) }

// queueDropReactions queues on pipe, not ready (see DeleteStatus), the
// drop_reactions job of status sid by uid that is being deleted: of is
// the original when sid is a repost entry, else 0. payload is the
// deletion's frame, for the job's redo of writeDelete. It returns the
// job's key.
func (s *Service) queueDropReactions(ctx context.Context, pipe redis.Pipeliner, uid, sid, of int64, payload string) string {
	j := job{kind: jobDropReactions, uid: uid, sid: sid, of: of, payload: payload}
	s.queueJob(ctx, pipe, j, inputsPending)
	return s.keys.job(j.id())
}

// dropReactionsPass runs one pass of a drop_reactions job, once the status
// is deleted (as a delete job, it redoes writeDelete for a maker that
// died). For a repost entry, it takes the reposter's claim on the original
// back (if it still names the entry) and the reposted notification, and
// ends. For a status, each pass takes up to FanoutPassSize of its reposts
// out, every entry deleted as DeleteStatus deletes one (with its own
// cleanup jobs, queued ready), then, up to FanoutPassSize in all, its
// likes out of the likers' liked sets; the reposted and liked
// notifications go with them (quietly: the author's streams have the
// status_deleted frame). It ends at a short page. A pass takes out what
// it did from the status's sets last, so a pass run twice finds and does
// it again, which changes nothing. A like or a repost
// written after the status was deleted takes itself back (see Like,
// writeRepost).
func (s *Service) dropReactionsPass(ctx context.Context, j job) (passResult, error) {
	uid, sid := j.uid, j.sid
	if uid == 0 || sid == 0 {
		return passResult{finished: true}, nil // names no status
	}
	next, wait, err := s.makerDone(ctx, j, func() error { return s.writeDelete(ctx, uid, sid, []byte(j.payload)) })
	if err != nil || wait {
		return passResult{wait: wait}, err
	}
	k := s.keys
	if j.of != 0 {
		if err := s.dropRepostClaim(ctx, uid, sid, j.of); err != nil {
			return passResult{}, err
		}
		return passResult{finished: true, reached: 1}, nil
	}
	n := int64(s.opts.FanoutPassSize)
	reposts, err := s.rdb.ZRangeWithScores(ctx, k.reposts(sid), 0, n-1).Result()
	if err != nil {
		return passResult{}, err
	}
	if len(reposts) > 0 {
		if err := s.dropReposts(ctx, uid, sid, reposts); err != nil {
			return passResult{}, err
		}
	}
	left := n - int64(len(reposts))
	if left == 0 {
		return passResult{next: next, reached: n}, nil
	}
	likers, err := s.rdb.ZRange(ctx, k.likes(sid), 0, left-1).Result()
	if err != nil {
		return passResult{}, err
	}
	reached := int64(len(reposts) + len(likers))
	if len(likers) == 0 {
		return passResult{finished: true, reached: reached}, nil
	}
	pipe := s.rdb.Pipeline()
	for _, m := range likers {
		if liker, err := strconv.ParseInt(m, 10, 64); err == nil {
			pipe.ZRem(ctx, k.liked(liker), sid)
			s.queueUnnotify(ctx, pipe, note{to: uid, from: liker, kind: protocol.NotifyLiked, sid: sid, quiet: true})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return passResult{}, err
	}
	if err := s.rdb.ZRem(ctx, k.likes(sid), anys(likers)...).Err(); err != nil {
		return passResult{}, err
	}
	// A full page may have left more; a short one took the last.
	return passResult{finished: int64(len(likers)) < left, next: next, reached: reached}, nil
}

// dropReposts deletes the repost entries of deleted status orig by author
// in page (reposts members: uid -> entry id) as DeleteStatus would: each
// entry's hash first, then where its reposter owns it (writeDelete), with
// the reposted notification to author, then its delete and list_delete
// jobs, ready at once, which take it out of the reposters' followers' home
// timelines and lists (the list_delete job when the reposter's list:in,
// read once the hash is gone, holds a list); last, the claims.
func (s *Service) dropReposts(ctx context.Context, author, orig int64, page []redis.Z) error {
	k := s.keys
	type entry struct {
		uid, id int64
		inLists *redis.IntCmd
		payload string
	}
	entries := make([]entry, 0, len(page))
	members := make([]any, len(page))
	pipe := s.rdb.Pipeline()
	for i, z := range page {
		members[i] = z.Member
		m, _ := z.Member.(string)
		uid, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			continue
		}
		e := entry{uid: uid, id: int64(z.Score)}
		frame, err := json.Marshal(protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: e.id})
		if err != nil {
			return err
		}
		e.payload = string(frame)
		pipe.Del(ctx, k.status(e.id))
		entries = append(entries, e)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	pipe = s.rdb.Pipeline()
	for i := range entries {
		e := &entries[i]
		// Read once the entry's hash is gone: a list that took the
		// reposter in after this read backfills no entry, or takes back
		// the one it copied, seeing it gone (see listsAgain).
		e.inLists = pipe.ZCard(ctx, k.listsIn(e.uid))
		deleteAuthorScript.Eval(ctx, pipe, []string{k.user(e.uid), k.profile(e.uid), k.home(e.uid)},
			e.id, s.bus.Command(), s.bus.UserChannel(e.uid), e.payload)
		pipe.ZRem(ctx, k.pulledStatuses(), pulledMember(e.id, e.uid))
		// Quietly, as the likes': the author's streams have the
		// status_deleted frame.
		s.queueUnnotify(ctx, pipe, note{to: author, from: e.uid, kind: protocol.NotifyReposted, sid: orig, quiet: true})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	pipe = s.rdb.Pipeline()
	for _, e := range entries {
		cleanup := job{kind: jobDelete, uid: e.uid, sid: e.id, payload: e.payload}
		s.queueJob(ctx, pipe, cleanup, inputsWritten)
		if e.inLists.Val() > 0 {
			cleanup.kind = jobListDelete
			s.queueJob(ctx, pipe, cleanup, inputsWritten)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	return s.rdb.ZRem(ctx, k.reposts(orig), members...).Err()
}

// anys converts strings to the arguments of a command.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// dropRepostClaim takes back uid's claim on original of where it names
// repost entry sid, and the reposted notification when uid holds no claim
// then: one that names a later entry is that repost's.
//
// The original's author is read first. With the original gone (deleted:
// its hash goes before its drop_reactions job pages its claims), the claim
// is left to that job, which takes back the notification of each claim it
// finds; taken here, the job would not find it, nor could this take back
// a notification whose recipient it no longer knows.
func (s *Service) dropRepostClaim(ctx context.Context, uid, sid, of int64) error {
	k := s.keys
	to, err := s.rdb.HGet(ctx, k.status(of), "uid").Int64()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	none, err := repostUnclaimScript.Run(ctx, s.rdb, []string{k.reposts(of)}, uid, sid).Int()
	if err != nil {
		return err
	}
	if to == uid {
		return nil // no notification
	}
	if none == 1 {
		if s.afterUnclaim != nil {
			s.afterUnclaim()
		}
		// The claim first, then the notification: notifyWhile stores,
		// then looks at the claim, so one side or the other takes it back.
		pipe := s.rdb.Pipeline()
		s.queueUnnotify(ctx, pipe, note{to: to, from: uid, kind: protocol.NotifyReposted, sid: of})
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	// Also when a later claim stood already: a try before this one may
	// have taken the notification and failed before renotifying.
	return s.renotifyRepost(ctx, uid, of)
}

// renotifyRepost notifies again uid's repost of original of that stands
// now, if one does: a repost made between a take-back's two steps found
// the cause of the notification the take-back then took (the same cause:
// "reposted", uid, of) still stored, and stored none of its own. As
// writeRepost notifies, and nothing twice.
func (s *Service) renotifyRepost(ctx context.Context, uid, of int64) error {
	k := s.keys
	eid, err := s.rdb.ZScore(ctx, k.reposts(of), itoa(uid)).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	e := pipe.HMGet(ctx, k.status(int64(eid)), statusFields...)
	o := pipe.HMGet(ctx, k.status(of), statusFields...)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	// Either gone: its own take-back, or the original's deletion, has it.
	// A hidden one counts as there: a suspension may be undone, and reads
	// leave out what a suspended user sent.
	entry, ok := parseStatus(shown(e.Val()))
	orig, there := parseStatus(shown(o.Val()))
	if !ok || !there {
		return nil
	}
	n := note{to: orig.UID, from: uid, kind: protocol.NotifyReposted, sid: of, at: entry.Posted,
		fromUser: protocol.User{ID: uid, Login: entry.Login, Name: entry.Name}, status: &orig}
	return s.notifyWhile(ctx, n, k.reposts(of), itoa(uid))
}

// shown is a status hash's statusFields as parseStatus reads them, with its
// "hidden" field (the last) left out.
func shown(v []any) []any {
	v[len(v)-1] = nil
	return v
}
