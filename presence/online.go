package presence

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"chorus/protocol"
)

var (
	//go:embed copy.lua
	copySource string

	//go:embed friends.lua
	friendsSource string

	//go:embed online_friends.lua
	onlineFriendsSource string
	onlineFriendsScript = script(copySource, friendsSource, onlineFriendsSource)

	//go:embed presences.lua
	presencesSource string
	presencesScript = script(presencesSource)
)

// FriendSeen is a friend online now and the time of their last activity.
type FriendSeen struct {
	UID      int64
	LastSeen time.Time
}

// OnlineFriends lists uid's friends who are online now, most recent activity
// first, at most Options.MaxOnlineFriends of them. A user who is unknown or
// has no friends has none online. One script call; see online_friends.lua.
func (t *Tracker) OnlineFriends(ctx context.Context, uid int64) ([]FriendSeen, error) {
	if uid <= 0 {
		return []FriendSeen{}, nil
	}
	k := t.keys
	res, err := onlineFriendsScript.Run(ctx, t.rdb, []string{
		k.lastSeen(), k.connected(), k.onlineCopy(),
		t.opts.FriendsKey(uid), k.scratch(),
	}, ms(t.opts.Window), ms(t.opts.CopyTTL), t.opts.MaxOnlineFriends).Slice()
	if err != nil {
		return nil, fmt.Errorf("online friends of %d: %w", uid, err)
	}
	friends := make([]FriendSeen, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		fid, err := strconv.ParseInt(fmt.Sprint(res[i]), 10, 64)
		if err != nil {
			continue // not a user id
		}
		friends = append(friends, FriendSeen{UID: fid, LastSeen: unixMilli(toInt(res, i+1))})
	}
	return friends, nil
}

// UserPresence reports whether uid is online (seen within W and still
// connected) and when they were last active (nil if never). Presence is for
// the user and their friends only; the caller must check who is asking.
func (t *Tracker) UserPresence(ctx context.Context, uid int64) (online bool, lastSeen *time.Time, err error) {
	ps, err := t.Presences(ctx, []int64{uid})
	if err != nil {
		return false, nil, err
	}
	return ps[0].Online, ps[0].LastSeen, nil
}

// Presences is UserPresence for many users in one round trip (per
// presencesBatch of them), in the order given. The same privacy rule holds:
// the caller checks who may see each.
func (t *Tracker) Presences(ctx context.Context, uids []int64) ([]protocol.Presence, error) {
	out := make([]protocol.Presence, len(uids))
	k := t.keys
	for from := 0; from < len(uids); from += presencesBatch {
		batch := uids[from:min(from+presencesBatch, len(uids))]
		args := make([]any, 0, 1+len(batch))
		args = append(args, ms(t.opts.Window))
		for _, uid := range batch {
			args = append(args, uid)
		}
		res, err := presencesScript.Run(ctx, t.rdb,
			[]string{k.connected(), k.lastSeen(), k.onlineCopy()}, args...).Slice()
		if err != nil {
			return nil, fmt.Errorf("presence of %d users: %w", len(uids), err)
		}
		for i := range batch {
			ls := toInt(res, 2*i)
			if ls == 0 {
				continue
			}
			at := unixMilli(ls)
			out[from+i].LastSeen = &at
			out[from+i].Online = toInt(res, 2*i+1) == 1
		}
	}
	return out, nil
}
