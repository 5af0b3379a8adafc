package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed follow_follower.lua
	followFollowerSource string
	followFollowerScript = newScript(followFollowerSource)

	//go:embed follow_followee.lua
	followFolloweeSource string
	// The followee's side stores the followed notification of a follower
	// it adds with notify.lua, put ahead of its text as a function.
	followFolloweeScript = newScript("local function notify(KEYS, ARGV)\n" + notifySource + "end\n" + followFolloweeSource)

	//go:embed pull_add.lua
	pullAddSource string
	pullAddScript = newScript(pullAddSource)
)

// followedNoticeTTL is how long a followee told of a follower's follow (the
// followed frame) is not told again of that follower's: follow, unfollow
// and follow again within it sends one frame.
const followedNoticeTTL = 24 * time.Hour

// A follow (and an unfollow, unfollow.go) changes two users, whose keys are
// in two slots of a Redis Cluster, and keys in slots of their own besides:
// the follow sequence, the ranking, the fan-out jobs, presence's friend
// mirror. No one script can hold them all, so a follow is a series of
// steps, each one script in one slot or an idempotent write, and Follow
// runs every step every time: a follow cut short (a crash, a lost
// connection) is left with its first steps written, and a retry of the
// same request does the rest, writing nothing twice.
//
// The follower's following set is where a follow stands or not: the
// follower's side is written first, and everything else is brought to
// agree with it. The followee's side (followers, count, friends, the
// followed frame, the stored notification) follows the follower's by
// write-then-verify (see syncFollowee), so a follow and an unfollow of the same pair running at
// once (two tabs) leave both sides agreeing with whichever wrote the
// follower's side last. Each side keeps its user's friends set from the
// two sets in its own slot, in the script that changes one of them, so two
// users following each other at the same moment both end up friends:
// whichever side-script runs second in each slot sees both sets.
//
// Crash windows, and what a retry of the same request does:
//   - after the follower's side: the followee's side lacks the follow (no
//     count, not among the followers, so posts are not pushed to the
//     follower). The retry's follower side finds the follow, with its
//     score, and the followee's side is written with that score.
//   - after the followee's side, before the ranking: the ranking is one
//     short; the retry ranks the followee again from their count.
//   - before the friend mirror: presence reads the old friendship; the
//     retry syncs the mirror.
//   - before the backfill or the pulled-author step: the retry does them.
//   - before queueing a promotion: the retry, or the author's next follow,
//     checks the threshold again.

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
	made, wrote, err := s.follow(ctx, uid, other)
	if err != nil {
		return User{}, false, fmt.Errorf("follow %d->%d: %w", uid, other, err)
	}
	// Written: a friendship it made is introduced though the client goes,
	// as no retry would make it again.
	ctx, cancel := detached(ctx)
	defer cancel()
	followee, err = s.UserByID(ctx, other)
	if errors.Is(err, ErrUserNotFound) && !wrote {
		// A follow that stood already, repeated: the suspension (or
		// deletion) since the first read keeps it, or undoes it, as every
		// follow made before.
		return User{}, false, err
	}
	if errors.Is(err, ErrUserNotFound) {
		// Suspended (or being deleted) since the follow's first read: this
		// follow answers as one refused, so it is not kept either, as one
		// the suspension overtook is not (follow_followee.lua).
		ended, uerr := s.unfollow(ctx, uid, other)
		if uerr != nil {
			return User{}, false, fmt.Errorf("follow %d->%d: undo: %w", uid, other, uerr)
		}
		if ended {
			if aerr := s.announceFriendshipEnded(ctx, uid, other); aerr != nil {
				s.opts.Logger.WarnContext(ctx, "could not announce the end of a friendship", "uid", uid, "friend", other, "err", aerr)
			}
		}
		return User{}, false, err
	}
	if err == nil && made && s.opts.Befriended != nil {
		// The follow stands; introducing the new friends to each other's
		// streams is a courtesy that may fail.
		if err := s.opts.Befriended(ctx, uid, other); err != nil {
			s.opts.Logger.WarnContext(ctx, "could not announce a friendship", "uid", uid, "friend", other, "err", err)
		}
		s.recheckFriendship(ctx, uid, other)
	}
	return followee, made, err
}

// recheckFriendship reads, after a new friendship was announced, whether it
// still stands, and announces its end when not: an unfollow or a block
// that ended it between the follow and the announcement published its
// friend_removed before the announcement's presence frames, which would
// otherwise be the last word each stream got about the other. Whatever
// ends it after this read publishes its own friend_removed after.
func (s *Service) recheckFriendship(ctx context.Context, uid, other int64) {
	k := s.keys
	pipe := s.rdb.Pipeline()
	mine := pipe.ZScore(ctx, k.friends(uid), itoa(other))
	theirs := pipe.ZScore(ctx, k.friends(other), itoa(uid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		s.opts.Logger.WarnContext(ctx, "could not check a friendship again", "uid", uid, "friend", other, "err", err)
		return
	}
	if mine.Err() == nil && theirs.Err() == nil {
		return
	}
	if err := s.announceFriendshipEnded(ctx, uid, other); err != nil {
		s.opts.Logger.WarnContext(ctx, "could not announce the end of a friendship", "uid", uid, "friend", other, "err", err)
	}
}

func (s *Service) follow(ctx context.Context, uid, other int64) (madeFriends, wrote bool, err error) {
	k := s.keys
	// The sequence number goes before anything is written: one lost to a
	// follow that stands already (or to a missing user) is a gap, and gaps
	// are harmless.
	pipe := s.rdb.Pipeline()
	follower := pipe.Exists(ctx, k.user(uid))
	followee := pipe.HMGet(ctx, k.user(other), "id", "suspended", "deleted")
	who := pipe.HMGet(ctx, k.user(uid), userFields...)
	seq := pipe.Incr(ctx, k.followSeq())
	clock := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, false, err
	}
	// A suspended account, or one being deleted, is none to anyone: it
	// cannot be followed.
	if id, _ := followee.Val()[0].(string); follower.Val() == 0 || id == "" || followee.Val()[1] != nil || followee.Val()[2] != nil {
		return false, false, ErrUserNotFound
	}
	note, err := newFollowNote(uid, who.Val(), clock.Val().UnixMilli())
	if err != nil {
		return false, false, err
	}

	// From the first write on, the follow runs though the client goes: cut
	// short as either account's deletion begins, it would find no retry
	// (the session ended, or the login leads to no one) to finish or undo
	// it.
	ctx, cancel := detached(ctx)
	defer cancel()

	// 1. The follower's side.
	if s.betweenFollowReads != nil {
		s.betweenFollowReads()
	}
	res, err := followFollowerScript.Run(ctx, s.rdb,
		[]string{k.following(uid), k.followers(uid), k.friends(uid), k.user(uid), k.blocks(uid), k.blockedBy(uid)},
		other, seq.Val(), note.now, s.opts.MaxFollowing).Slice()
	if err != nil {
		return false, false, err
	}
	if len(res) != 4 {
		return false, false, fmt.Errorf("follower side answered %v", res)
	}
	switch refused, _ := res[3].(int64); refused {
	case 1:
		return false, false, ErrBlocked
	case 2:
		return false, false, errAccountGone
	case 3:
		return false, false, ErrTooManyFollowing
	}
	score, _ := res[0].(string)
	added, _ := res[1].(int64)
	made, _ := res[2].(int64)

	// 2, 3. The followee's side, and the ranking with it.
	if s.betweenFollowSides != nil {
		s.betweenFollowSides()
	}
	side, err := s.syncFollowee(ctx, uid, other, score, func() (followNote, error) { return note, nil })
	if err != nil {
		return false, false, err
	}
	if side.gone {
		// The followee's deletion began since the first read: its walk of
		// their followers cannot see a follow not written there, nor one
		// this request wrote again on the follower's side after the walk
		// took it out there, which are undone here. An older follow written
		// there before the mark is the walk's to undo, and to tell the two
		// streams of a friendship it ends.
		undo := added == 1
		if !undo {
			err := s.rdb.ZScore(ctx, s.keys.followers(other), itoa(uid)).Err()
			if err != nil && !errors.Is(err, redis.Nil) {
				return false, false, err
			}
			undo = err != nil
		}
		if undo {
			// As the deletion's walk would: a friendship it ends is told to
			// uid's streams.
			if err := s.unfollowFor(ctx, other, uid, other); err != nil {
				return false, false, err
			}
		}
		return false, false, ErrUserNotFound
	}
	// A friendship made by a follow that no longer stands (an unfollow or
	// a block overtook it, and ended it) is none to introduce: presence
	// frames sent after the end's friend_removed would show each one's
	// presence to the other again.
	madeFriends = side.stands && (made == 1 || side.madeFriends)

	// 4. Presence's copy of both friend sets.
	if err := s.syncFriendMirrors(ctx, uid, other); err != nil {
		return false, false, err
	}

	// 5. The followee's statuses, unless an unfollow since has won.
	if !side.stands {
		if err := s.dropPutBack(ctx, uid, other, side); err != nil {
			return false, false, err
		}
		return false, false, s.refuseBlocked(ctx, uid, other)
	}
	if err := s.reachFollowee(ctx, uid, other, side.followers); err != nil {
		return false, false, err
	}
	return madeFriends, added == 1 || side.changed, nil
}

// refuseBlocked answers ErrBlocked when uid blocks other or other blocks
// uid: a follow that a block overtook between its two sides (the block's
// unfollow took it out) is refused as one that came after the block.
func (s *Service) refuseBlocked(ctx context.Context, uid, other int64) error {
	pipe := s.rdb.Pipeline()
	blocked := s.queueBlockedEither(ctx, pipe, uid, other)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if blocked() {
		return ErrBlocked
	}
	return nil
}

// dropPutBack walks uid's home timeline once more after a follow of other
// that an unfollow overtook (side, as the follow's sync left it), when the
// sync put uid back among other's followers before it took them out again:
// that unfollow had walked the home timeline already, and a post's push in
// between, which reads the followers and, on one Redis, checks no follow
// while other's unfollow count stands (see homePush), may have reached it.
// Taking them out again counted an unfollow; this walk comes after, as an
// unfollow's own does.
func (s *Service) dropPutBack(ctx context.Context, uid, other int64, side followeeSide) error {
	if side.stands || !side.removed {
		return nil
	}
	dropped, err := s.dropFollowee(ctx, uid, other)
	if err != nil || dropped == 0 {
		return err
	}
	return s.queueRefill(ctx, uid)
}

// followNote is what the followee's side of a new follow writes besides the
// follow: the time a friendship made then starts, the followed frames, and
// the follower, whom the stored notification names.
type followNote struct {
	now         int64  // unix ms
	plain, back string // the followed frame when the followee does not follow back, and when they do
	follower    User
}

// newFollowNote builds the note of a follow by uid, whose userFields are
// fields (from HMGET), at now.
func newFollowNote(uid int64, fields []any, now int64) (followNote, error) {
	n := followNote{now: now}
	n.follower, _ = parseUser(fields)
	n.follower.ID = uid
	ref := n.follower.Ref()
	for _, f := range []struct {
		back bool
		to   *string
	}{{false, &n.plain}, {true, &n.back}} {
		b, err := json.Marshal(protocol.Followed{Type: protocol.TypeFollowed, User: ref, YouFollow: f.back})
		if err != nil {
			return followNote{}, err
		}
		*f.to = string(b)
	}
	return n, nil
}

// followedNote is the notification of uid's follow of other, whose note
// is n; its cause has no status.
func followedNote(uid, other int64, n followNote) note {
	return note{to: other, from: uid, kind: protocol.NotifyFollowed, at: time.UnixMilli(n.now), fromUser: n.follower}
}

// loadFollowNote reads the note of a follow by uid now.
func (s *Service) loadFollowNote(ctx context.Context, uid int64) (followNote, error) {
	pipe := s.rdb.Pipeline()
	who := pipe.HMGet(ctx, s.keys.user(uid), userFields...)
	clock := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return followNote{}, err
	}
	return newFollowNote(uid, who.Val(), clock.Val().UnixMilli())
}

// followeeSide is what syncFollowee did.
type followeeSide struct {
	stands       bool  // the follow stands, as the follower's side last read
	followers    int64 // the followee's follower count after the last write, when it stands
	madeFriends  bool  // a write made the two friends
	endedFriends bool  // a write ended their friendship
	changed      bool  // a write added or removed the follower
	removed      bool  // a write removed the follower
	gone         bool  // the followee is gone or being deleted: the follow was not written there
}

// syncFollowee brings the followee's side of uid -> other to agree with
// the follower's side, which read score ("" for no follow): it writes the
// follow with that score, or takes it out, then reads the follower's side
// again, and goes round again while that changed. note gives what a new
// follow writes besides (an unfollow reads it only when it has to add). A
// followee gone or being deleted takes no follow: the sync returns at once,
// with gone set, and the follower's side is the caller's to undo.
//
// Whatever runs at once, the followee's side ends as the follower's: of
// the writes to the follower's side, take the last. The request that made
// it reads it after, so its own sync writes it to the followee's side, and
// a sync's write coming later than that, from an older read, is followed by
// that sync's read of the follower's side, which gives the last write and
// sends it round again. So the last write to the followee's side carries
// the follower's last.
func (s *Service) syncFollowee(ctx context.Context, uid, other int64, score string, note func() (followNote, error)) (followeeSide, error) {
	k := s.keys
	var side followeeSide
	for range maxSyncRounds {
		if score != "" {
			n, err := note()
			if err != nil {
				return side, err
			}
			// The stored notification goes with the followee's side, in
			// its script: stored by the write that adds the follower, and
			// by no other, so a follow repeated while it stands stores
			// none, and a retry of one cut short finds it stored with the
			// follower.
			keys := []string{k.followers(other), k.following(other), k.friends(other), k.user(other), k.followedNotice(other, uid),
				k.blocks(other), k.blockedBy(other), k.mutes(other)}
			args := []any{uid, score, n.now, s.bus.Command(), s.bus.UserChannel(other), n.plain, n.back,
				int64(followedNoticeTTL / time.Second)}
			if noteKeys, noteArgs, ok := s.notifyCall(followedNote(uid, other, n)); ok {
				keys, args = append(keys, noteKeys...), append(args, noteArgs...)
			}
			res, err := followFolloweeScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
			if err != nil {
				return side, err
			}
			if len(res) != 3 {
				return side, fmt.Errorf("followee side answered %v", res)
			}
			if res[0] == -1 {
				side.gone = true
				return side, nil
			}
			side.followers = res[1]
			side.madeFriends = side.madeFriends || res[2] == 1
			side.changed = side.changed || res[0] == 1
		} else {
			removed, ended, err := s.unfollowFollowee(ctx, uid, other)
			if err != nil {
				return side, err
			}
			side.endedFriends = side.endedFriends || ended
			side.changed = side.changed || removed
			side.removed = side.removed || removed
		}
		again, err := s.followScore(ctx, uid, other)
		if err != nil {
			return side, err
		}
		if again == score {
			side.stands = score != ""
			return side, s.rankFollowee(ctx, other)
		}
		score = again
	}
	return side, fmt.Errorf("the follow of %d by %d changed %d times while being written", other, uid, maxSyncRounds)
}

// rankFollowee writes uid's place in the ranking by followers from their
// count (syncRank), after a follow or unfollow of uid, whether or not it
// changed the count: a retry of a request cut short before its ranking
// writes it then. The ranking is written from the count, never moved by a
// delta, so a rank left off heals at the user's next follow or unfollow.
// A popular user's count may keep moving through every round of syncRank:
// that is logged, not failed, as the follow itself is written, and the
// follows moving the count each rank the user again after their own change.
func (s *Service) rankFollowee(ctx context.Context, uid int64) error {
	err := s.syncRank(ctx, uid)
	if errors.Is(err, errRankMoving) {
		s.opts.Logger.WarnContext(ctx, "follower ranking left to the next follow", "uid", uid, "err", err)
		return nil
	}
	return err
}

// followScore reads the score of uid's follow of other, "" when uid does
// not follow them.
func (s *Service) followScore(ctx context.Context, uid, other int64) (string, error) {
	// Follow scores come from a sequence and are never 0; ZMSCORE reads a
	// missing member as 0.
	sc, err := s.rdb.ZMScore(ctx, s.keys.following(uid), itoa(other)).Result()
	if err != nil {
		return "", err
	}
	if len(sc) != 1 || sc[0] == 0 {
		return "", nil
	}
	return strconv.FormatFloat(sc[0], 'f', -1, 64), nil
}

// reachFollowee brings other's statuses to uid, who follows them: a pulled
// author (or one being made so) is read from their profile timeline, and
// uid's instances are told to route their channel to uid; another's newest
// statuses, and those of one being made pulled, are copied into uid's home
// timeline. followers is other's
// follower count: from PullThreshold on, other's promotion is queued (0:
// no check).
//
// The check comes after the followee's side is written, so that a follow
// whose check misses a promotion job joined the followers before the job
// was queued: the job's first pass, which reads the follow sequence after
// it was queued, reaches this follower. A follow whose check sees the job
// adds itself.
func (s *Service) reachFollowee(ctx context.Context, uid, other int64, followers int64) error {
	k := s.keys
	pipe := s.rdb.Pipeline()
	pulled := pipe.ZMScore(ctx, k.pulledAuthors(), itoa(other))
	promoting := pipe.Exists(ctx, k.job(promoteJobID(other)))
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	// A pulled author's score is a status id, never 0.
	if pulled.Val()[0] != 0 || promoting.Val() == 1 {
		msg, err := json.Marshal(protocol.Internal{Type: protocol.TypePullAdded, Author: other})
		if err != nil {
			return err
		}
		err = pullAddScript.Run(ctx, s.rdb, []string{k.following(uid), k.pulls(uid)},
			other, s.bus.Command(), s.bus.UserChannel(uid), msg).Err()
		if err != nil || pulled.Val()[0] != 0 {
			return err
		}
		// Being made pulled: its statuses until then are pushed, and a
		// reader of many pulled authors, who reads only those posted once
		// pulled, has the ones from before this follow by their copy.
	}
	if _, err := s.copyLatest(ctx, k.home(uid), k.profile(other),
		guard{k.following(uid), itoa(other), uid}, s.opts.HomeSize); err != nil {
		return err
	}
	if t := s.opts.PullThreshold; t > 0 && followers >= int64(t) {
		return s.queuePromotion(ctx, other)
	}
	return nil
}
