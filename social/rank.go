package social

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// maxRankRounds bounds the rounds of syncRank: a round after the first is
// needed only for counts that follows changed while the last one ran.
const maxRankRounds = 5

// errRankMoving is syncRank's answer when counts still moved in its last
// round: the ranking may be off until syncRank runs again for those users.
var errRankMoving = errors.New("follower counts still moving")

// syncRank sets the ranking by followers of uids from the follower counts in
// their hashes: a user with followers scores their count, one with none (or
// no hash) leaves the ranking.
//
// On a cluster the ranking and the user hashes are in different slots, so
// no one step can read the counts and write the ranking. It writes the
// counts it read, then reads them again and writes again those that moved
// meanwhile, until none did. A follow that calls syncRank after changing a
// count therefore cannot leave the ranking off, whatever runs beside it:
// whoever writes a user's rank last has read the count again after writing
// and found what it wrote. That holds as long as every call that fails is
// made again: one that gave up (errRankMoving) may have written last. One
// uid costs three round trips when nothing races it.
func (s *Service) syncRank(ctx context.Context, uids ...int64) error {
	counts, err := s.followerCounts(ctx, uids)
	if err != nil {
		return fmt.Errorf("rank users: %w", err)
	}
	for range maxRankRounds {
		if err := s.writeRank(ctx, uids, counts); err != nil {
			return fmt.Errorf("rank users: %w", err)
		}
		again, err := s.followerCounts(ctx, uids)
		if err != nil {
			return fmt.Errorf("rank users: %w", err)
		}
		var movedUIDs, movedCounts []int64
		for i, uid := range uids {
			if again[i] != counts[i] {
				movedUIDs = append(movedUIDs, uid)
				movedCounts = append(movedCounts, again[i])
			}
		}
		if len(movedUIDs) == 0 {
			return nil
		}
		uids, counts = movedUIDs, movedCounts
	}
	return fmt.Errorf("rank users %v: %w after %d rounds", uids, errRankMoving, maxRankRounds)
}

// followerCounts reads the follower count of each of uids, 0 for a user
// without a hash, in one round trip.
func (s *Service) followerCounts(ctx context.Context, uids []int64) ([]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(uids))
	for i, uid := range uids {
		cmds[i] = pipe.HGet(ctx, s.keys.user(uid), "followers")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	counts := make([]int64, len(uids))
	for i, c := range cmds {
		counts[i], _ = c.Int64()
	}
	return counts, nil
}

// writeRank writes counts, those of uids, into the ranking in one round trip.
func (s *Service) writeRank(ctx context.Context, uids, counts []int64) error {
	var (
		ranked   []redis.Z
		unranked []any
	)
	for i, uid := range uids {
		if counts[i] > 0 {
			ranked = append(ranked, redis.Z{Score: float64(counts[i]), Member: uid})
		} else {
			unranked = append(unranked, uid)
		}
	}
	pipe := s.rdb.Pipeline()
	if len(ranked) > 0 {
		pipe.ZAdd(ctx, s.keys.popular(), ranked...)
	}
	if len(unranked) > 0 {
		pipe.ZRem(ctx, s.keys.popular(), unranked...)
	}
	_, err := pipe.Exec(ctx)
	return err
}
