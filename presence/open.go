package presence

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"
)

var (
	//go:embed friends_many.lua
	friendsManySource string
	friendsManyScript = script(copySource, friendsSource, friendsManySource)
)

const (
	// friendsPerCall is the most users one friends_many.lua call reads the
	// online friends of.
	friendsPerCall = 250
	// friendsReadPerCall is the most friends one friends_many.lua call
	// reads, summed over its users' friend sets, unless its first user has
	// more alone: the cost of a call is about that sum.
	friendsReadPerCall = 20_000
	// smallFriendSet is the most friends a user may have for their online
	// friends to be read one by one in the online copy rather than by an
	// intersection with it.
	smallFriendSet = 128
)

// Opened is what Open tells of a new connection.
type Opened struct {
	// First: no other connection of the user was registered, and their
	// friends were told they came online.
	First bool
	// Seen is the user's last activity, now by Redis's clock: the user is
	// online, as their own presence.
	Seen time.Time
	// Friends are the user's friends online, as OnlineFriends lists them,
	// read after the connection was registered.
	Friends []FriendSeen
}

type openResult struct {
	opened Opened
	err    error
}

// Open registers connection connID of uid as Connect does, then lists uid's
// friends online as OnlineFriends does: what a new stream needs, in that
// order, so that a friend's change is either in the list or published after
// the registration (and the caller subscribed before calling). Opens made
// while others are being written wait for them and go together, two script
// calls for the whole batch (register.lua, friends_many.lua; more of the
// latter when the users' friend sets are large), so that a reconnect storm
// costs Redis a few commands per stream, not a few script calls; a lone Open costs what Connect and OnlineFriends do (the batches
// are t.opens, a batch.Batcher). The writes are bounded by their own
// deadline, not ctx's, and Open waits for them. On an error the connection
// is not held, and is disconnected again if it may have been registered (at
// once, or at the next ticks while Redis fails). A connection over
// Options.MaxConnsPerUser is refused with ErrTooManyConnections, as by
// Connect.
func (t *Tracker) Open(ctx context.Context, uid int64, connID string) (Opened, error) {
	c := Beat{UID: uid, ConnID: connID}
	if err := checkConn(c); err != nil {
		return Opened{}, fmt.Errorf("open %d: %w", uid, err)
	}
	r, err := t.opens.Get(c)
	if err != nil {
		return Opened{}, err
	}
	return r.opened, r.err
}

// openBatch registers conns in one call, reads their users' online friends
// in another (or a few, see onlineFriendsOf), and answers each connection
// (t.opens.Do). Its calls are one
// at a time, spaced as batch.OpenSpaced says, bounded by batch.Timeout.
// When the friends cannot be read, the connections it registered are
// disconnected again, here while Redis answers, else at the next ticks.
func (t *Tracker) openBatch(ctx context.Context, conns []Beat) ([]openResult, error) {
	res, err := t.admit(ctx, conns)
	if err != nil {
		return nil, fmt.Errorf("open %d connections: %w", len(conns), err)
	}
	var users []int64
	seen := make(map[int64]bool, len(conns))
	for i, c := range conns {
		if res.each[i] != refused && !seen[c.UID] {
			seen[c.UID] = true
			users = append(users, c.UID)
		}
	}
	friends, err := t.onlineFriendsOf(ctx, users)
	if err != nil {
		t.mu.Lock()
		for i, c := range conns {
			if res.each[i] != refused {
				delete(t.held, c)
				t.leaving[c] = struct{}{}
			}
		}
		t.mu.Unlock()
		t.disconnectAgain(ctx)
	}
	out := make([]openResult, len(conns))
	for i, c := range conns {
		switch {
		case res.each[i] == refused:
			out[i] = openResult{err: ErrTooManyConnections}
		case err != nil:
			out[i] = openResult{err: fmt.Errorf("open %d: %w", c.UID, err)}
		default:
			out[i] = openResult{opened: Opened{First: res.each[i] == announced, Seen: res.now, Friends: friends[c.UID]}}
		}
	}
	return out, nil
}

// onlineFriendsOf lists the online friends of each of uids, friendsPerCall
// users per script call at most, and fewer when their friend sets together
// hold more than friendsReadPerCall friends: the script answers those it
// read, and the next call asks for the rest.
func (t *Tracker) onlineFriendsOf(ctx context.Context, uids []int64) (map[int64][]FriendSeen, error) {
	out := make(map[int64][]FriendSeen, len(uids))
	k := t.keys
	for len(uids) > 0 {
		batch := uids[:min(friendsPerCall, len(uids))]
		keys := make([]string, 0, 4+len(batch))
		keys = append(keys, k.lastSeen(), k.connected(), k.onlineCopy(), k.scratch())
		for _, uid := range batch {
			keys = append(keys, t.opts.FriendsKey(uid))
		}
		res, err := friendsManyScript.Run(ctx, t.rdb, keys, ms(t.opts.Window), ms(t.opts.CopyTTL),
			t.opts.MaxOnlineFriends, smallFriendSet, friendsReadPerCall).Slice()
		if err != nil {
			return nil, fmt.Errorf("online friends of %d users: %w", len(batch), err)
		}
		answered := int(toInt(res, 0))
		if answered < 1 || answered > len(batch) {
			return nil, fmt.Errorf("online friends of %d users: %d answered", len(batch), answered)
		}
		at := 1
		for _, uid := range batch[:answered] {
			n := int(toInt(res, at))
			at++
			friends := make([]FriendSeen, 0, n)
			for range n {
				fid, err := strconv.ParseInt(fmt.Sprint(res[at]), 10, 64)
				if err == nil {
					friends = append(friends, FriendSeen{UID: fid, LastSeen: unixMilli(toInt(res, at+1))})
				}
				at += 2
			}
			out[uid] = friends
		}
		uids = uids[answered:]
	}
	return out, nil
}
