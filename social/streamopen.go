package social

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// StreamKey names a stream opening: its user and the id of the session it
// opens with (see SessionID).
type StreamKey struct {
	UID     int64
	Session string
}

// StreamOpening is what a stream's opening reads of the social core once
// its user's channel is live: whether its session still stands (a sign-out
// published before the subscription reached no one), the pulled authors
// whose channels it listens to, the user with their unread count for the
// ready frame, and the authors whose statuses the user may not see
// (HiddenAuthors).
type StreamOpening struct {
	Owner  int64 // the session's user now; 0: the session ended
	Pulled []int64
	User   User // the zero User (ID 0) when the user is gone
	Unread int64
	Hidden []int64
}

// StreamOpenings reads, for each stream opening at once, what StreamOpening
// says: a GET, a ZRANGE, an HMGET and an EXISTS per stream, all in one
// round trip. The HMGET reads the unread count kept in the user's hash with
// the user; the EXISTS whether the user blocks, mutes or is blocked by
// anyone. A second round trip, when one of them asks it, reads whom those
// who do may not see (HiddenAuthors), and counts the users whose count is
// not kept (their notifications changed since it was counted, or it never
// was) by notes_unread.lua, which keeps their counts for the next openings:
// once for all of them on one Redis, once per user on a cluster, where each
// user's keys have a slot of their own. A storm of reconnects thus reads
// each user's notifications and hidden authors at most once. It does not
// renew the sessions: checking a session is not using it.
func (s *Service) StreamOpenings(ctx context.Context, keys []StreamKey) ([]StreamOpening, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	k := s.keys
	type reads struct {
		owner  *redis.StringCmd
		pulled *redis.StringSliceCmd
		user   *redis.SliceCmd
		hides  *redis.IntCmd
	}
	rs := make([]reads, len(keys))
	pipe := s.rdb.Pipeline()
	for i, key := range keys {
		rs[i] = reads{
			owner:  pipe.Get(ctx, k.session(key.Session)),
			pulled: pipe.ZRange(ctx, k.pulls(key.UID), 0, -1),
			user:   pipe.HMGet(ctx, k.user(key.UID), openingFields...),
			hides:  pipe.Exists(ctx, k.blocks(key.UID), k.mutes(key.UID), k.blockedBy(key.UID)),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%d stream openings: %w", len(keys), err)
	}
	out := make([]StreamOpening, len(keys))
	uncounted := make(map[int64][]int) // uid -> the openings of uid's to count
	hiding := make(map[int64][]int)    // uid -> the openings of uid's that hide someone
	var uids, hiders []int64
	for i, r := range rs {
		if err := r.owner.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("stream opening of %d: %w", keys[i].UID, err)
		}
		o := &out[i]
		o.Owner, _ = r.owner.Int64()
		o.Pulled = parseIDs(r.pulled.Val())
		vals := r.user.Val()
		u, ok := parseUser(vals)
		if !ok {
			continue
		}
		o.User = u
		if r.hides.Val() > 0 && o.Owner == u.ID {
			if _, ok := hiding[u.ID]; !ok {
				hiders = append(hiders, u.ID)
			}
			hiding[u.ID] = append(hiding[u.ID], i)
		}
		kept, _ := vals[len(userFields)].(string)
		if n, err := strconv.ParseInt(kept, 10, 64); err == nil && n >= 0 {
			o.Unread = n
			continue
		}
		if _, ok := uncounted[u.ID]; !ok {
			uids = append(uids, u.ID)
		}
		uncounted[u.ID] = append(uncounted[u.ID], i)
	}
	if len(uids) == 0 && len(hiders) == 0 {
		return out, nil
	}
	hidden := make([]func() []int64, len(hiders))
	counts, err := s.unreadCounts(ctx, uids, func(pipe redis.Pipeliner) {
		for j, uid := range hiders {
			hidden[j] = s.queueHiddenAuthors(ctx, pipe, uid)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%d stream openings: %w", len(keys), err)
	}
	for j, uid := range uids {
		for _, i := range uncounted[uid] {
			out[i].Unread = counts[j]
		}
	}
	for j, uid := range hiders {
		ids := hidden[j]()
		for _, i := range hiding[uid] {
			out[i].Hidden = ids
		}
	}
	return out, nil
}

// openingFields are the user's fields a stream opening reads: the user's
// own, then the unread count kept (see notes_unread.lua).
var openingFields = append(slices.Clip(userFields), "unread")

// unreadCounts counts the unread notifications of uids (and keeps each
// count, see notes_unread.lua), in one round trip: one script call for all
// on one Redis, one per user on a cluster; by the script's hash, loaded
// again after NOSCRIPT. also queues other reads in the same round trip,
// and again if it is made again.
func (s *Service) unreadCounts(ctx context.Context, uids []int64, also func(redis.Pipeliner)) ([]int64, error) {
	k := s.keys
	per := len(uids) // users per script call
	if k.cluster {
		per = 1
	}
	for try := 0; ; try++ {
		pipe := s.rdb.Pipeline()
		also(pipe)
		var cmds []*redis.Cmd
		var ks []string
		for i, uid := range uids {
			ks = append(ks, k.notes(uid), k.notesRead(uid), k.user(uid))
			if (i+1)%per == 0 {
				cmds = append(cmds, pipe.EvalSha(ctx, notesUnreadScript.Hash(), ks))
				ks = nil
			}
		}
		_, err := pipe.Exec(ctx)
		noScript := false
		for _, c := range cmds {
			noScript = noScript || redis.HasErrorPrefix(c.Err(), "NOSCRIPT")
		}
		if !noScript && err == nil {
			out := make([]int64, 0, len(uids))
			for _, c := range cmds {
				res, err := c.Int64Slice()
				if err == nil && len(res) != 2*per {
					err = fmt.Errorf("unread counts answered %v", res)
				}
				if err != nil {
					return nil, fmt.Errorf("unread counts: %w", err)
				}
				for j := 0; j < len(res); j += 2 {
					out = append(out, res[j])
				}
			}
			return out, nil
		}
		if try > 0 || !noScript {
			return nil, fmt.Errorf("unread counts of %d users: %w", len(uids), err)
		}
		if err := notesUnreadScript.Load(ctx, s.rdb).Err(); err != nil {
			return nil, fmt.Errorf("unread counts of %d users: %w", len(uids), err)
		}
	}
}
