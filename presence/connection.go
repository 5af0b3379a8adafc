package presence

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed heartbeat.lua
	heartbeatSource string
	heartbeatScript = redis.NewScript(heartbeatSource)

	//go:embed heartbeats.lua
	heartbeatsSource string
	heartbeatsScript = redis.NewScript(heartbeatsSource)

	//go:embed disconnect.lua
	disconnectSource string
	disconnectScript = redis.NewScript(disconnectSource)
)

// Connect registers connection connID of uid (an id unique to the
// connection, such as a UUID) and records activity as a heartbeat does. It
// reports whether this is the user's first connection (none other is
// registered; one of a vanished instance counts until it is swept), in which
// case it tells the user's connected friends that the user is online.
//
// A new connection of a user who holds Options.MaxConnsPerUser unexpired
// ones already, on any instance, is refused with ErrTooManyConnections, and
// nothing is recorded: the user is not seen, nor shown online, by it.
//
// For a client to miss no change, read its OnlineFriends after both
// subscribing to its channel and Connect: a friend's change either is in
// that list or is published after the subscription.
func (t *Tracker) Connect(ctx context.Context, uid int64, connID string) (first bool, err error) {
	first, now, err := t.beat(ctx, uid, connID, max(t.opts.MaxConnsPerUser, 0))
	if err != nil {
		return false, fmt.Errorf("connect %d: %w", uid, err)
	}
	if first {
		t.announce(ctx, uid, true, now)
	}
	return first, nil
}

// Heartbeat records activity on connection connID of uid in one round trip
// and keeps the connection alive for another W. A heartbeat on a connection
// that had expired (a long pause, a Redis restart) registers it again, and
// tells friends when that brings the user back online; so never send one
// after Disconnect of the same connection. Options.MaxConnsPerUser never
// refuses a heartbeat, not even one that registers a connection again.
func (t *Tracker) Heartbeat(ctx context.Context, uid int64, connID string) error {
	first, now, err := t.beat(ctx, uid, connID, 0)
	if err != nil {
		return fmt.Errorf("heartbeat %d: %w", uid, err)
	}
	if first {
		t.announce(ctx, uid, true, now)
	}
	return nil
}

// Beat is the activity of one connection, for Heartbeats.
type Beat struct {
	UID    int64
	ConnID string
}

// MaxBeatsPerCall is the most beats one Heartbeats script call carries; a
// longer list is written in several.
const MaxBeatsPerCall = 1000

// Heartbeats records activity on many connections, as Heartbeat does for
// one, in one script call per MaxBeatsPerCall beats: an instance writes the
// activity of all its connections once per tick instead of once per
// connection. Users it brings online are announced to their friends.
func (t *Tracker) Heartbeats(ctx context.Context, beats []Beat) error {
	k := t.keys
	for len(beats) > 0 {
		chunk := beats[:min(len(beats), MaxBeatsPerCall)]
		beats = beats[len(chunk):]
		keys := make([]string, 0, 3+len(chunk))
		keys = append(keys, k.lastSeen(), k.connected(), k.onlineCopy())
		args := make([]any, 0, 5+2*len(chunk))
		args = append(args, ms(t.opts.Window), k.activePrefix(), int64(activeKeyTTL/time.Second),
			ms(t.opts.Window+connsKeyExtra), k.activeHLLPrefix())
		for _, b := range chunk {
			if err := checkConn(b.UID, b.ConnID); err != nil {
				return fmt.Errorf("heartbeats: %w", err)
			}
			keys = append(keys, k.conns(b.UID))
			args = append(args, b.UID, b.ConnID)
		}
		res, err := heartbeatsScript.Run(ctx, t.rdb, keys, args...).Slice()
		if err != nil {
			return fmt.Errorf("heartbeats of %d connections: %w", len(chunk), err)
		}
		now := unixMilli(toInt(res, 0))
		for i := 1; i < len(res); i++ {
			t.announce(ctx, toInt(res, i), true, now)
		}
	}
	return nil
}

// Disconnect removes connection connID of uid and reports whether it was the
// user's last live one, in which case it tells the user's connected friends
// that the user is offline. Pass a context that outlives a shutdown (see
// context.WithoutCancel), or the user stays online until swept.
func (t *Tracker) Disconnect(ctx context.Context, uid int64, connID string) (last bool, err error) {
	if err := checkConn(uid, connID); err != nil {
		return false, fmt.Errorf("disconnect %d: %w", uid, err)
	}
	k := t.keys
	res, err := disconnectScript.Run(ctx, t.rdb,
		[]string{k.conns(uid), k.connected(), k.lastSeen(), k.onlineCopy()},
		uid, connID,
	).Slice()
	if err != nil {
		return false, fmt.Errorf("disconnect %d: %w", uid, err)
	}
	last = toInt(res, 0) == 1
	if last {
		seen := time.Time{}
		if n := toInt(res, 1); n > 0 {
			seen = unixMilli(n)
		}
		t.announce(ctx, uid, false, seen)
	}
	return last, nil
}

// beat runs the heartbeat script and returns whether the user was not
// connected before, and Redis's time. With maxConns > 0, a connection not
// registered yet is refused (ErrTooManyConnections, nothing written) when
// the user holds maxConns unexpired ones already.
func (t *Tracker) beat(ctx context.Context, uid int64, connID string, maxConns int) (bool, time.Time, error) {
	if err := checkConn(uid, connID); err != nil {
		return false, time.Time{}, err
	}
	k := t.keys
	res, err := heartbeatScript.Run(ctx, t.rdb,
		[]string{k.lastSeen(), k.connected(), k.conns(uid), k.onlineCopy()},
		uid, connID, ms(t.opts.Window), k.activePrefix(),
		int64(activeKeyTTL/time.Second), ms(t.opts.Window+connsKeyExtra),
		k.activeHLLPrefix(), maxConns,
	).Slice()
	if err != nil {
		return false, time.Time{}, err
	}
	if toInt(res, 0) == -1 {
		return false, time.Time{}, ErrTooManyConnections
	}
	return toInt(res, 0) == 1, unixMilli(toInt(res, 1)), nil
}

func checkConn(uid int64, connID string) error {
	switch {
	case uid <= 0:
		return fmt.Errorf("%w: user id %d", ErrInvalid, uid)
	case connID == "":
		return fmt.Errorf("%w: empty connection id", ErrInvalid)
	}
	return nil
}
