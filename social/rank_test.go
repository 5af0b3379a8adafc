package social

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// beforeRankWrite is a client hook that runs race once, just before the
// first pipeline that writes the ranking is sent.
type beforeRankWrite struct {
	popular string
	fired   atomic.Bool
	race    func(ctx context.Context)
}

func (h *beforeRankWrite) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeRankWrite) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *beforeRankWrite) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "zadd" && c.Args()[1] == h.popular && h.fired.CompareAndSwap(false, true) {
				h.race(ctx)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// A follow that changes a count and ranks it between syncRank's read and
// its write is not undone by the stale write.
func TestSyncRankRedoesAStaleWrite(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	u := signUp(t, s, "raced")
	if err := rdb.HSet(ctx, s.keys.user(u.ID), "followers", 3).Err(); err != nil {
		t.Fatal(err)
	}
	var raceErr error
	rdb.AddHook(&beforeRankWrite{popular: s.keys.popular(), race: func(ctx context.Context) {
		if raceErr = rdb.HIncrBy(ctx, s.keys.user(u.ID), "followers", 1).Err(); raceErr == nil {
			raceErr = s.syncRank(ctx, u.ID)
		}
	}})
	if err := s.syncRank(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if raceErr != nil {
		t.Fatal(raceErr)
	}
	if score, err := rdb.ZScore(ctx, s.keys.popular(), itoa(u.ID)).Result(); err != nil || score != 4 {
		t.Fatalf("ranks with %v (%v), want the 4 followers the race left", score, err)
	}
}

// syncRank leaves the ranking right while follower counts move under it,
// as long as each change is followed by a syncRank of its own and every
// call that fails is made again.
func TestSyncRankConvergesUnderRacingCounts(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	var uids []int64
	for i := range 2 {
		uids = append(uids, signUp(t, s, fmt.Sprintf("ranked%d", i)).ID)
	}
	rank := func(uids ...int64) {
		for {
			err := s.syncRank(ctx, uids...)
			if err == nil {
				return
			}
			if !errors.Is(err, errRankMoving) {
				t.Error(err)
				return
			}
		}
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	// Followers come and go, each change ranked by whoever made it...
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(i), 0))
			for range 60 {
				uid := uids[rnd.IntN(len(uids))]
				delta := int64(1)
				if rnd.IntN(3) == 0 {
					delta = -1
				}
				if err := rdb.HIncrBy(ctx, s.keys.user(uid), "followers", delta).Err(); err != nil {
					t.Error(err)
					return
				}
				rank(uid)
			}
		}()
	}
	// ...while index builds rank them all over and over.
	var sweeps sync.WaitGroup
	for range 3 {
		sweeps.Add(1)
		go func() {
			defer sweeps.Done()
			for !stop.Load() {
				rank(uids...)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	sweeps.Wait()

	counts, err := s.followerCounts(ctx, uids)
	if err != nil {
		t.Fatal(err)
	}
	for i, uid := range uids {
		score, err := rdb.ZScore(ctx, s.keys.popular(), itoa(uid)).Result()
		switch {
		case counts[i] > 0 && (err != nil || score != float64(counts[i])):
			t.Errorf("user %d has %d followers, ranks with %v (%v)", uid, counts[i], score, err)
		case counts[i] <= 0 && !errors.Is(err, redis.Nil):
			t.Errorf("user %d has %d followers, ranks with %v (%v), want out of the ranking", uid, counts[i], score, err)
		}
	}
}
