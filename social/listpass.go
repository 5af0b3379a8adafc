package social

import (
	"context"
	"encoding/json"
	"errors"
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

// listJobFields reads the author and the status of a list job; ok is false
// when the job names neither, which leaves nothing to do.
func listJobFields(j job) (uid, sid int64, ok bool) {
	uid, uerr := strconv.ParseInt(j.f["uid"], 10, 64)
	sid, serr := strconv.ParseInt(j.f["sid"], 10, 64)
	return uid, sid, uerr == nil && serr == nil
}

// listPostPass runs one pass of a list_post job: status "sid" by "uid"
// into the timeline of each list that has held uid since no later than
// "until" (a list:member:seq value), FanoutPassSize lists a pass, from just
// past "cursor"; the job ends once the status is deleted.
//
// A job queued without until gets it on its first pass, read after the
// status is in its author's profile (the job is queued after), so a
// membership with a higher score began after that and its backfill copies
// the status (see AddListMember).
//
// After writing, the pass checks the status, each list, and the author's
// membership of it, and takes back what no longer stands: a status deleted
// meanwhile (its cleanup job may have passed those lists already), a list
// deleted meanwhile (its timeline, deleted before the write, is deleted
// again, and so is its stale place in list:in), a membership ended
// meanwhile (RemoveListMember's walk may have read the timeline before the
// write). Each of those ends is written before its cleanup reads, so either
// the check here sees it or the cleanup comes after the write.
func (s *Service) listPostPass(ctx context.Context, j job) (step, error) {
	uid, sid, ok := listJobFields(j)
	if !ok {
		return step{finished: true}, nil
	}
	// Queued before the status was written (see queuePost), the job waits
	// until it is; a job whose maker died writes the status from its frame,
	// as the post job does.
	var frame protocol.StatusFrame
	if j.f["ready"] == "" && json.Unmarshal([]byte(j.f["payload"]), &frame) != nil {
		return step{finished: true}, nil // not a job Post queued
	}
	set, wait, err := s.makerDone(ctx, j, func() error { return s.writePost(ctx, frame.Status, []byte(j.f["payload"])) })
	if err != nil || wait {
		return step{wait: wait}, err
	}
	k := s.keys
	until := j.f["until"]
	pipe := s.rdb.Pipeline()
	exists := pipe.Exists(ctx, k.status(sid))
	var seq *redis.StringCmd
	if until == "" {
		seq = pipe.Get(ctx, k.listMemberSeq())
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return step{}, err
	}
	if exists.Val() == 0 {
		return step{finished: true}, nil
	}
	if seq != nil {
		until = seq.Val()
		if until == "" {
			until = "0"
		}
		set["until"] = until
	}
	page, err := s.jobPage(ctx, s.keys.listsIn(uid), j.f["cursor"], until)
	if err != nil {
		return step{}, err
	}
	if len(page) == 0 {
		return s.pageStep(page, set), nil
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
		return step{}, err
	}

	pipe = s.rdb.Pipeline()
	exists = pipe.Exists(ctx, k.status(sid))
	listed := make([]*redis.IntCmd, len(lists))
	member := make([]*redis.FloatCmd, len(lists))
	for i, id := range lists {
		listed[i] = pipe.Exists(ctx, k.list(id))
		member[i] = pipe.ZScore(ctx, k.listMembers(id), itoa(uid))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return step{}, err
	}
	pipe = s.rdb.Pipeline()
	if exists.Val() == 0 {
		for _, id := range lists {
			pipe.ZRem(ctx, k.listStatuses(id), sid)
		}
		_, err := pipe.Exec(ctx)
		return step{finished: true, reached: int64(len(lists))}, err
	}
	for i, id := range lists {
		gone := listed[i].Val() == 0
		switch {
		case gone:
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
		return step{}, err
	}
	return s.pageStep(page, set), nil
}

// listDeletePass runs one pass of a list_delete job: status "sid" out of
// the timeline of each list that holds "uid", FanoutPassSize lists a pass,
// from just past "cursor". A list that took uid in after the status was
// deleted never got it: its backfill and list_post passes check the status
// after writing.
func (s *Service) listDeletePass(ctx context.Context, j job) (step, error) {
	uid, sid, ok := listJobFields(j)
	if !ok {
		return step{finished: true}, nil
	}
	// As a list_post job, it waits for the deletion to be written.
	set, wait, err := s.makerDone(ctx, j, func() error { return s.writeDelete(ctx, uid, sid, []byte(j.f["payload"])) })
	if err != nil || wait {
		return step{wait: wait}, err
	}
	page, err := s.jobPage(ctx, s.keys.listsIn(uid), j.f["cursor"], "+inf")
	if err != nil {
		return step{}, err
	}
	pipe := s.rdb.Pipeline()
	for _, p := range page {
		member, _ := p.Member.(string)
		if id, err := strconv.ParseInt(member, 10, 64); err == nil {
			pipe.ZRem(ctx, s.keys.listStatuses(id), sid)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return step{}, err
	}
	return s.pageStep(page, set), nil
}
