package social

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Page selects part of a list: Limit items from Offset on.
type Page struct {
	Limit  int
	Offset int
}

// Followers lists those who follow the user with login, newest follow first:
// ErrUserNotFound for an account not shown (see shownUID).
func (s *Service) Followers(ctx context.Context, login string, p Page) ([]User, error) {
	uid, err := s.shownUID(ctx, login)
	if err != nil {
		return nil, err
	}
	return s.userList(ctx, s.keys.followers(uid), p)
}

// Following lists those whom the user with login follows, newest first:
// ErrUserNotFound for an account not shown (see shownUID).
func (s *Service) Following(ctx context.Context, login string, p Page) ([]User, error) {
	uid, err := s.shownUID(ctx, login)
	if err != nil {
		return nil, err
	}
	return s.userList(ctx, s.keys.following(uid), p)
}

// Friends lists uid's friends (mutual follows), newest friendship first.
func (s *Service) Friends(ctx context.Context, uid int64, p Page) ([]User, error) {
	return s.userList(ctx, s.keys.friends(uid), p)
}

func (s *Service) userList(ctx context.Context, key string, p Page) ([]User, error) {
	members, err := s.rdb.ZRevRange(ctx, key, int64(p.Offset), int64(p.Offset+p.Limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", key, err)
	}
	users, err := s.usersByID(ctx, parseIDs(members))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", key, err)
	}
	return users, nil
}

// Relation is how one user stands to another: whether each follows the
// other, and whether the asking user blocks or mutes them or is blocked by
// them. Friends follow each other.
type Relation struct {
	YouFollow  bool // the asking user follows them
	FollowsYou bool // they follow the asking user
	Blocking   bool // the asking user blocks them
	BlockedBy  bool // they block the asking user
	Muting     bool // the asking user mutes them
}

// Friends reports whether the two follow each other, and neither blocks
// the other (a block ends the follows: see block.go).
func (r Relation) Friends() bool {
	return r.YouFollow && r.FollowsYou && !r.Blocking && !r.BlockedBy
}

// Relations reports how uid stands to each of ids, in one round trip.
func (s *Service) Relations(ctx context.Context, uid int64, ids []int64) ([]Relation, error) {
	if len(ids) == 0 {
		return []Relation{}, nil
	}
	pipe := s.rdb.Pipeline()
	read := s.queueRelations(ctx, pipe, uid, ids)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("relations of %d to %d users: %w", uid, len(ids), err)
	}
	return read(), nil
}

// queueRelations queues on pipe Relations' reads of how uid stands to ids
// (not none), and returns what reads their answers once the pipeline ran.
func (s *Service) queueRelations(ctx context.Context, pipe redis.Pipeliner, uid int64, ids []int64) func() []Relation {
	members := make([]string, len(ids))
	for i, id := range ids {
		members[i] = itoa(id)
	}
	following := pipe.ZMScore(ctx, s.keys.following(uid), members...)
	followers := pipe.ZMScore(ctx, s.keys.followers(uid), members...)
	hid := s.queueHidden(ctx, pipe, uid, ids)
	return func() []Relation {
		// Follow scores come from a sequence and are never 0, block and
		// mute scores are times; a missing member reads 0.
		out := make([]Relation, len(ids))
		for i := range ids {
			out[i] = Relation{YouFollow: following.Val()[i] != 0, FollowsYou: followers.Val()[i] != 0}
			if hid.blocks != nil {
				out[i].Blocking = hid.blocks.Val()[i] != 0
				out[i].BlockedBy = hid.blockedBy.Val()[i] != 0
				out[i].Muting = hid.mutes.Val()[i] != 0
			}
		}
		return out
	}
}

// PulledAuthors returns the authors uid follows whose statuses are pulled:
// they reach uid's streams through the authors' channels (AuthorChannel).
func (s *Service) PulledAuthors(ctx context.Context, uid int64) ([]int64, error) {
	members, err := s.rdb.ZRange(ctx, s.keys.pulls(uid), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("pulled authors of %d: %w", uid, err)
	}
	return parseIDs(members), nil
}

// AuthorChannel is the bus's channel of a pulled author's statuses and
// their deletions (see bus.Bus.AuthorChannel), for those who listen outside
// the hub: tools, tests.
func (s *Service) AuthorChannel(uid int64) string { return s.bus.AuthorChannel(uid) }
