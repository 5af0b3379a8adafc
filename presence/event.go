package presence

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed announce.lua
	announceSource string
	announceScript = redis.NewScript(announceSource)
)

// announce tells the user's connected friends that the user came online or
// went offline. Friends with no connection have nobody listening; they read
// OnlineFriends when they connect. Its failures are logged, not returned:
// the change it reports has happened, and a friend's next OnlineFriends
// shows it.
func (t *Tracker) announce(ctx context.Context, uid int64, online bool, lastSeen time.Time) {
	if err := t.publish(ctx, uid, online, lastSeen); err != nil {
		t.log.WarnContext(ctx, "presence announcement failed", "uid", uid, "online", online, "err", err)
	}
}

func (t *Tracker) publish(ctx context.Context, uid int64, online bool, lastSeen time.Time) error {
	k := t.keys
	friends, err := t.rdb.ZInter(ctx, &redis.ZStore{
		Keys: []string{t.opts.FriendsKey(uid), k.connected()},
	}).Result()
	if err != nil {
		return fmt.Errorf("connected friends of %d: %w", uid, err)
	}
	if len(friends) == 0 {
		return nil
	}
	lastSeen = lastSeen.UTC()
	ev := protocol.PresenceFrame{Type: protocol.TypePresence, User: protocol.UserRef{ID: uid}, Online: online, LastSeen: &lastSeen}
	if t.opts.Profile != nil {
		login, name, err := t.opts.Profile(ctx, uid)
		if err != nil {
			t.log.WarnContext(ctx, "presence event without a profile", "uid", uid, "err", err)
		}
		ev.User.Login, ev.User.Name = login, name
	}
	frame, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	flag := 0
	if online {
		flag = 1
	}
	for i := 0; i < len(friends); i += announceBatch {
		batch := friends[i:min(i+announceBatch, len(friends))]
		args := make([]any, 0, 3+len(batch))
		args = append(args, uid, flag, frame)
		for _, f := range batch {
			fid, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				continue // not a user id; nobody to tell
			}
			args = append(args, t.opts.Channel(fid))
		}
		n, err := announceScript.Run(ctx, t.rdb, []string{k.connected()}, args...).Int()
		if err != nil {
			return fmt.Errorf("publish presence of %d: %w", uid, err)
		}
		if n < 0 {
			return nil // a newer change of this user is announced by its maker
		}
	}
	return nil
}
