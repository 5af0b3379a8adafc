package social

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// copyChunk is the most statuses one round of a copy reads and writes.
const copyChunk = 500

// copyBelow copies into the timeline to, newest first, the statuses of the
// timeline from scored below below (a ZRANGEBYSCORE bound: "+inf" or
// "(<id>"), at most budget of them, keeping to to its newest size. Once to
// holds size, only statuses newer than its lowest can stay, so only those
// are read, and the copy stops when none remain. It returns the number
// copied, the lowest id copied ("" when none), and whether from has nothing
// left to give below that.
//
// The two timelines may be on different shards of a cluster, so the copy is
// plain commands, each round a read then a write. Every write is idempotent
// (a status is its own score), so a copy run twice, or beside a fan-out
// pass, leaves the same timeline. A status deleted while it is copied is
// taken out again: each round checks, after writing, that its statuses
// still exist. A status's hash goes before any of its cleanup walks the
// timelines that hold it, so a copy either sees it gone or is cleaned up
// after. The guard does the same for the reason of the copy: a copy whose
// follow (or list membership) ended meanwhile takes out what it added.
func (s *Service) copyBelow(ctx context.Context, to, from string, g guard, below string, size, budget int) (copied int, last string, done bool, err error) {
	for copied < budget {
		floor := "-inf"
		pipe := s.rdb.Pipeline()
		n := pipe.ZCard(ctx, to)
		lowest := pipe.ZRangeWithScores(ctx, to, 0, 0)
		if _, err := pipe.Exec(ctx); err != nil {
			return copied, last, false, err
		}
		if n.Val() >= int64(size) && len(lowest.Val()) == 1 {
			floor = "(" + strconv.FormatFloat(lowest.Val()[0].Score, 'f', -1, 64)
		}
		want := min(budget-copied, copyChunk)
		batch, err := s.rdb.ZRevRangeByScoreWithScores(ctx, from, &redis.ZRangeBy{
			Max: below, Min: floor, Count: int64(want),
		}).Result()
		if err != nil {
			return copied, last, false, err
		}
		if len(batch) > 0 {
			kept, err := s.homeFilter(ctx, g.home, batch, size)
			if err != nil {
				return copied, last, false, err
			}
			if len(kept) > 0 {
				if err := s.addStatuses(ctx, to, kept, size, g); err != nil {
					return copied, last, false, err
				}
			}
			copied += len(batch)
			last, _ = batch[len(batch)-1].Member.(string)
			below = "(" + last
		}
		if len(batch) < want {
			return copied, last, true, nil
		}
	}
	return copied, last, false, nil
}

// copyLatest copies the newest statuses of the timeline from into to: at
// most size, and once to holds size, only those newer than its lowest. It
// returns the number copied.
func (s *Service) copyLatest(ctx context.Context, to, from string, g guard, size int) (int, error) {
	copied, _, _, err := s.copyBelow(ctx, to, from, g, "+inf", size, size)
	return copied, err
}

// guard is what a copy stands on: member in the sorted set key (the
// followee among those the reader follows, the member among a list's). A
// zero guard stands always. home, for a copy into a home timeline, is its
// reader (0 for a list's).
type guard struct {
	key, member string
	home        int64
}

// homeFilter leaves out of zs, statuses copied into reader's home timeline
// (0: into a list's, which takes every one), what the fan-out would not
// have brought there: a reply to someone other than its author and reader
// whom reader does not follow (answeredOnly), and a repost entry whose
// original the home holds, or another repost of it still there
// (push.lua). For the repost entries kept, it writes the home's map of
// originals to the entries that brought them in (kept to size, as the
// pushes keep it). Two round trips, a third for the entries the map
// names, a fourth for the map's writes.
func (s *Service) homeFilter(ctx context.Context, reader int64, zs []redis.Z, size int) ([]redis.Z, error) {
	if reader == 0 || len(zs) == 0 {
		return zs, nil
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	reads := make([]*redis.SliceCmd, len(zs))
	for i, z := range zs {
		id, _ := z.Member.(string)
		reads[i] = pipe.HMGet(ctx, k.statusPrefix()+id, "uid", "reply_uid", "repost_of")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	field := func(i, f int) string { v, _ := reads[i].Val()[f].(string); return v }
	me := itoa(reader)
	// answered is the author that status i answers, when reader must follow
	// them to get it: a reply to another than its author and reader, by
	// another than reader ("" otherwise).
	answered := func(i int) string {
		if p, author := field(i, 1), field(i, 0); p != "" && p != author && p != me && author != me {
			return p
		}
		return ""
	}
	original := func(i int) string {
		if o := field(i, 2); o != "0" {
			return o
		}
		return ""
	}
	var parents, originals []string
	for i := range zs {
		if p := answered(i); p != "" {
			parents = append(parents, p)
		}
		if o := original(i); o != "" {
			originals = append(originals, o)
		}
	}
	if len(parents) == 0 && len(originals) == 0 {
		return zs, nil
	}
	follows := map[string]bool{}
	held := map[string]bool{}     // originals the home holds
	mapped := map[string]string{} // originals -> the entry that brought them in, per the map
	pipe = s.rdb.Pipeline()
	var followed, inHome *redis.FloatSliceCmd
	var entries *redis.FloatSliceCmd
	if len(parents) > 0 {
		followed = pipe.ZMScore(ctx, k.following(reader), parents...)
	}
	if len(originals) > 0 {
		inHome = pipe.ZMScore(ctx, k.home(reader), originals...)
		entries = pipe.ZMScore(ctx, k.homeReposts(reader), originals...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	// ZMSCORE reads a missing member as 0; follow scores and ids never are.
	for i, p := range parents {
		follows[p] = followed.Val()[i] != 0
	}
	var others []string
	for i, o := range originals {
		held[o] = inHome.Val()[i] != 0
		if e := entries.Val()[i]; e != 0 {
			mapped[o] = strconv.FormatFloat(e, 'f', -1, 64)
			others = append(others, mapped[o])
		}
	}
	still := map[string]bool{} // entries of the map still in the home
	if len(others) > 0 {
		in, err := s.rdb.ZMScore(ctx, k.home(reader), others...).Result()
		if err != nil {
			return nil, err
		}
		for i, e := range others {
			still[e] = in[i] != 0
		}
	}
	kept := zs[:0:0]
	var brought []redis.Z // originals -> the entries kept that bring them in
	for i, z := range zs {
		id, _ := z.Member.(string)
		if p := answered(i); p != "" && !follows[p] {
			continue
		}
		if o := original(i); o != "" {
			if e, ok := mapped[o]; held[o] || (ok && e != id && still[e]) {
				continue
			}
			brought = append(brought, redis.Z{Score: z.Score, Member: o})
		}
		kept = append(kept, z)
	}
	if len(brought) > 0 {
		pipe = s.rdb.Pipeline()
		pipe.ZAdd(ctx, k.homeReposts(reader), brought...)
		pipe.ZRemRangeByRank(ctx, k.homeReposts(reader), 0, int64(-size-1))
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// addStatuses adds statuses to the timeline at key, trims it to its newest
// size, and takes out again those whose status was deleted meanwhile, or all
// of them when g no longer stands. An end of g (an unfollow, a member's
// removal) is written before its walk of the timeline, so either the check
// here sees it or that walk comes after these writes.
func (s *Service) addStatuses(ctx context.Context, key string, zs []redis.Z, size int, g guard) error {
	pipe := s.rdb.Pipeline()
	pipe.ZAdd(ctx, key, zs...)
	pipe.ZRemRangeByRank(ctx, key, 0, int64(-size-1))
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	pipe = s.rdb.Pipeline()
	exists := make([]*redis.IntCmd, len(zs))
	for i, z := range zs {
		id, _ := z.Member.(string)
		exists[i] = pipe.Exists(ctx, s.keys.statusPrefix()+id)
	}
	var stands *redis.FloatCmd
	if g.key != "" {
		stands = pipe.ZScore(ctx, g.key, g.member)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	var gone []any
	for i, e := range exists {
		if e.Val() == 0 || (stands != nil && errors.Is(stands.Err(), redis.Nil)) {
			gone = append(gone, zs[i].Member)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return s.rdb.ZRem(ctx, key, gone...).Err()
}
