package social

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// queuePromotion queues the job that makes uid pulled, unless it is queued.
// Its first pass reads where it stops (see promotePass).
func (s *Service) queuePromotion(ctx context.Context, uid int64) error {
	return s.queueJob(ctx, s.rdb, job{kind: jobPromote, uid: uid}, inputsWritten).Err()
}

// promotePass runs one pass of an author's promotion to pulled: it adds the
// author to the pulled authors of the next page of followers, telling
// their instances, and at the end to the pulled authors, from the next
// status id on. Its first pass reads where it stops: the newest follow then.
// A follow that did not see the job had joined the followers by then, and
// one that saw it adds itself.
func (s *Service) promotePass(ctx context.Context, j job) (passResult, error) {
	k := s.keys
	uid := j.uid
	next := j
	if next.until == "" {
		v, err := s.rdb.Get(ctx, k.followSeq()).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return passResult{}, err
		}
		next.until = cmp.Or(v, "0")
	}
	page, err := s.jobPage(ctx, k.followers(uid), j.cursor, next.until)
	if err != nil {
		return passResult{}, err
	}
	members := pageMembers(page)
	if len(members) > 0 {
		frame, err := json.Marshal(protocol.Internal{Type: protocol.TypePullAdded, Author: uid})
		if err != nil {
			return passResult{}, err
		}
		// Each while they still follow (pull_add.lua, which tells their
		// instances): an unfollow's first step, between the page's read and
		// here, took the author out of their pulls, and its second takes
		// them out of the followers only after; a plain add would put the
		// author back in their pulls for good. The script goes by its hash;
		// the calls a Redis that lost it answered NOSCRIPT are sent again
		// once it is loaded.
		pipe := s.rdb.Pipeline()
		for _, m := range members {
			f, _ := strconv.ParseInt(m, 10, 64)
			pullAddScript.EvalSha(ctx, pipe, []string{k.following(f), k.pulls(f)},
				uid, s.bus.Command(), s.bus.UserChannel(f), frame)
		}
		cmds, err := pipe.Exec(ctx)
		if err := resendNoScript(ctx, s.rdb, pullAddScript, cmds, err); err != nil {
			return passResult{}, err
		}
	}
	res := s.pageStep(page, next)
	if res.finished {
		seq, err := s.rdb.Get(ctx, k.statusSeq()).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return passResult{}, err
		}
		if err := s.rdb.ZAddNX(ctx, k.pulledAuthors(), redis.Z{Score: float64(seq + 1), Member: uid}).Err(); err != nil {
			return passResult{}, err
		}
	}
	return res, nil
}
