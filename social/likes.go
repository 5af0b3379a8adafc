package social

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// original reads status id and, when it is a repost entry, the status it
// reposts: what a like or a repost is about. ErrStatusNotFound when either
// is gone.
func (s *Service) original(ctx context.Context, id int64) (Status, error) {
	st, err := s.Status(ctx, id)
	if err != nil || st.RepostOf == nil {
		return st, err
	}
	orig, err := s.Status(ctx, st.RepostOf.ID)
	if err == nil && orig.RepostOf != nil {
		// An entry's original is never an entry; one that is names nothing
		// a like or a repost could be about.
		return Status{}, ErrStatusNotFound
	}
	return orig, err
}

// likeTarget reads what uid likes, status id (a repost entry: its
// original, as original), and what a notification frame shows of uid, in
// one round trip (two for a repost entry).
func (s *Service) likeTarget(ctx context.Context, uid, id int64) (Status, protocol.User, error) {
	pipe := s.rdb.Pipeline()
	status := pipe.HMGet(ctx, s.keys.status(id), statusFields...)
	user := pipe.HMGet(ctx, s.keys.user(uid), "login", "name")
	if _, err := pipe.Exec(ctx); err != nil {
		return Status{}, protocol.User{}, err
	}
	login, _ := user.Val()[0].(string)
	name, _ := user.Val()[1].(string)
	if login == "" {
		return Status{}, protocol.User{}, ErrUserNotFound
	}
	from := protocol.User{ID: uid, Login: login, Name: name}
	st, ok := parseStatus(status.Val())
	if !ok {
		return Status{}, protocol.User{}, ErrStatusNotFound
	}
	if st.RepostOf != nil {
		orig, err := s.Status(ctx, st.RepostOf.ID)
		if err == nil && orig.RepostOf != nil {
			err = ErrStatusNotFound // see original
		}
		return orig, from, err
	}
	return st, from, nil
}

// Like records that uid likes status id (a repost entry: its original),
// and returns the status liked. Liking twice changes nothing. The author
// is told once (the liked notification), unless uid is the author.
//
// The like is written into the status's likes and uid's liked, then the
// status is looked at again: a deletion that raced the write either sees
// the like (its cleanup job pages the likes after the status is gone) or
// is seen here, and the like is taken back. So is a block between uid and
// the author, looked at again in the same round trip, in uid's slot: the
// block writes its side there before it returns, so a block that raced
// the like either is seen here, the like taken back and ErrBlocked
// answered as a like refused up front is, or came after the write (a like
// made before a block stands). The count is the likes' cardinality, so it
// is exact whatever the likes raced; uid's liked is made to agree with it
// (settleLiked).
func (s *Service) Like(ctx context.Context, uid, id int64) (Status, error) {
	st, from, err := s.likeTarget(ctx, uid, id)
	if err == nil {
		err = s.refuseHidden(ctx, uid, st.UID)
	}
	if err != nil {
		return Status{}, fmt.Errorf("like %d: %w", id, err)
	}
	k := s.keys
	if s.beforeLikeWrites != nil {
		s.beforeLikeWrites()
	}
	// The writes, the look, what it settles and the notification run
	// though the client goes: a like whose answer the request's deadline
	// cut off would stand unnotified, as would one left standing for a
	// status or a liker deleted meanwhile, and a retry of a like that
	// stands notifies nothing.
	dctx, cancel := detached(ctx)
	defer cancel()
	ms := float64(time.Now().UnixMilli())
	pipe := s.rdb.Pipeline()
	added := pipe.ZAddNX(dctx, k.likes(st.ID), redis.Z{Score: ms, Member: uid})
	pipe.ZAddNX(dctx, k.liked(uid), redis.Z{Score: ms, Member: st.ID})
	if _, err := pipe.Exec(dctx); err != nil {
		return Status{}, fmt.Errorf("like %d: %w", id, err)
	}
	if s.afterLikeWrites != nil {
		s.afterLikeWrites()
	}
	pipe = s.rdb.Pipeline()
	look := s.queueLikeLook(dctx, pipe, uid, st.ID)
	blocked := s.queueBlockedEither(dctx, pipe, uid, st.UID)
	if err := look.exec(dctx, pipe); err != nil {
		return Status{}, fmt.Errorf("like %d: %w", id, err)
	}
	if look.status.Val() == 0 {
		if err := s.dropLike(dctx, uid, st.ID); err != nil {
			return Status{}, fmt.Errorf("like %d: %w", id, err)
		}
		return Status{}, ErrStatusNotFound
	}
	if blocked() {
		// Only a like this request wrote: one that stood already was
		// made before the block (its own look did not see it), or by a
		// like racing this one, whose look takes it back.
		if added.Val() == 1 {
			if err := s.takeLikeBack(dctx, uid, st.ID, st.UID); err != nil {
				return Status{}, fmt.Errorf("like %d: %w", id, err)
			}
		}
		return Status{}, fmt.Errorf("like %d: %w", id, ErrBlocked)
	}
	if err := s.settleLiked(dctx, uid, st.ID, st.UID, look); err != nil {
		return Status{}, fmt.Errorf("like %d: %w", id, err)
	}
	if added.Val() == 1 {
		n := note{to: st.UID, from: uid, kind: protocol.NotifyLiked, sid: st.ID, fromUser: from, status: &st}
		if err := s.notifyWhile(dctx, n, k.likes(st.ID), itoa(uid)); err != nil {
			return Status{}, fmt.Errorf("like %d: %w", id, err)
		}
	}
	return st, nil
}

// Unlike takes uid's like of status id (a repost entry: its original)
// back, and its notification. Unliking what uid does not like changes
// nothing; the notification's take-back runs then too, so that a retry of
// an unlike cut short after its first step finishes it.
func (s *Service) Unlike(ctx context.Context, uid, id int64) (Status, error) {
	st, err := s.original(ctx, id)
	if err != nil {
		return Status{}, fmt.Errorf("unlike %d: %w", id, err)
	}
	// From the first write on, the unlike runs though the client goes.
	ctx, cancel := detached(ctx)
	defer cancel()
	k := s.keys
	pipe := s.rdb.Pipeline()
	removed := pipe.ZRem(ctx, k.likes(st.ID), uid)
	pipe.ZRem(ctx, k.liked(uid), st.ID)
	if _, err := pipe.Exec(ctx); err != nil {
		return Status{}, fmt.Errorf("unlike %d: %w", id, err)
	}
	if s.afterLikeWrites != nil {
		s.afterLikeWrites()
	}
	if removed.Val() == 1 && s.afterUnclaim != nil {
		s.afterUnclaim()
	}
	// Whether or not this call took the like: an earlier one that did may
	// have failed here.
	pipe = s.rdb.Pipeline()
	s.queueUnnotify(ctx, pipe, note{to: st.UID, from: uid, kind: protocol.NotifyLiked, sid: st.ID})
	if _, err := pipe.Exec(ctx); err != nil {
		return Status{}, fmt.Errorf("unlike %d: %w", id, err)
	}
	// One look after both: the index settled to the likes, and a like made
	// before the take-back above (between the two steps, or racing a
	// retry), which found the notification it then took still stored, or
	// stored its own first, notified again.
	pipe = s.rdb.Pipeline()
	look := s.queueLikeLook(ctx, pipe, uid, st.ID)
	if err := look.exec(ctx, pipe); err != nil {
		return Status{}, fmt.Errorf("unlike %d: %w", id, err)
	}
	if err := s.settleLiked(ctx, uid, st.ID, st.UID, look); errors.Is(err, errAccountGone) {
		return st, nil // the like is taken out, as asked
	} else if err != nil {
		return Status{}, fmt.Errorf("unlike %d: %w", id, err)
	}
	if look.status.Val() != 0 && look.like.Err() == nil {
		if err := s.renotifyLike(ctx, uid, st.ID); err != nil {
			return Status{}, fmt.Errorf("unlike %d: %w", id, err)
		}
	}
	return st, nil
}

// renotifyLike notifies again uid's like of status sid (an original),
// found standing after an unlike's two steps (the like, then its
// notification): a like made between them found the notification the
// unlike then took still stored, and stored none of its own. As Like
// notifies.
func (s *Service) renotifyLike(ctx context.Context, uid, sid int64) error {
	st, from, err := s.likeTarget(ctx, uid, sid)
	if errors.Is(err, ErrStatusNotFound) || errors.Is(err, ErrUserNotFound) {
		return nil // its deletion, or the liker's, takes the like too
	}
	if err != nil {
		return err
	}
	n := note{to: st.UID, from: uid, kind: protocol.NotifyLiked, sid: st.ID, fromUser: from, status: &st}
	return s.notifyWhile(ctx, n, s.keys.likes(st.ID), itoa(uid))
}

// likeLook is a read of both sides of uid's like of a status, the
// status's likes, which the counts read, and uid's liked index, with
// whether the status is there.
type likeLook struct {
	status      *redis.IntCmd
	like, liked *redis.FloatCmd
	liker       *redis.SliceCmd // the liker's goneFields
}

// queueLikeLook queues on pipe the read of both sides of uid's like of sid.
func (s *Service) queueLikeLook(ctx context.Context, pipe redis.Pipeliner, uid, sid int64) likeLook {
	return likeLook{
		status: pipe.Exists(ctx, s.keys.status(sid)),
		like:   pipe.ZScore(ctx, s.keys.likes(sid), itoa(uid)),
		liked:  pipe.ZScore(ctx, s.keys.liked(uid), itoa(sid)),
		liker:  pipe.HMGet(ctx, s.keys.user(uid), goneFields...),
	}
}

// exec runs pipe, on which l was queued (with other reads, maybe: Like's
// of a block), and returns the first error of its reads but an answer of
// nothing (Exec's own error may be a nil answer that came first, hiding
// another read's failure).
func (l likeLook) exec(ctx context.Context, pipe redis.Pipeliner) error {
	cmds, _ := pipe.Exec(ctx)
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// settleLiked makes uid's liked index agree about sid with sid's likes,
// which the counts read: look is a read of both made after this request's
// writes. While they disagree it writes the index as the likes say and
// reads both again. A like and an unlike racing each other (each writes
// the two keys in one pipeline, which on a cluster goes to two masters at
// once, and on one Redis interleaves with other clients) each settle after
// their own writes, and whoever wrote either key last reads both after:
// the index never lists a like that is not there, which an export would
// show, nor misses one, which an account's deletion would leave behind. A
// status gone meanwhile has its like dropped from both (its deletion's
// cleanup takes the likes it pages, and may have passed this one). So is
// the like of a liker whose account's deletion began, and errAccountGone
// returned: the deletion's walk of the liker's likes, which comes after
// its mark, may have passed this one; a look that finds no mark came
// before it, and the walk finds the like. Its notification to author, the
// status's, goes with it: a like made before and found by this one (a
// retry) is not in the index the walk reads any more.
func (s *Service) settleLiked(ctx context.Context, uid, sid, author int64, look likeLook) error {
	k := s.keys
	for range maxSyncRounds {
		if accountGone(look.liker.Val()) {
			if err := s.takeLikeBack(ctx, uid, sid, author); err != nil {
				return err
			}
			return errAccountGone
		}
		if look.status.Val() == 0 {
			return s.dropLike(ctx, uid, sid)
		}
		there, listed := look.like.Err() == nil, look.liked.Err() == nil
		if there == listed {
			return nil
		}
		var err error
		if there {
			err = s.rdb.ZAdd(ctx, k.liked(uid), redis.Z{Score: look.like.Val(), Member: sid}).Err()
		} else {
			err = s.rdb.ZRem(ctx, k.liked(uid), sid).Err()
		}
		if err != nil {
			return err
		}
		pipe := s.rdb.Pipeline()
		look = s.queueLikeLook(ctx, pipe, uid, sid)
		if err := look.exec(ctx, pipe); err != nil {
			return err
		}
	}
	if look.status.Val() != 0 && (look.like.Err() == nil) == (look.liked.Err() == nil) {
		return nil
	}
	return fmt.Errorf("the like of %d by %d changed %d times while being written", sid, uid, maxSyncRounds)
}

// takeLikeBack takes uid's like of sid out of both its sets, and its
// notification to author, the status's.
func (s *Service) takeLikeBack(ctx context.Context, uid, sid, author int64) error {
	pipe := s.rdb.Pipeline()
	pipe.ZRem(ctx, s.keys.likes(sid), uid)
	pipe.ZRem(ctx, s.keys.liked(uid), sid)
	s.queueUnnotify(ctx, pipe, note{to: author, from: uid, kind: protocol.NotifyLiked, sid: sid})
	_, err := pipe.Exec(ctx)
	return err
}

// dropLike takes uid's like of sid out of both its sets.
func (s *Service) dropLike(ctx context.Context, uid, sid int64) error {
	pipe := s.rdb.Pipeline()
	pipe.ZRem(ctx, s.keys.likes(sid), uid)
	pipe.ZRem(ctx, s.keys.liked(uid), sid)
	_, err := pipe.Exec(ctx)
	return err
}

// notifyWhile stores n, then looks whether member is still in the sorted
// set key (the like or the repost claim n tells of), and n's status still
// there, and takes n back if not: an undo that raced it either ran its own
// take-back after the store, or took its cause away before this look; a
// deletion deletes the status's hash before its cleanup pages the likes
// and reposts and takes their notifications, so it either takes n (the
// hash was there at the look, so the cleanup came after the store) or is
// seen here. Never a notification without its cause.
//
// After a take-back it looks again: a make of the same cause between the
// look and the take-back found n stored and stored none of its own, and
// then n is stored again, and looked at again. Each further turn needs
// another make and undo of the cause meanwhile; after maxNotifyTurns the
// last step stands.
//
// The live frame's status (n.to's own, liked or reposted) carries its
// counts and n.to's own liked and reposted, as a read of it shows them,
// read once before the store: the counts of the moment, this cause's
// included. Two causes racing may publish in the other order than they
// read: a client takes a frame's counts as at least so many.
func (s *Service) notifyWhile(ctx context.Context, n note, key, member string) error {
	if n.to == n.from {
		return nil
	}
	if n.status != nil {
		// The like or repost stands already: a read that fails costs the
		// frame its counts (a client reads the status when they are not
		// there), not the notification. Redis's error is counted by the
		// client's hook.
		if counted, err := s.DecorateHidden(ctx, n.to, []Status{*n.status}); err == nil && len(counted) == 1 {
			n.status = &counted[0]
		}
	}
	for range maxNotifyTurns {
		pipe := s.rdb.Pipeline()
		s.queueNotify(ctx, pipe, n)
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		if there, err := s.causeStands(ctx, n, key, member); err != nil || there {
			return err
		}
		if s.beforeTakeBack != nil {
			s.beforeTakeBack()
		}
		pipe = s.rdb.Pipeline()
		s.queueUnnotify(ctx, pipe, n)
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		if there, err := s.causeStands(ctx, n, key, member); err != nil || !there {
			return err
		}
	}
	return nil
}

// causeStands tells whether member is in the sorted set key and n's
// status, if it names one, is not deleted.
func (s *Service) causeStands(ctx context.Context, n note, key, member string) (bool, error) {
	if n.sid == 0 {
		return s.inSet(ctx, key, member)
	}
	pipe := s.rdb.Pipeline()
	cause := pipe.ZScore(ctx, key, member)
	status := pipe.Exists(ctx, s.keys.status(n.sid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if err := cmp.Or(status.Err(), cause.Err()); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	return cause.Err() == nil && status.Val() == 1, nil
}

// maxNotifyTurns bounds the turns of notifyWhile.
const maxNotifyTurns = 8

// inSet tells whether member is in the sorted set key.
func (s *Service) inSet(ctx context.Context, key, member string) (bool, error) {
	_, err := s.rdb.ZScore(ctx, key, member).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// Likers lists who liked status id (a repost entry: its original), newest
// like first.
func (s *Service) Likers(ctx context.Context, id int64, p Page) ([]User, error) {
	st, err := s.original(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("likers of %d: %w", id, err)
	}
	return s.userList(ctx, s.keys.likes(st.ID), p)
}

// Reposters lists who reposted status id (a repost entry: its original),
// newest repost first.
func (s *Service) Reposters(ctx context.Context, id int64, p Page) ([]User, error) {
	st, err := s.original(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reposters of %d: %w", id, err)
	}
	return s.userList(ctx, s.keys.reposts(st.ID), p)
}
