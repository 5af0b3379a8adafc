package social

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// maxSyncRounds bounds the write-then-verify loops (here, and the
// followee's side of a follow): each round after the first means that
// another request changed the pair meanwhile.
const maxSyncRounds = 10

// syncFriendMirrors brings presence's copies of a's and b's friend sets
// (Options.FriendsMirror) to agree with the friend sets on a and b: each
// mirror holds the other, with the same friend-since score, exactly when
// the friend set does. Follows and unfollows of the pair call it after
// their writes to the friend sets, whether or not they changed them, so
// that a retry after a crash syncs too.
//
// The friend set and its mirror are in different slots, so this is
// write-then-verify: read the friend set, write the mirror, read the friend
// set again, and go round again while it changed. Whatever runs at once,
// the mirror ends right: of the changes to a friend set, take the last.
// The request that made it syncs after it, so it reads it and writes it.
// Any mirror write later than that one, from an older read, is followed by
// its own sync's next read, which gives the last change and sends that sync
// round again to write it. So the last write to the mirror carries the
// friend set's last change.
func (s *Service) syncFriendMirrors(ctx context.Context, a, b int64) error {
	mirror := s.opts.FriendsMirror
	if mirror == nil {
		return nil
	}
	k := s.keys
	pairs := [2][2]int64{{a, b}, {b, a}} // the friend set of [0] and its member [1]
	// read returns each pair's friend-since score, 0 when they are not
	// friends (ZMSCORE reads a missing member as 0; a time never is).
	read := func() ([2]float64, error) {
		var since [2]float64
		pipe := s.rdb.Pipeline()
		var cmds [2]*redis.FloatSliceCmd
		for i, p := range pairs {
			cmds[i] = pipe.ZMScore(ctx, k.friends(p[0]), itoa(p[1]))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return since, err
		}
		for i, c := range cmds {
			if v := c.Val(); len(v) == 1 {
				since[i] = v[0]
			}
		}
		return since, nil
	}
	since, err := read()
	if err != nil {
		return fmt.Errorf("friend mirrors of %d and %d: %w", a, b, err)
	}
	for range maxSyncRounds {
		pipe := s.rdb.Pipeline()
		for i, p := range pairs {
			if since[i] == 0 {
				pipe.ZRem(ctx, mirror(p[0]), itoa(p[1]))
			} else {
				pipe.ZAdd(ctx, mirror(p[0]), redis.Z{Score: since[i], Member: itoa(p[1])})
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("friend mirrors of %d and %d: %w", a, b, err)
		}
		again, err := read()
		if err != nil {
			return fmt.Errorf("friend mirrors of %d and %d: %w", a, b, err)
		}
		if again == since {
			return nil
		}
		since = again
	}
	return fmt.Errorf("friend mirrors of %d and %d: the friend sets changed %d times while being copied", a, b, maxSyncRounds)
}

// mirrorMember makes member's place in the sorted set mirror agree with
// its source, which read gives (its score; redis.Nil for none, and a
// source's score is never 0) and which every writer writes before it
// mirrors it: it writes what it read, then reads again, until a read
// agrees with the write before it. Writers racing each other each mirror
// after their own write, and the mirror that writes last read the source
// after every write to it: the mirror ends agreeing. between, when set,
// runs between the first read and its write (tests race there).
func (s *Service) mirrorMember(ctx context.Context, mirror, member string, read func() (float64, error), between func()) error {
	readScore := func() (float64, error) {
		v, err := read()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return v, err
	}
	score, err := readScore()
	if err != nil {
		return err
	}
	if between != nil {
		between()
	}
	for range maxSyncRounds {
		if score == 0 {
			err = s.rdb.ZRem(ctx, mirror, member).Err()
		} else {
			err = s.rdb.ZAdd(ctx, mirror, redis.Z{Score: score, Member: member}).Err()
		}
		if err != nil {
			return err
		}
		again, err := readScore()
		if err != nil || again == score {
			return err
		}
		score = again
	}
	return fmt.Errorf("changed %d times while being mirrored", maxSyncRounds)
}
