package social

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// PulledAuthorsOf is PulledAuthors of each of uids, in one round trip
// whatever their number: the hub reads them again for its streams' users
// after its pub/sub connection was lost, with the pull_added and
// pull_removed it may have missed meanwhile.
func (s *Service) PulledAuthorsOf(ctx context.Context, uids []int64) ([][]int64, error) {
	out := make([][]int64, len(uids))
	if len(uids) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	reads := make([]*redis.StringSliceCmd, len(uids))
	for i, uid := range uids {
		reads[i] = pipe.ZRange(ctx, s.keys.pulls(uid), 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("pulled authors of %d users: %w", len(uids), err)
	}
	for i, r := range reads {
		out[i] = parseIDs(r.Val())
	}
	return out, nil
}
