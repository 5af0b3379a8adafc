package social

import (
	"context"
	"errors"
	"fmt"

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
// whose channels it listens to, and the user with their unread count for
// the ready frame.
type StreamOpening struct {
	Owner  int64 // the session's user now; 0: the session ended
	Pulled []int64
	User   User // the zero User (ID 0) when the user is gone
	Unread int64
}

// StreamOpenings reads, for each stream opening at once, what StreamOpening
// says, all in one round trip: a GET, a ZRANGE and an HMGET per stream, and
// the unread counts' script (by its hash, loaded again after NOSCRIPT)
// once for the batch on one Redis, once per stream on a cluster, where each
// user's keys have a slot of their own. It does not renew the sessions:
// checking a session is not using it.
func (s *Service) StreamOpenings(ctx context.Context, keys []StreamKey) ([]StreamOpening, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	k := s.keys
	type reads struct {
		owner  *redis.StringCmd
		pulled *redis.StringSliceCmd
		user   *redis.SliceCmd
		unread *redis.Cmd
		at     int // the stream's place in unread's answer, in pairs
	}
	rs := make([]reads, len(keys))
	for try := 0; ; try++ {
		pipe := s.rdb.Pipeline()
		var notes []string
		for i, key := range keys {
			rs[i] = reads{
				owner:  pipe.Get(ctx, k.session(key.Session)),
				pulled: pipe.ZRange(ctx, k.pulls(key.UID), 0, -1),
				user:   pipe.HMGet(ctx, k.user(key.UID), userFields...),
			}
			notes = append(notes, k.notes(key.UID), k.notesRead(key.UID))
			if k.cluster {
				rs[i].unread = pipe.EvalSha(ctx, notesUnreadScript.Hash(), notes)
				notes = nil
			} else {
				rs[i].at = i
			}
		}
		if !k.cluster {
			unread := pipe.EvalSha(ctx, notesUnreadScript.Hash(), notes)
			for i := range rs {
				rs[i].unread = unread
			}
		}
		_, err := pipe.Exec(ctx)
		noScript := false
		for _, r := range rs {
			noScript = noScript || redis.HasErrorPrefix(r.unread.Err(), "NOSCRIPT")
		}
		if !noScript && (err == nil || errors.Is(err, redis.Nil)) {
			break
		}
		if try > 0 || !noScript {
			return nil, fmt.Errorf("%d stream openings: %w", len(keys), err)
		}
		if err := notesUnreadScript.Load(ctx, s.rdb).Err(); err != nil {
			return nil, fmt.Errorf("%d stream openings: %w", len(keys), err)
		}
	}
	pairs := 1 // in each unread answer
	if !k.cluster {
		pairs = len(keys)
	}
	out := make([]StreamOpening, len(keys))
	for i, r := range rs {
		if err := r.owner.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("stream opening of %d: %w", keys[i].UID, err)
		}
		o := &out[i]
		o.Owner, _ = r.owner.Int64()
		o.Pulled = parseIDs(r.pulled.Val())
		u, ok := parseUser(r.user.Val())
		if !ok {
			continue
		}
		o.User = u
		res, err := r.unread.Int64Slice()
		if err == nil && len(res) != 2*pairs {
			err = fmt.Errorf("unread count answered %v", res)
		}
		if err != nil {
			return nil, fmt.Errorf("stream opening of %d: %w", keys[i].UID, err)
		}
		o.Unread = res[2*r.at]
	}
	return out, nil
}
