package social

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// The passes of the list jobs, run from Go (see jobs.go): the lists that
// hold the author are in their list:in, in the author's slot; each list's
// timeline is in the list's. A pass pages list:in, writes each list's
// timeline, then checks what could have changed under the writes and takes
// back what no longer stands. Every write is idempotent, so a pass run
// twice leaves the same timelines.

// listsAgain is a status's second read of its author's list:in, for a
// status (or a deletion) whose list job was not queued with its other
// jobs because no list held the author at its first read. It is queued in
// a round trip that comes after the status's write (or deletion) and that
// the status makes anyway: an add of the author to a list between the two
// reads may have run its backfill before that write, so that the list
// lacks the status (or, for a deletion, keeps it), and no job would reach
// the list. A read that finds a list then queues the list job, ready, one
// round trip more in that race alone.
//
// Either this read sees the list, or the add wrote list:in after it, and
// so after the write: its backfill, which reads the author's profile after
// list:in, copies the status (and checks after copying that it is still
// there, so it copies no deleted one).
type listsAgain struct {
	job job           // the list job to queue
	in  *redis.IntCmd // list:in's size
}

// queueListsAgain queues on pipe the read of listsAgain for list job j of
// a status, unless the job was queued already (queued, its key; "" when
// not): nil then.
func (s *Service) queueListsAgain(ctx context.Context, pipe redis.Pipeliner, j job, queued string) *listsAgain {
	if queued != "" {
		return nil
	}
	return &listsAgain{job: j, in: pipe.ZCard(ctx, s.keys.listsIn(j.uid))}
}

// queue queues l's list job, ready (its status is written, or deleted),
// when list:in held a list, or could not be read; it returns the job's
// key, "" for none. The status is written (or deleted) and its other jobs
// queued: a failure here is logged, not returned, since a retry of the
// request would post the status twice (and the list keeps what its
// backfill made of it).
func (l *listsAgain) queue(ctx context.Context, s *Service) string {
	if l == nil || l.in.Err() == nil && l.in.Val() == 0 {
		return ""
	}
	if err := s.queueJob(ctx, s.rdb, l.job, inputsWritten).Err(); err != nil {
		s.opts.Logger.ErrorContext(ctx, "could not queue the list job of a status whose author a list took in meanwhile",
			"status", l.job.sid, "uid", l.job.uid, "kind", l.job.kind, "err", err)
		return ""
	}
	return s.keys.job(l.job.id())
}

// markReadyForLists marks jobs ready, as markReady does, once a status is
// written (or deleted), with its list job j when that was queued with
// them (listJob, its key; "" when not). When not, the author's list:in is
// read again in the same round trip, and j queued, ready, if a list took
// them in meanwhile (see listsAgain). It returns the list job's key, ""
// for none.
func (s *Service) markReadyForLists(ctx context.Context, j job, listJob string, jobs ...string) (string, error) {
	keys := s.flagKeys(slices.DeleteFunc(append(slices.Clone(jobs), listJob), func(k string) bool { return k == "" })...)
	// By its hash, as markReady sends it, and by its text again when Redis
	// lost the script (a pipeline's EVALSHA cannot fall back to EVAL).
	pipe := s.rdb.Pipeline()
	flagged := flagJobsScript.EvalSha(ctx, pipe, keys, "ready")
	again := s.queueListsAgain(ctx, pipe, j, listJob)
	_, err := pipe.Exec(ctx)
	switch {
	case redis.HasErrorPrefix(flagged.Err(), "NOSCRIPT"):
		err = flagJobsScript.Eval(ctx, s.rdb, keys, "ready").Err() // its text: the hash was just refused
	case flagged.Err() == nil:
		err = nil // a failed read again is queue's to answer
	}
	if err != nil {
		return "", err
	}
	if late := again.queue(ctx, s); late != "" {
		return late, nil
	}
	return listJob, nil
}

// listPostPass runs one pass of a list_post job: status "sid" by "uid"
// into the timeline of each list that has held uid since no later than
// "until" (a list:member:seq value), FanoutPassSize lists a pass, from just
// past "cursor"; the job ends once the status is deleted, and at its first
// pass when uid is pulled.
//
// A job queued without until gets it on its first pass, read after the
// status is in its author's profile (the job is queued after), so a
// membership with a higher score began after that and its backfill copies
// the status (see AddListMember).
//
// After writing, the pass checks the status, each list, and the author's
// membership of it, and takes back what no longer stands: a status deleted
// meanwhile (its cleanup job may have passed those lists already), a list
// deleted meanwhile, or marked deleted (its timeline, deleted before the
// write or due to be, is deleted again, and so is its stale place in
// list:in), a membership ended
// meanwhile (RemoveListMember's walk may have read the timeline before the
// write). Each of those ends is written before its cleanup reads, so either
// the check here sees it or the cleanup comes after the write.
func (s *Service) listPostPass(ctx context.Context, j job) (passResult, error) {
	uid, sid := j.uid, j.sid
	if uid == 0 || sid == 0 {
		return passResult{finished: true}, nil // names no author or status
	}
	// Queued before the status was written (see queuePost), the job waits
	// until it is; a job whose maker died writes the status from its frame,
	// as the post job does.
	var frame protocol.StatusFrame
	if !j.ready && json.Unmarshal([]byte(j.payload), &frame) != nil {
		return passResult{finished: true}, nil // not a job Post queued
	}
	next, wait, err := s.makerDone(ctx, j, func() error { return s.rewriteUnlessDeleted(ctx, j, frame.Status, []byte(j.payload)) })
	if errors.Is(err, errDeletedMeanwhile) {
		return passResult{finished: true}, nil
	}
	if err != nil || wait {
		return passResult{wait: wait}, err
	}
	k := s.keys
	until := j.until
	pipe := s.rdb.Pipeline()
	exists := pipe.Exists(ctx, k.status(sid))
	var seq *redis.StringCmd
	var pulled *redis.FloatCmd
	var inLists, promoting *redis.IntCmd
	if until == "" {
		seq = pipe.Get(ctx, k.listMemberSeq())
		pulled = pipe.ZScore(ctx, k.pulledAuthors(), itoa(uid))
		inLists = pipe.ZCard(ctx, k.listsIn(uid))
		promoting = pipe.Exists(ctx, k.job(promoteJobID(uid)))
	}
	// A pulled author's missing score (redis.Nil) must not hide another
	// command's failure (see below).
	cmds, _ := pipe.Exec(ctx)
	if err := firstErr(cmds); err != nil {
		return passResult{}, err
	}
	if exists.Val() == 0 {
		return passResult{finished: true}, nil
	}
	if seq != nil {
		// A pulled author's statuses are merged into list reads (see
		// ListTimeline): the job, queued before the author was pulled,
		// writes nothing.
		if pulled.Err() == nil {
			return passResult{finished: true}, nil
		}
		// An author in as many lists as the pull threshold is made pulled,
		// as one with that many followers is: list fan-out is bounded by
		// the threshold as home fan-out is. This status is still written.
		if t := s.opts.PullThreshold; t > 0 && inLists.Val() >= int64(t) && promoting.Val() == 0 {
			if err := s.queuePromotion(ctx, uid); err != nil {
				return passResult{}, err
			}
		}
		until = cmp.Or(seq.Val(), "0")
		next.until = until
	}
	page, err := s.jobPage(ctx, s.keys.listsIn(uid), j.cursor, until)
	if err != nil {
		return passResult{}, err
	}
	if len(page) == 0 {
		return s.pageStep(page, next), nil
	}
	lists := make([]int64, len(page))
	pipe = s.rdb.Pipeline()
	z := redis.Z{Score: float64(sid), Member: sid}
	for i, p := range page {
		member, _ := p.Member.(string)
		lists[i], _ = strconv.ParseInt(member, 10, 64)
		timeline := k.listStatuses(lists[i])
		pipe.ZAdd(ctx, timeline, z)
		pipe.ZRemRangeByRank(ctx, timeline, 0, int64(-s.opts.HomeSize-1))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return passResult{}, err
	}

	pipe = s.rdb.Pipeline()
	exists = pipe.Exists(ctx, k.status(sid))
	listed := make([]*redis.SliceCmd, len(lists))
	member := make([]*redis.FloatCmd, len(lists))
	for i, id := range lists {
		listed[i] = pipe.HMGet(ctx, k.list(id), "id", "deleted")
		member[i] = pipe.ZScore(ctx, k.listMembers(id), itoa(uid))
	}
	// Exec answers only the first error: a missing member (redis.Nil)
	// would hide another command's failure, whose empty answer would read
	// as a list or a status gone.
	cmds, _ = pipe.Exec(ctx)
	if err := firstErr(cmds); err != nil {
		return passResult{}, err
	}
	pipe = s.rdb.Pipeline()
	if exists.Val() == 0 {
		for _, id := range lists {
			pipe.ZRem(ctx, k.listStatuses(id), sid)
		}
		_, err := pipe.Exec(ctx)
		return passResult{finished: true, reached: int64(len(lists))}, err
	}
	for i, id := range lists {
		// A list marked deleted is gone: its deletion, maybe cut short
		// after the mark, deletes its timeline only when it runs again.
		f := listed[i].Val()
		switch {
		case f[0] == nil || f[1] != nil:
			pipe.Del(ctx, k.listStatuses(id))
		case errors.Is(member[i].Err(), redis.Nil):
			pipe.ZRem(ctx, k.listStatuses(id), sid)
		default:
			continue
		}
		// The score read from list:in belongs to a membership now seen
		// ended: it goes, unless a later one wrote another since.
		listLeaveScript.Eval(ctx, pipe, []string{k.listsIn(uid)}, id, int64(page[i].Score))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return passResult{}, err
	}
	return s.pageStep(page, next), nil
}

// listDeletePass runs one pass of a list_delete job: status "sid" out of
// the timeline of each list that holds "uid", FanoutPassSize lists a pass,
// from just past "cursor". A list that took uid in after the status was
// deleted never got it: its backfill and list_post passes check the status
// after writing. A status uid posted once pulled went to no list (as to no
// home timeline; see deletePass): the job ends at its first pass.
func (s *Service) listDeletePass(ctx context.Context, j job) (passResult, error) {
	uid, sid := j.uid, j.sid
	if uid == 0 || sid == 0 {
		return passResult{finished: true}, nil // names no author or status
	}
	// As a list_post job, it waits for the deletion to be written.
	next, wait, err := s.makerDone(ctx, j, func() error { return s.writeDelete(ctx, uid, sid, []byte(j.payload)) })
	if err != nil || wait {
		return passResult{wait: wait}, err
	}
	// A status its author posted once pulled was written to no list.
	if j.cursor == 0 {
		since, err := s.rdb.ZScore(ctx, s.keys.pulledAuthors(), itoa(uid)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return passResult{}, err
		}
		if err == nil && float64(sid) >= since {
			return passResult{finished: true}, nil
		}
	}
	page, err := s.jobPage(ctx, s.keys.listsIn(uid), j.cursor, "+inf")
	if err != nil {
		return passResult{}, err
	}
	pipe := s.rdb.Pipeline()
	for _, p := range page {
		member, _ := p.Member.(string)
		if id, err := strconv.ParseInt(member, 10, 64); err == nil {
			pipe.ZRem(ctx, s.keys.listStatuses(id), sid)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return passResult{}, err
	}
	return s.pageStep(page, next), nil
}
