package presence

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"chorus/bus"
	"chorus/protocol"
)

// AnnounceFriendship tells a and b, on every instance, each other's
// presence: a follow has just made them friends, and their friends lists
// would otherwise learn of it only at the other's next coming or going.
// The social core calls it, through the function it is given at wiring,
// once the follow that made the friendship stands.
func (t *Tracker) AnnounceFriendship(ctx context.Context, a, b int64) error {
	uids := []int64{a, b}
	ps, err := t.Presences(ctx, uids)
	if err != nil {
		return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
	}
	msgs := make([]bus.Message, 2)
	for i, uid := range uids {
		user := protocol.UserRef{ID: uid}
		if t.opts.Profile != nil {
			if user.Login, user.Name, err = t.opts.Profile(ctx, uid); err != nil {
				return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
			}
		}
		frame, err := json.Marshal(protocol.PresenceFrame{
			Type: protocol.TypePresence, User: user, Online: ps[i].Online, LastSeen: ps[i].LastSeen,
		})
		if err != nil {
			return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
		}
		// The frame about one goes to the other.
		msgs[i] = bus.Message{Channel: t.bus.UserChannel(uids[1-i]), Payload: frame}
	}
	if err := t.bus.PublishBatch(ctx, msgs); err != nil {
		return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
	}
	return nil
}

// AnnounceProfile passes frame, which tells of user's new name, to user's
// friends connected now, on every instance: their sidebars and open pages
// show the name at once. It reads the connected friends as a presence
// announcement does (one intersection of the friend set with connected)
// and publishes announceBatch channels a round trip; friends with no
// stream have nobody listening, and read the name when they next load.
// The social core calls it, through the function it is given at wiring,
// once the name is stored.
func (t *Tracker) AnnounceProfile(ctx context.Context, user protocol.UserRef, frame []byte) error {
	friends, _, err := t.connectedFriends(ctx, user.ID)
	if err != nil {
		return fmt.Errorf("announce profile of %d: %w", user.ID, err)
	}
	for i := 0; i < len(friends); i += announceBatch {
		var msgs []bus.Message
		for _, f := range friends[i:min(i+announceBatch, len(friends))] {
			fid, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				continue // not a user id; nobody to tell
			}
			msgs = append(msgs, bus.Message{Channel: t.bus.UserChannel(fid), Payload: frame})
		}
		if err := t.bus.PublishBatch(ctx, msgs); err != nil {
			return fmt.Errorf("announce profile of %d: %w", user.ID, err)
		}
	}
	return nil
}

// forgetMinutes is how far back Forget looks for per-minute active sets:
// past the ten minutes they are counted for, with room for clocks apart.
const forgetMinutes = 15

// Forget takes uid out of presence: its last activity, its place among the
// connected and in the online copy, its connections (its registry, and
// their places in their instances' sets), and the per-minute active sets
// that may hold it (those of the last forgetMinutes by Redis's clock, as
// this instance estimates it; the HyperLogLogs beside them hold no uid
// that can be read back). An account's deletion calls it, through the
// function social is given at wiring, once its sessions and streams are
// ended: nothing of the account stays.
func (t *Tracker) Forget(ctx context.Context, uid int64) error {
	id := itoa(uid)
	// The registry, capped per user, names the instance of each
	// connection.
	conns, err := t.rdb.HGetAll(ctx, t.keys.conns(uid)).Result()
	if err != nil {
		return fmt.Errorf("forget %d: %w", uid, err)
	}
	pipe := t.rdb.Pipeline()
	pipe.ZRem(ctx, t.keys.connected(), id)
	pipe.ZRem(ctx, t.keys.lastSeen(), id)
	pipe.ZRem(ctx, t.keys.onlineCopy(), id)
	for conn, instance := range conns {
		pipe.SRem(ctx, t.keys.instanceConns(instance), id+":"+conn)
	}
	pipe.Del(ctx, t.keys.conns(uid))
	now := (time.Now().UnixMilli() + t.skew.Load()) / 60_000
	for m := now - forgetMinutes; m <= now+1; m++ {
		pipe.SRem(ctx, t.keys.activeUsers(m), id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("forget %d: %w", uid, err)
	}
	return nil
}
