package social

import (
	"context"
	_ "embed"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed widen_refill.lua
	widenRefillSource string
	widenRefillScript = newScript(widenRefillSource)
)

// refillPass runs one pass of a refill: it copies into uid's home timeline
// (after an unfollow left it short, or for a user back after a long
// absence) the statuses of each followee older than "floor" (the lowest id
// home held when the job was queued, or +inf when it was empty: everything
// newer is there already), newest first, and once home is full only those
// newer than its lowest. A pass looks at up to RefillStep followees and
// copies up to RefillPassStatuses statuses; a followee cut short is resumed
// below "below", the lowest id copied from it ("part" names it), and
// "cursor" is the follow score of the last followee done. Of a pulled
// followee only the statuses from before it was pulled are copied, as its
// pushes would have brought them: reads merge the rest (a reader of many
// pulled authors reads only those posted once pulled, see pulled.go), and
// one made pulled while the reader was away had pushed them to no one.
func (s *Service) refillPass(ctx context.Context, j job) (passResult, error) {
	k := s.keys
	stepSize, budget := s.opts.RefillStep, s.opts.RefillPassStatuses
	home := k.home(j.uid)
	floor := "+inf"
	if j.floor != "" && j.floor != "+inf" {
		floor = "(" + j.floor
	}
	// One followee more than a pass looks at tells whether any remain.
	followees, err := s.rdb.ZRangeByScoreWithScores(ctx, k.following(j.uid), &redis.ZRangeBy{
		Min: "(" + score(j.cursor), Max: "+inf", Count: int64(stepSize + 1),
	}).Result()
	if err != nil {
		return passResult{}, err
	}
	names := make([]string, len(followees))
	for i, z := range followees {
		names[i], _ = z.Member.(string)
	}
	var pulled, since []float64
	if len(names) > 0 {
		pipe := s.rdb.Pipeline()
		pulls := pipe.ZMScore(ctx, k.pulls(j.uid), names...)
		starts := pipe.ZMScore(ctx, k.pulledAuthors(), names...)
		if _, err := pipe.Exec(ctx); err != nil {
			return passResult{}, err
		}
		pulled, since = pulls.Val(), starts.Val()
	}
	cursor, looked, copied := j.cursor, int64(0), 0
	next := func(part, below string) passResult {
		n := j
		n.cursor, n.part, n.below = cursor, part, below
		return passResult{next: n, reached: looked, copied: int64(copied)}
	}
	for i, z := range followees[:min(len(followees), stepSize)] {
		followee := names[i]
		if copied >= budget {
			return next("", ""), nil
		}
		below := floor
		if i == 0 && j.part == followee {
			below = "(" + j.below
		}
		looked++
		if pulled[i] != 0 && since[i] != 0 {
			below = belowPull(below, since[i])
		}
		f, _ := strconv.ParseInt(followee, 10, 64)
		n, last, done, err := s.copyBelow(ctx, home, k.profile(f), guard{k.following(j.uid), followee, j.uid},
			below, s.opts.HomeSize, budget-copied)
		if err != nil {
			return passResult{}, err
		}
		copied += n
		if !done {
			return next(followee, last), nil
		}
		cursor = z.Score
	}
	res := next("", "")
	res.finished = len(followees) <= stepSize
	return res, nil
}

// belowPull bounds below, a copy's exclusive upper bound ("+inf" or
// "(<id>"), to the statuses posted before an author was pulled, from the
// status id since on.
func belowPull(below string, since float64) string {
	pull := "(" + strconv.FormatFloat(since, 'f', -1, 64)
	if below == "+inf" {
		return pull
	}
	if id, err := strconv.ParseFloat(below[1:], 64); err == nil && id < since {
		return below
	}
	return pull
}

// rebuildWait bounds the passes of a returning user's rebuild that run for
// their first request; a worker does the rest.
const rebuildWait = time.Second

// rebuildsAtOnce bounds the rebuilds one AuthenticateMany runs side by
// side: the rest wait for a place, and those that find none before
// rebuildWait has passed are left to the workers.
const rebuildsAtOnce = 8

// rebuild runs the rebuild of uid's home timeline queued by Authenticate,
// for up to rebuildWait. Its failure is not the caller's: a worker carries
// the job on.
func (s *Service) rebuild(ctx context.Context, uid int64) {
	ctx, cancel := context.WithTimeout(ctx, rebuildWait)
	defer cancel()
	s.rebuildUntil(ctx, uid)
}

// rebuildMany runs the rebuilds AuthenticateMany queued, side by side
// (rebuildsAtOnce at a time) and for up to rebuildWait in all, so that a
// batch of streams waits about as long for many returning users as for
// one, and each batch's deadline stays its checks'.
func (s *Service) rebuildMany(ctx context.Context, uids []int64) {
	if len(uids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rebuildWait)
	defer cancel()
	places := make(chan struct{}, rebuildsAtOnce)
	var wg sync.WaitGroup
	for _, uid := range uids {
		select {
		case places <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return // the rest are the workers'
		}
		wg.Go(func() {
			defer func() { <-places }()
			s.rebuildUntil(ctx, uid)
		})
	}
	wg.Wait()
}

// rebuildUntil runs the passes of uid's rebuild until it finishes or ctx
// ends.
func (s *Service) rebuildUntil(ctx context.Context, uid int64) {
	key := s.keys.job(refillJobID(uid))
	for ctx.Err() == nil {
		res, err := s.pass(ctx, key)
		if err != nil {
			if ctx.Err() == nil {
				s.opts.Logger.WarnContext(ctx, "rebuild of a returning user's home failed; a worker will retry", "job", key, "err", err)
			}
			return
		}
		if res.finished {
			return
		}
		if res.wait && !sleepCtx(ctx, notReadyWait) {
			return
		}
	}
}
