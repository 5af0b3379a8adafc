package realtime

import (
	"context"
	"slices"
	"sync"
	"time"

	"chorus/presence"
	"chorus/protocol"
	"chorus/social"
)

// A ready frame lists the user's friends online with their logins and
// names. In a reconnect storm the same friends are in many streams' lists,
// so the hub keeps the references it read for refTTL and reads only the
// others: a friend's name changed within refTTL of a stream's opening may
// be shown as it was until the client reconnects.
const (
	refTTL = 2 * time.Second
	// refSweepAt is how many references the cache holds before a fill
	// first takes the stale ones out.
	refSweepAt = 4096
	// refReadsPerCall bounds the friends asked of one read (h.refReads),
	// each stream's counted (a user asked by two streams counts twice, and
	// is read once): some 250 streams of 20 friends missed, a stream with
	// the most online friends a ready frame lists in one read, an HMGET
	// pipeline of a few ms of Redis at most.
	refReadsPerCall = 5000
)

// refCache is the references the hub read lately, by user id.
type refCache struct {
	mu    sync.Mutex
	refs  map[int64]cachedRef
	swept time.Time // the last sweep of the stale ones: at most one a refTTL
}

type cachedRef struct {
	ref  protocol.UserRef
	read time.Time
}

// onlineFriends are the friends of a ready frame, with their references
// read within refTTL; those not cached are read with those that other
// streams opening meanwhile miss, each user once (h.refReads), in calls
// bounded by batch.Timeout.
func (h *Hub) onlineFriends(online []presence.FriendSeen) ([]protocol.OnlineFriend, error) {
	now := time.Now()
	refs := make(map[int64]protocol.UserRef, len(online))
	var missing []int64
	h.friendRefs.mu.Lock()
	for _, f := range online {
		if r, ok := h.friendRefs.refs[f.UID]; ok && now.Sub(r.read) < refTTL {
			refs[f.UID] = r.ref
		} else {
			missing = append(missing, f.UID)
		}
	}
	h.friendRefs.mu.Unlock()
	if len(missing) > 0 {
		users, err := h.refReads.GetAll(missing)
		if err != nil {
			return nil, err
		}
		// A user gone is the zero User: left out, and not kept.
		users = slices.DeleteFunc(users, func(u social.User) bool { return u.ID == 0 })
		h.friendRefs.fill(users, now)
		for _, u := range users {
			refs[u.ID] = u.Ref()
		}
	}
	out := make([]protocol.OnlineFriend, 0, len(online))
	for _, f := range online {
		if r, ok := refs[f.UID]; ok { // a user gone (deleted) is left out
			out = append(out, protocol.OnlineFriend{User: r, LastSeen: f.LastSeen})
		}
	}
	return out, nil
}

// readRefs reads users by id for the friends' references (h.refReads.Do):
// the zero User for one gone.
func (h *Hub) readRefs(ctx context.Context, ids []int64) ([]social.User, error) {
	users, err := h.feed.Users(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]social.User, len(users))
	for _, u := range users {
		byID[u.ID] = u
	}
	out := make([]social.User, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

// fill caches the references of users, read at read.
func (c *refCache) fill(users []social.User, read time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs == nil {
		c.refs = make(map[int64]cachedRef)
	}
	// Once a refTTL at most: in a storm every reference is fresh, and a
	// sweep on each fill would walk them all for nothing.
	if len(c.refs) >= refSweepAt && read.Sub(c.swept) >= refTTL {
		c.swept = read
		for id, r := range c.refs {
			if read.Sub(r.read) >= refTTL {
				delete(c.refs, id)
			}
		}
	}
	for _, u := range users {
		c.refs[u.ID] = cachedRef{ref: u.Ref(), read: read}
	}
}
