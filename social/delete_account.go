package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// reservedLogin is what the login index holds for the login of an account
// deleted: no uid, and the login taken for good.
const reservedLogin = "0"

// deleteAccountPage is how many items (statuses, follows, likes) one pass
// of an account's deletion takes on: each is an operation of its own (a
// status's deletion queues its fan-out jobs), so a pass stays short.
const deleteAccountPage = 50

// The steps of an account's deletion, in order: the job's "part" field.
const (
	deleteStatuses  = ""          // every status and repost, each through DeleteStatus and its fan-out jobs
	deleteFollowing = "following" // every follow of theirs undone
	deleteFollowers = "followers" // every follow of them undone
	deleteLikes     = "likes"     // every like of theirs undone
	deleteLists     = "lists"     // their lists deleted, and they taken out of others'
	deleteBlocks    = "blocks"    // every block of theirs undone, on the blocked one's side too
	deleteBlockedBy = "blocked"   // every block of them undone, on the blocker's side too
	deleteKeys      = "keys"      // the rest of their keys, and their entries in the site's sets
)

// The parts come after lists so that a worker of an older build, which
// reads a part it does not know as the keys, skips only what it never did.
// Mutes have no reverse index: another's mute of the account stays, and
// lists no one (userList passes over users gone).

func deleteAccountJobID(uid int64) string { return "account:delete:" + itoa(uid) }

// DeleteAccount deletes account uid, whose password must be given (checked
// as a sign-in checks it, from the client address addr, and counted against
// the same limits). At once the account is no user to any read, cannot sign
// in, and every session of it ends, its streams closed on every instance
// (so presence takes it offline); then a durable job, whose first pass runs
// before DeleteAccount returns, takes every status of it out of every
// timeline through the fan-out jobs, undoes its follows both ways, its
// likes, its lists and memberships, its blocks both ways, and deletes its
// keys. The login stays in the login index, leading to no user
// (reservedLogin): nobody can take it.
func (s *Service) DeleteAccount(ctx context.Context, uid int64, password, addr string) error {
	if _, err := s.checkPassword(ctx, uid, password, addr, nil, "", true); err != nil {
		if errors.Is(err, ErrInvalidCredentials) || errors.Is(err, ErrRateLimited) || errors.Is(err, ErrBusy) {
			return err
		}
		return fmt.Errorf("delete account %d: %w", uid, err)
	}
	k := s.keys
	// The job first: once the account is marked, nobody can ask again (it
	// signs in no more), so the job must be there to finish what a failure
	// below leaves. It waits for the mark (inputsPending): run before it,
	// its last step would delete the user hash the mark then reads and
	// writes, and leave the sessions and the login as they were. Should
	// this instance die first, a worker marks the account (makerDone).
	j := job{kind: jobDeleteAccount, uid: uid}
	if err := s.queueJob(ctx, s.rdb, j, inputsPending).Err(); err != nil {
		return fmt.Errorf("delete account %d: %w", uid, err)
	}
	if s.afterQueue != nil {
		s.afterQueue()
	}
	if err := s.markAccountDeleted(ctx, uid); err != nil {
		return fmt.Errorf("delete account %d: %w", uid, err)
	}
	if err := s.markReady(ctx, k.job(j.id())); err != nil {
		return fmt.Errorf("delete account %d: %w", uid, err)
	}
	s.inlinePass(ctx, k.job(j.id()))
	return nil
}

// markAccountDeleted is what an account's deletion does before its job
// runs: marked, the account is passed over by every read of users and
// cannot sign in; its login leads to no user from now on, and stays taken;
// every session of it ends. Idempotent: a worker redoes it for a maker
// that died part way. An account whose hash is gone (a deletion that ran
// beside this one finished) has nothing left to mark.
func (s *Service) markAccountDeleted(ctx context.Context, uid int64) error {
	k := s.keys
	login, err := s.rdb.HGet(ctx, k.user(uid), "login").Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.rdb.HSet(ctx, k.user(uid), "deleted", 1).Err(); err != nil {
		return err
	}
	// HSETNX, which claims a login at sign-up, never takes it again.
	if err := s.rdb.HSet(ctx, k.loginIndex(), strings.ToLower(login), reservedLogin).Err(); err != nil {
		return err
	}
	live, err := s.liveSessions(ctx, uid)
	if err != nil {
		return err
	}
	return s.endSessions(ctx, uid, live)
}

// deleteAccountPass takes the next step of an account's deletion: a page of
// the part it is in, or the next part.
func (s *Service) deleteAccountPass(ctx context.Context, j job) (passResult, error) {
	k := s.keys
	uid := j.uid
	next, wait, err := s.makerDone(ctx, j, func() error { return s.markAccountDeleted(ctx, uid) })
	if err != nil || wait {
		return passResult{wait: wait}, err
	}
	j = next
	// A part whose scores are times (likes, blocks) may hold several
	// entries of one score: it reads its pages from the last score on,
	// that score included, so none at a page's edge is passed over. Each
	// entry such a part walks is taken out, and is not read again.
	inclusive := false
	page := func(key string) ([]redis.Z, error) {
		from := "(" + score(j.cursor)
		if inclusive {
			from = score(j.cursor)
		}
		return s.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
			Min: from, Max: "+inf", Count: deleteAccountPage,
		}).Result()
	}
	var key string
	var each func(id int64) error
	switch j.part {
	case deleteStatuses:
		key, next.part = k.profile(uid), deleteFollowing
		each = func(sid int64) error {
			err := s.DeleteStatus(ctx, uid, sid)
			if errors.Is(err, ErrStatusNotFound) || errors.Is(err, ErrNotOwner) {
				return nil // gone already: a pass run again
			}
			return err
		}
	case deleteFollowing:
		key, next.part = k.following(uid), deleteFollowers
		each = func(other int64) error { return s.unfollowFor(ctx, uid, uid, other) }
	case deleteFollowers:
		key, next.part = k.followers(uid), deleteLikes
		each = func(other int64) error { return s.unfollowFor(ctx, uid, other, uid) }
	case deleteLikes:
		key, next.part, inclusive = k.liked(uid), deleteLists, true
		each = func(sid int64) error {
			_, err := s.Unlike(ctx, uid, sid)
			if errors.Is(err, ErrStatusNotFound) {
				// Gone, or hidden (its author suspended): its likes may
				// still hold this one, which a lifted suspension counts,
				// and its author the notification of it.
				err = s.dropHiddenLike(ctx, uid, sid)
			}
			return err
		}
	case deleteLists:
		if err := s.leaveAllLists(ctx, uid); err != nil {
			return passResult{}, err
		}
		next.part, next.cursor = deleteBlocks, 0
		return passResult{next: next}, nil
	case deleteBlocks:
		key, next.part, inclusive = k.blocks(uid), deleteBlockedBy, true
		each = func(other int64) error { return s.dropBlock(ctx, uid, other) }
	case deleteBlockedBy:
		key, next.part, inclusive = k.blockedBy(uid), deleteKeys, true
		each = func(other int64) error { return s.dropBlock(ctx, other, uid) }
	default:
		if err := s.deleteUserKeys(ctx, uid); err != nil {
			return passResult{}, err
		}
		return passResult{finished: true}, nil
	}
	members, err := page(key)
	if err != nil {
		return passResult{}, err
	}
	for _, m := range members {
		id, _ := strconv.ParseInt(fmt.Sprint(m.Member), 10, 64)
		if err := each(id); err != nil {
			return passResult{}, err
		}
	}
	if len(members) == deleteAccountPage {
		next.part, next.cursor = j.part, members[len(members)-1].Score
	} else {
		next.cursor = 0
	}
	return passResult{next: next, reached: int64(len(members))}, nil
}

// leaveAllLists deletes uid's lists (at most MaxListsPerUser) and takes uid
// out of every list that holds them.
func (s *Service) leaveAllLists(ctx context.Context, uid int64) error {
	k := s.keys
	own, err := s.rdb.ZRange(ctx, k.listsOut(uid), 0, -1).Result()
	if err != nil {
		return err
	}
	for _, id := range parseIDs(own) {
		if err := s.DeleteList(ctx, uid, id); err != nil && !errors.Is(err, ErrListNotFound) {
			return err
		}
	}
	for {
		in, err := s.rdb.ZRange(ctx, k.listsIn(uid), 0, deleteAccountPage-1).Result()
		if err != nil || len(in) == 0 {
			return err
		}
		for _, id := range parseIDs(in) {
			owner, err := s.rdb.HGet(ctx, k.list(id), "owner").Int64()
			if err == nil {
				err = s.removeMember(ctx, owner, id, uid)
			}
			if err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, ErrListNotFound) {
				return err
			}
			// A list gone, or one whose removal did not take uid's entry:
			// the entry goes, so that the loop ends.
			if err := s.rdb.ZRem(ctx, k.listsIn(uid), id).Err(); err != nil {
				return err
			}
		}
	}
}

// deleteUserKeys deletes every key left of uid's, its entries in the
// site's sets, and, through Options.AccountDeleted, its presence. The
// login index keeps its entry: the login stays taken.
func (s *Service) deleteUserKeys(ctx context.Context, uid int64) error {
	k := s.keys
	vals, err := s.rdb.HMGet(ctx, k.user(uid), "login", "name").Result()
	if err != nil {
		return err
	}
	login, _ := vals[0].(string)
	name, _ := vals[1].(string)
	pipe := s.rdb.Pipeline()
	for _, key := range []string{
		k.home(uid), k.profile(uid), k.followers(uid), k.following(uid), k.friends(uid),
		k.pulls(uid), k.listsOut(uid), k.listsIn(uid), k.liked(uid), k.homeReposts(uid),
		k.notes(uid), k.noteData(uid), k.noteCauses(uid), k.noteSeq(uid), k.notesRead(uid),
		k.mutes(uid), k.blocks(uid), k.blockedBy(uid), k.sessions(uid), k.signInUnknown(uid), k.signInKnown(uid), k.signInDevices(uid),
		k.unfollows(uid),
	} {
		pipe.Del(ctx, key)
	}
	if s.opts.FriendsMirror != nil {
		pipe.Del(ctx, s.opts.FriendsMirror(uid))
	}
	if login != "" {
		gone := make([]any, 0, 4)
		for _, e := range searchEntries(uid, login, name) {
			gone = append(gone, e)
		}
		pipe.ZRem(ctx, k.searchIndex(), gone...)
	}
	for _, set := range []string{k.seen(), k.popular(), k.pendingUsers(), k.suspended(), k.pulledAuthors()} {
		pipe.ZRem(ctx, set, uid)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if s.opts.AccountDeleted != nil {
		if err := s.opts.AccountDeleted(ctx, uid); err != nil {
			return err
		}
	}
	// The hash last: until now it held the login the steps above needed.
	return s.rdb.Del(ctx, k.user(uid)).Err()
}

// dropHiddenLike takes uid's like of sid, a status Unlike finds not there,
// out of uid's liked index; and, where the status is there still (hidden:
// its author suspended), out of its likes too, with its notification to
// the author. A deleted status's likes are its deletion's job to walk,
// which takes each liker's notification back with it.
func (s *Service) dropHiddenLike(ctx context.Context, uid, sid int64) error {
	author, err := s.rdb.HGet(ctx, s.keys.status(sid), "uid").Int64()
	if errors.Is(err, redis.Nil) {
		return s.rdb.ZRem(ctx, s.keys.liked(uid), sid).Err()
	}
	if err != nil {
		return err
	}
	return s.takeLikeBack(ctx, uid, sid, author)
}

// dropBlock takes uid's block of other out of both sides, for the
// deletion of one of the two: as Unblock, telling no stream (the account
// has none left, and its statuses are gone).
func (s *Service) dropBlock(ctx context.Context, uid, other int64) error {
	if err := s.rdb.ZRem(ctx, s.keys.blocks(uid), itoa(other)).Err(); err != nil {
		return err
	}
	return s.syncBlockedBy(ctx, uid, other)
}

// unfollowFor undoes follower's follow of followee for the deletion of
// gone, one of the two. When it ends a friendship, the other one's streams
// are told (friend_removed), as an unfollow tells them; gone's are closed.
func (s *Service) unfollowFor(ctx context.Context, gone, follower, followee int64) error {
	ended, err := s.unfollow(ctx, follower, followee)
	if err == nil {
		// The notice that the followee was told of this follow: it would
		// expire within a day, naming the account meanwhile.
		err = s.rdb.Del(ctx, s.keys.followedNotice(followee, follower)).Err()
	}
	if err != nil || !ended {
		return err
	}
	other := follower + followee - gone
	// Read from the hash itself: the account is no user to Users any more.
	who, err := s.rdb.HMGet(ctx, s.keys.user(gone), "login", "name").Result()
	if err == nil {
		login, _ := who[0].(string)
		name, _ := who[1].(string)
		var frame []byte
		frame, err = json.Marshal(protocol.FriendRemoved{Type: protocol.TypeFriendRemoved, User: protocol.UserRef{ID: gone, Login: login, Name: name}})
		if err == nil {
			err = s.bus.Publish(ctx, s.bus.UserChannel(other), frame)
		}
	}
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "could not announce the end of a friendship", "uid", gone, "friend", other, "err", err)
	}
	return nil
}
