package social

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed push.lua
	pushSource string
	pushScript = redis.NewScript(pushSource)

	//go:embed push_undo.lua
	pushUndoSource string
	pushUndoScript = redis.NewScript(pushUndoSource)
)

// unfollowsField is the field of a user's hash that counts the unfollows of
// them, one each (unfollow_followee.lua): a post's push reads it before and
// after its plain pushes (homePush).
const unfollowsField = "unfollows"

// pushBatch is how many followers one call of push.lua takes on one Redis,
// so that a page of a thousand goes in a few calls and none holds Redis
// for long.
const pushBatch = 250

// What a push did to one follower's home timeline (homePush.results).
const (
	pushNotFollowing = -1 // the follower no longer follows the author (see homePush)
	pushThere        = 0  // their home has it already (or, for a repost, its original)
	pushAdded        = 1  // it was added, and the frame sent if they are connected
)

// homePush is the push of one status into a page of followers' home
// timelines, queued on a pipeline (queuePush) with whatever else goes in
// that round trip, and read once it ran (results).
//
// A follower connected now, and every follower of a repost entry, is
// pushed by push.lua, which checks the follow, adds and sends the frame at
// once (pushBatch followers a call on one Redis; on a cluster, where a
// script's keys share a slot, one a call). The others, most of a page, get
// no frame, and are pushed with plain commands, at Redis's own speed: a
// ZADD, and a trim one time in trimEvery. Their follows are checked for
// the whole page at once, by the author's unfollow count (unfollowsField):
// read before the page (as the page is read), and again once the ZADDs
// are answered. An unfollow counts itself before it walks the follower's
// home timeline, so when the count has not moved, every unfollow of the
// author either came before the page was read (and its follower is not in
// the page) or walks the home timeline after the ZADD, and takes the
// status out. When it has moved, the plain pushes are undone where the
// follow no longer stands (undoUnfollowed).
type homePush struct {
	author, sid int64
	uids        []int64
	scripted    []int // those push.lua pushes, by their place in uids
	calls       []pushCall
	plain       []plainPush
}

// pushCall is one call of push.lua: the followers scripted[first:first+n].
type pushCall struct {
	cmd      *redis.IntSliceCmd
	first, n int
}

// plainPush is one follower's push with plain commands: the follower's
// place in uids, and its ZADD.
type plainPush struct {
	i   int
	add *redis.IntCmd
}

// queuePush queues on pipe the push of status sid by author (a repost
// entry of repostOf, or 0 for a status) to the home timelines of uids,
// with its live frame payload to those of them connected; unfollows is the
// author's unfollow count read before the page ("" for none).
func (s *Service) queuePush(ctx context.Context, pipe redis.Pipeliner, author, sid, repostOf int64, payload string, uids []int64, connected []bool, unfollows string) *homePush {
	k := s.keys
	h := &homePush{author: author, sid: sid, uids: uids}
	for i, uid := range uids {
		if repostOf != 0 || connected[i] {
			h.scripted = append(h.scripted, i)
			continue
		}
		h.plain = append(h.plain, plainPush{i: i, add: pipe.ZAdd(ctx, k.home(uid), redis.Z{Score: float64(sid), Member: sid})})
		if (sid+uid)%trimEvery == 0 {
			pipe.ZRemRangeByRank(ctx, k.home(uid), 0, -int64(s.opts.HomeSize)-1)
		}
	}
	per := pushBatch
	if k.cluster {
		per = 1
	}
	for first := 0; first < len(h.scripted); first += per {
		h.calls = append(h.calls, s.queuePushCall(ctx, pipe, author, sid, repostOf, payload, uids, connected, unfollows, h.scripted, first, min(first+per, len(h.scripted))))
	}
	return h
}

// queuePushCall queues one call of push.lua, for the followers
// uids[at[first]] to uids[at[end-1]]: an EVALSHA, so that a page sends the
// script's hash, not its text (results loads it where Redis lacks it). On
// one Redis it passes the author's unfollow count read before the page, so
// that the script leaves out the follow checks while the count stands.
func (s *Service) queuePushCall(ctx context.Context, pipe redis.Pipeliner, author, sid, repostOf int64, payload string, uids []int64, connected []bool, unfollows string, at []int, first, end int) pushCall {
	k := s.keys
	n := end - first
	stride := 2
	if repostOf != 0 {
		stride = 3
	}
	nkeys := stride * n
	if !k.cluster {
		nkeys++
	}
	args := make([]any, 0, 3+nkeys+8+n)
	args = append(args, "evalsha", pushScript.Hash(), nkeys)
	for _, i := range at[first:end] {
		args = append(args, k.following(uids[i]), k.home(uids[i]))
		if repostOf != 0 {
			args = append(args, k.homeReposts(uids[i]))
		}
	}
	count := ""
	if !k.cluster {
		args = append(args, k.user(author))
		count = cmp.Or(unfollows, "0")
	}
	flags := make([]byte, n)
	for j, i := range at[first:end] {
		flags[j] = '0'
		if (sid+uids[i])%trimEvery == 0 {
			flags[j]++
		}
		if connected[i] {
			flags[j] += 2
		}
	}
	args = append(args, sid, author, repostOf, s.opts.HomeSize, s.bus.Command(), payload, string(flags), count)
	for _, i := range at[first:end] {
		if connected[i] {
			args = append(args, s.bus.UserChannel(uids[i]))
		}
	}
	cmd := redis.NewIntSliceCmd(ctx, args...)
	_ = pipe.Process(ctx, cmd)
	return pushCall{cmd: cmd, first: first, n: n}
}

// results returns what the push did, a follower each (pushAdded,
// pushThere, pushNotFollowing; a plain push is never the last), once the pipeline it was queued on ran,
// and returned execErr. The calls Redis answered NOSCRIPT ran nothing: they
// are sent again once the script is loaded (on every shard of a cluster),
// one more round trip, after a Redis lost its scripts. Any other error of
// the pipeline is returned.
func (h *homePush) results(ctx context.Context, rdb redis.UniversalClient, cmds []redis.Cmder, execErr error) ([]int64, error) {
	if execErr != nil {
		noscript := false
		for _, c := range cmds {
			switch e := c.Err(); {
			case e == nil:
			case redis.HasErrorPrefix(e, "NOSCRIPT"):
				noscript = true
			default:
				return nil, e
			}
		}
		if noscript {
			if err := h.again(ctx, rdb); err != nil {
				return nil, err
			}
		}
	}
	out := make([]int64, len(h.uids))
	for _, c := range h.calls {
		got := c.cmd.Val()
		if len(got) != c.n {
			return nil, fmt.Errorf("push status %d: %d answers for %d homes", h.sid, len(got), c.n)
		}
		for j, v := range got {
			out[h.scripted[c.first+j]] = v
		}
	}
	for _, p := range h.plain {
		out[p.i] = p.add.Val()
	}
	return out, nil
}

// again loads push.lua and runs again the calls Redis answered NOSCRIPT.
func (h *homePush) again(ctx context.Context, rdb redis.UniversalClient) error {
	if err := pushScript.Load(ctx, rdb).Err(); err != nil {
		return err
	}
	pipe := rdb.Pipeline()
	for _, c := range h.calls {
		if c.cmd.Err() != nil {
			c.cmd.SetErr(nil)
			_ = pipe.Process(ctx, c.cmd)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// undoUnfollowed checks the plain pushes' follows, given the author's
// unfollow count read before the page (before) and after the pushes were
// answered (after): when the count moved, an unfollow may have walked a
// home timeline before its push, and push_undo.lua takes the status out
// of each home pushed to whose follow no longer stands (one more round
// trip, rarely).
func (s *Service) undoUnfollowed(ctx context.Context, h *homePush, before string, after *redis.SliceCmd) error {
	if len(h.plain) == 0 || unfollowCount(after) == before {
		return nil
	}
	pipe := s.rdb.Pipeline()
	for _, p := range h.plain {
		uid := h.uids[p.i]
		pushUndoScript.Eval(ctx, pipe, []string{s.keys.following(uid), s.keys.home(uid)}, h.author, h.sid)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// queueUnfollows queues on pipe the read of uid's unfollow count (an HMGET,
// which answers a missing field without an error), for unfollowCount.
func (s *Service) queueUnfollows(ctx context.Context, pipe redis.Pipeliner, uid int64) *redis.SliceCmd {
	return pipe.HMGet(ctx, s.keys.user(uid), unfollowsField)
}

// unfollowCount is the unfollow count an HMGET of unfollowsField read, ""
// when the user was never unfollowed.
func unfollowCount(cmd *redis.SliceCmd) string {
	if v := cmd.Val(); len(v) > 0 {
		if c, ok := v[0].(string); ok {
			return c
		}
	}
	return ""
}

// unpush takes status sid out of the home timelines of uids it was just
// added to (added, as results says), and tells those connected that it is gone: for a
// push that found the status deleted after it, by a deletion whose walk of
// these homes came first.
func (s *Service) unpush(ctx context.Context, sid int64, uids []int64, added []int64, connected []bool) error {
	gone, err := json.Marshal(protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: sid})
	if err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	for i, uid := range uids {
		if added[i] != pushAdded {
			continue
		}
		pipe.ZRem(ctx, s.keys.home(uid), sid)
		if connected[i] {
			s.bus.Queue(ctx, pipe, s.bus.UserChannel(uid), gone)
		}
	}
	_, err = pipe.Exec(ctx)
	return err
}
