package social

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed shared.lua
	sharedSource string

	//go:embed follow.lua
	followSource string
	followScript = redis.NewScript(sharedSource + followSource)

	//go:embed unfollow.lua
	unfollowSource string
	unfollowScript = redis.NewScript(unfollowSource)
)

// Follow makes uid follow the user with login (idempotent) and backfills
// uid's home timeline with that user's latest statuses. It returns the
// followee as it is afterwards, and whether this follow made them friends.
func (s *Service) Follow(ctx context.Context, uid int64, login string) (followee User, madeFriends bool, err error) {
	other, err := s.UID(ctx, login)
	if err != nil {
		return User{}, false, err
	}
	if other == uid {
		return User{}, false, ErrSelfFollow
	}
	now, err := s.now(ctx)
	if err != nil {
		return User{}, false, fmt.Errorf("follow %d->%d: %w", uid, other, err)
	}
	k := s.keys
	res, err := followScript.Run(ctx, s.rdb, []string{
		k.following(uid), k.followers(other), k.user(uid), k.user(other),
		k.following(other), k.friends(uid), k.friends(other),
		k.home(uid), k.profile(other), k.followSeq(), k.popular(),
		k.pulledAuthors(), k.pulls(uid), k.jobs(), k.job(promoteJobID(other)),
	}, uid, other, s.opts.HomeSize, now.UnixMilli(), k.userChannel(other),
		k.userChannel(uid), max(0, s.opts.PullThreshold)).Int()
	if err != nil {
		return User{}, false, fmt.Errorf("follow %d->%d: %w", uid, other, err)
	}
	if res < 0 {
		return User{}, false, ErrUserNotFound
	}
	followee, err = s.UserByID(ctx, other)
	return followee, res == 2, err
}

// Unfollow makes uid stop following the user with login (idempotent) and
// takes that user's statuses out of uid's home timeline, with the deleted
// statuses whose cleanup has not reached it yet. It returns the id of the
// user it ended a friendship with, or 0 when it ended none.
func (s *Service) Unfollow(ctx context.Context, uid int64, login string) (exFriend int64, err error) {
	other, err := s.UID(ctx, login)
	if err != nil {
		return 0, err
	}
	if other == uid {
		return 0, ErrSelfFollow
	}
	k := s.keys
	refill := refillJobID(uid)
	res, err := unfollowScript.Run(ctx, s.rdb, []string{
		k.following(uid), k.followers(other), k.user(uid), k.user(other),
		k.friends(uid), k.friends(other), k.home(uid), k.profile(other),
		k.jobs(), k.job(refill), k.popular(), k.pulls(uid),
	}, uid, other, s.opts.RefillBelow, k.job(deleteJobPrefix), k.userChannel(uid)).Int()
	if err != nil {
		return 0, fmt.Errorf("unfollow %d->%d: %w", uid, other, err)
	}
	if res == 2 {
		return other, nil
	}
	return 0, nil
}
