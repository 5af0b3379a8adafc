package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"

	"chorus/bus"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed unfollow_follower.lua
	unfollowFollowerSource string
	unfollowFollowerScript = newScript(unfollowFollowerSource)

	//go:embed unfollow_followee.lua
	unfollowFolloweeSource string
	unfollowFolloweeScript = newScript(unfollowFolloweeSource)
)

// An unfollow is a series of steps like a follow (follow.go), each
// idempotent, and Unfollow runs every one every time: the follower's side
// (which copies of the followee's statuses, and adds to the follower's
// lists, check, so it goes first), the followee out of the follower's
// lists, the followee's side brought to agree with it, the ranking, the
// friend mirror, the walk of the home timeline, and the refill. Crash
// windows, and what a retry of the same request does:
//   - after the follower's side: the followee is still in the follower's
//     lists and still counts the follower, whose home timeline still gets
//     their posts and keeps their statuses; the retry takes the followee
//     out of the lists, the follower out of the followee's side, and walks
//     the home timeline.
//   - after the followee's side, before the ranking: the ranking is one
//     too high; the retry ranks the followee again from their count.
//   - before the friend mirror: presence reads the old friendship; the
//     retry syncs it.
//   - before the walk: the retry walks.
//   - after the walk, before the refill: the home timeline stays short
//     until something else refills it; the retry changes nothing and
//     queues none.

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
	// From the first write on, the unfollow runs though the client goes:
	// cut short after the follower's side, it would leave the followee's
	// counting them, pushing to them and showing them presence, for no
	// retry comes.
	ctx, cancel := detached(ctx)
	defer cancel()
	ended, err := s.unfollow(ctx, uid, other)
	if err != nil {
		return 0, fmt.Errorf("unfollow %d->%d: %w", uid, other, err)
	}
	if ended {
		// The unfollow stands; telling the ex-friends' streams is a
		// courtesy that may fail.
		if err := s.announceFriendshipEnded(ctx, uid, other); err != nil {
			s.opts.Logger.WarnContext(ctx, "could not announce the end of a friendship", "uid", uid, "friend", other, "err", err)
		}
		return other, nil
	}
	return 0, nil
}

// announceFriendshipEnded tells a and b, on every instance, that an
// unfollow has ended their friendship: each leaves the other's friends
// list (friend_removed, about the other), a suspended account too, which
// its ex-friend's streams may still list.
func (s *Service) announceFriendshipEnded(ctx context.Context, a, b int64) error {
	users, err := s.usersByIDAll(ctx, []int64{a, b})
	if err != nil {
		// A failure to read is no missing user: it stays what it is.
		return fmt.Errorf("announce to %d and %d: %w", a, b, err)
	}
	if len(users) != 2 {
		return fmt.Errorf("announce to %d and %d: %w", a, b, ErrUserNotFound)
	}
	msgs := make([]bus.Message, 2)
	for i, u := range users {
		frame, err := json.Marshal(protocol.FriendRemoved{Type: protocol.TypeFriendRemoved, User: u.Ref()})
		if err != nil {
			return fmt.Errorf("announce to %d and %d: %w", a, b, err)
		}
		msgs[i] = bus.Message{Channel: s.bus.UserChannel(users[1-i].ID), Payload: frame}
	}
	if err := s.bus.PublishBatch(ctx, msgs); err != nil {
		return fmt.Errorf("announce to %d and %d: %w", a, b, err)
	}
	return nil
}

func (s *Service) unfollow(ctx context.Context, uid, other int64) (endedFriends bool, err error) {
	k := s.keys
	msg, err := json.Marshal(protocol.Internal{Type: protocol.TypePullRemoved, Author: other})
	if err != nil {
		return false, err
	}

	// 1. The follower's side.
	res, err := unfollowFollowerScript.Run(ctx, s.rdb,
		[]string{k.following(uid), k.friends(uid), k.pulls(uid), k.user(uid)},
		other, s.bus.Command(), s.bus.UserChannel(uid), msg).Int64Slice()
	if err != nil {
		return false, err
	}
	if len(res) != 2 {
		return false, fmt.Errorf("follower side answered %v", res)
	}
	removed := res[0] == 1
	endedFriends = res[1] == 1

	// The followee leaves the follower's lists, unless a follow since has
	// come: only followees may be in one's lists.
	if err := s.leaveLists(ctx, uid, other); err != nil {
		return false, err
	}

	// 2, 3. The followee's side, and the ranking with it. A follow since
	// may have to be written there again: its note is read then.
	side, err := s.syncFollowee(ctx, uid, other, "", func() (followNote, error) {
		return s.loadFollowNote(ctx, uid)
	})
	if err != nil {
		return false, err
	}
	endedFriends = endedFriends || side.endedFriends
	// side.gone: a follow since found the followee being deleted, and
	// undoes the follower's side unless the followee's holds it.

	// 4. Presence's copy of both friend sets.
	if err := s.syncFriendMirrors(ctx, uid, other); err != nil {
		return false, err
	}

	// 5. The home timeline, unless a follow since has won: that follow
	// brings the followee's statuses.
	if side.stands {
		return endedFriends, nil
	}
	dropped, err := s.dropFollowee(ctx, uid, other)
	if err != nil {
		return false, err
	}
	// A follow since the sync may have copied the followee's statuses
	// before the walk took them out. The walk is written before this read:
	// either the read sees that follow and its statuses come back, or the
	// follow is written after and copies them itself.
	if again, err := s.followScore(ctx, uid, other); err != nil {
		return false, err
	} else if again != "" && !side.gone {
		return endedFriends, s.reachFollowee(ctx, uid, other, 0)
	}

	// 6. A refill, when this unfollow changed something and left the home
	// timeline short.
	if removed || side.changed || dropped > 0 {
		if err := s.queueRefill(ctx, uid); err != nil {
			return false, err
		}
	}
	return endedFriends, nil
}

// unfollowFollowee writes the followee's side of uid's unfollow of other,
// and takes back the followed notification with it. It reports whether it
// removed the follower, and whether that ended a friendship.
func (s *Service) unfollowFollowee(ctx context.Context, uid, other int64) (removed, ended bool, err error) {
	k := s.keys
	pipe := s.rdb.Pipeline()
	cmd := unfollowFolloweeScript.Eval(ctx, pipe,
		[]string{k.followers(other), k.friends(other), k.user(other), k.unfollows(other)}, uid)
	s.queueUnnotify(ctx, pipe, note{to: other, from: uid, kind: protocol.NotifyFollowed})
	if _, err := pipe.Exec(ctx); err != nil {
		return false, false, err
	}
	res, err := cmd.Int64Slice()
	if err != nil {
		return false, false, err
	}
	if len(res) != 2 {
		return false, false, fmt.Errorf("followee side answered %v", res)
	}
	return res[0] == 1, res[1] == 1, nil
}

// dropFollowee takes other's statuses out of uid's home timeline, with every
// status there whose cleanup is under way, and returns how many it took out.
//
// The home timeline is small (capped), a profile may be large: the walk
// reads the home timeline and asks the profile about its ids. A status
// deleted a moment ago is in no profile any more, and its cleanup job walks
// its author's followers, which may no longer include uid: it is taken out
// here, and uid told as the job would have, only by the ZREM that removed
// it (the job then finds nothing and tells nobody twice).
func (s *Service) dropFollowee(ctx context.Context, uid, other int64) (int, error) {
	k := s.keys
	home, err := s.rdb.ZRange(ctx, k.home(uid), 0, -1).Result()
	if err != nil || len(home) == 0 {
		return 0, err
	}
	pipe := s.rdb.Pipeline()
	theirs := pipe.ZMScore(ctx, k.profile(other), home...)
	underway := make([]*redis.IntCmd, len(home))
	for i, id := range home {
		underway[i] = pipe.Exists(ctx, k.job(deleteJobPrefix+id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	type drop struct {
		id      string
		deleted bool // its cleanup is under way
		rem     *redis.IntCmd
	}
	var drops []drop
	for i, id := range home {
		// Profile scores are status ids, never 0; ZMSCORE reads a missing
		// member as 0.
		if theirs.Val()[i] != 0 || underway[i].Val() == 1 {
			drops = append(drops, drop{id: id, deleted: theirs.Val()[i] == 0})
		}
	}
	if len(drops) == 0 {
		return 0, nil
	}
	pipe = s.rdb.Pipeline()
	for i := range drops {
		drops[i].rem = pipe.ZRem(ctx, k.home(uid), drops[i].id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	n := 0
	pipe = s.rdb.Pipeline()
	for _, d := range drops {
		if d.rem.Val() != 1 {
			continue
		}
		n++
		if d.deleted {
			id, _ := strconv.ParseInt(d.id, 10, 64)
			frame, err := json.Marshal(protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: id})
			if err != nil {
				return n, err
			}
			s.bus.Queue(ctx, pipe, s.bus.UserChannel(uid), frame)
		}
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return n, err
		}
	}
	return n, nil
}

// queueRefill queues the refill of uid's home timeline when it holds fewer
// than RefillBelow statuses and uid follows someone, unless one is queued.
// Every status of uid's followees newer than the home timeline's lowest is
// there already, so the job copies only older ones: that lowest is its
// "floor" (none when the timeline is empty).
func (s *Service) queueRefill(ctx context.Context, uid int64) error {
	k := s.keys
	pipe := s.rdb.Pipeline()
	size := pipe.ZCard(ctx, k.home(uid))
	lowest := pipe.ZRangeWithScores(ctx, k.home(uid), 0, 0)
	followees := pipe.ZCard(ctx, k.following(uid))
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if size.Val() >= int64(s.opts.RefillBelow) || followees.Val() == 0 {
		return nil
	}
	floor := "+inf"
	if l := lowest.Val(); len(l) == 1 {
		floor = strconv.FormatFloat(l[0].Score, 'f', -1, 64)
	}
	return s.queueJob(ctx, s.rdb, job{kind: jobRefill, uid: uid, floor: floor}, inputsWritten).Err()
}
