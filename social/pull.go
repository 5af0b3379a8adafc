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
		added := make([]*redis.IntCmd, len(members))
		pipe := s.rdb.Pipeline()
		for i, m := range members {
			f, _ := strconv.ParseInt(m, 10, 64)
			added[i] = pipe.ZAddNX(ctx, k.pulls(f), redis.Z{Score: page[i].Score, Member: uid})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return passResult{}, err
		}
		frame, err := json.Marshal(protocol.Internal{Type: protocol.TypePullAdded, Author: uid})
		if err != nil {
			return passResult{}, err
		}
		pipe = s.rdb.Pipeline()
		for i, m := range members {
			if added[i].Val() == 1 {
				f, _ := strconv.ParseInt(m, 10, 64)
				s.bus.Queue(ctx, pipe, s.bus.UserChannel(f), frame)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
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
