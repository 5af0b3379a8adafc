package presence

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"chorus/bus"
	"chorus/internal/luatext"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed announce.lua
	announceSource string
	announceScript = redis.NewScript(luatext.Compact(announceSource))
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

// announceParallel bounds the announcements announceAll makes at once.
const announceParallel = 16

// userSeen is a user to announce, and their last activity (zero: unknown).
type userSeen struct {
	uid  int64
	seen time.Time
}

// announceAll announces each of users online (or offline), last seen at
// their time, up to announceParallel at once: after a lost lease or a Redis
// restart an instance registers all its connections again, and the sweep
// takes out all the users of an instance gone away: one after another,
// their announcements, a round trip or more each, would hold the flusher or
// the sweeper for long (some 14 s for 200,000 users on one Redis, in
// BenchmarkInstance's setup).
func (t *Tracker) announceAll(ctx context.Context, users []userSeen, online bool) {
	sem := make(chan struct{}, announceParallel)
	var wg sync.WaitGroup
	for _, u := range users {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t.announce(ctx, u.uid, online, u.seen)
		})
	}
	wg.Wait()
}

// publish sends the frame saying uid is online (or offline, last seen at
// lastSeen) to uid's connected friends, so that the last frame each of them
// gets is the true state: announcements are made after the change they
// report, by whichever instance made it, so an "offline" can come after a
// newer "online" (a tab reloaded onto another instance).
//
// On one Redis, announce.lua checks connected and publishes in one step, one
// round trip per batch. On a cluster the friends' channels live in their own
// slots, where a script on presence's slot cannot publish, so the frames go
// out through the bus from here, checked before and after (publishSharded).
// One Redis keeps the script: the checked publish would cost it two round
// trips per batch where the script costs one, and gain nothing there.
func (t *Tracker) publish(ctx context.Context, uid int64, online bool, lastSeen time.Time) error {
	friends, state, err := t.connectedFriends(ctx, uid)
	if err != nil {
		return err
	}
	if len(friends) == 0 || (t.cluster && state.online != online) {
		return nil // nobody to tell, or a newer change of this user is announced by its maker
	}
	user := t.userRef(ctx, uid)
	frame, err := presenceFrame(user, online, lastSeen)
	if err != nil {
		return err
	}
	var batches [][]friendChannel
	for i := 0; i < len(friends); i += announceBatch {
		var batch []friendChannel
		for _, f := range friends[i:min(i+announceBatch, len(friends))] {
			fid, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				continue // not a user id; nobody to tell
			}
			fc := friendChannel{uid: f}
			if t.cluster { // one Redis's script names the channels itself
				fc.channel = t.bus.UserChannel(fid)
			}
			batch = append(batch, fc)
		}
		batches = append(batches, batch)
	}
	if t.cluster {
		return t.publishSharded(ctx, uid, online, user, frame, batches)
	}

	flag := 0
	if online {
		flag = 1
	}
	for _, batch := range batches {
		if len(batch) == 0 {
			continue
		}
		args := make([]any, 0, 5+len(batch))
		args = append(args, uid, flag, frame, t.bus.Command(), t.bus.UserChannelStart())
		for _, f := range batch {
			args = append(args, f.uid)
		}
		n, err := announceScript.Run(ctx, t.rdb, []string{t.keys.connected(), t.opts.FriendsKey(uid)}, args...).Int()
		if err != nil {
			return fmt.Errorf("publish presence of %d: %w", uid, err)
		}
		if n < 0 {
			return nil // a newer change of this user is announced by its maker
		}
	}
	return nil
}

// friendChannel is a friend to tell, by uid as presence's sets hold it, and
// on a cluster the channel of their streams.
type friendChannel struct{ uid, channel string }

// publishSharded publishes frame, saying uid is online (or not), to the
// batches of channels through the bus, one pipeline per batch, which the
// cluster client splits by node. connected was checked before (publish):
// it matched. After each batch connected is read again; when the user's
// state changed since the last read, the frame of the current state goes
// to the same channels, and is checked the same way.
//
// The friendships are read again with the state. A friend the batch told,
// whose friendship has ended since they were read (an unfollow, a block),
// may have been told after the friend_removed that ending published, which
// would put uid back in their friends list: such a friend is sent a
// friend_removed about uid once more, after, and nothing further. (A
// friendship ended and begun again between two of these reads is told
// ended until uid's next change of presence.)
//
// Why the last frame each friend gets is then the true state. Every change
// of a user's state is announced by its maker after the change, with this
// same procedure. Frames on one channel reach its subscribers in the order
// the channel's master runs the publishes. Take the last frame published on
// a friend's channel, by announcer A saying s. A read connected after that
// publish returned, and found s, or A would have published on that channel
// again. Had the state changed after that read, the last change's maker
// would have read connected after it, found its own state (nothing changed
// after), and published after A, to all its connected friends: A's frame
// would not be the last. So nothing changed after A's read, and s is the
// state now. A change before A's read is what A corrects; a change after it
// is announced by its maker. The check before the first publish only spares
// friends a frame that is stale already. (A slot that moves to another
// master drops its sharded subscribers, and order with it; the realtime hub
// subscribes again.)
//
// When a correction was needed, the batches not yet published are left to
// the newer change's maker: none of their frames is A's, so none can be a
// stale last one. A state that keeps changing under every read gives up
// after announceCorrections corrections, with an error; friends then may
// hold a stale frame until the user's next change.
func (t *Tracker) publishSharded(ctx context.Context, uid int64, online bool, user protocol.UserRef, frame []byte, batches [][]friendChannel) error {
	for _, batch := range batches {
		sent := online
		for corrections := 0; ; corrections++ {
			channels := make([]string, len(batch))
			for i, f := range batch {
				channels[i] = f.channel
			}
			if err := t.publishAll(ctx, channels, frame); err != nil {
				return fmt.Errorf("publish presence of %d: %w", uid, err)
			}
			st, ended, err := t.stateAndEnded(ctx, uid, batch)
			if err != nil {
				return fmt.Errorf("publish presence of %d: %w", uid, err)
			}
			if len(ended) > 0 {
				if err := t.tellEnded(ctx, user, ended); err != nil {
					return fmt.Errorf("publish presence of %d: %w", uid, err)
				}
				batch = slices.DeleteFunc(batch, func(f friendChannel) bool { return slices.Contains(ended, f.channel) })
			}
			if st.online == sent || len(batch) == 0 {
				break
			}
			if corrections == announceCorrections {
				return fmt.Errorf("publish presence of %d: it changed %d times while announced", uid, corrections+1)
			}
			sent = st.online
			if frame, err = presenceFrame(user, st.online, st.lastSeen()); err != nil {
				return err
			}
		}
		if sent != online {
			return nil // corrected: the newer change's maker tells the other batches
		}
	}
	return nil
}

// publishAll sends frame on channels through the bus, in one pipeline.
func (t *Tracker) publishAll(ctx context.Context, channels []string, frame []byte) error {
	msgs := make([]bus.Message, len(channels))
	for i, ch := range channels {
		msgs[i] = bus.Message{Channel: ch, Payload: frame}
	}
	return t.bus.PublishBatch(ctx, msgs)
}

// userState is a user's presence at one moment, as connected and last.seen
// say it.
type userState struct {
	online bool
	told   int64 // connected: when the user was told online, unix ms
	seen   int64 // last.seen: the last activity, unix ms; 0 when none
}

// lastSeen is the last_seen the state's frame carries, as the announcements of
// the changes give it: for "online" when the user was told online (the
// register script's now, which it puts in connected), for "offline" the
// last activity, or the zero time when there was none.
func (s userState) lastSeen() time.Time {
	switch {
	case s.online:
		return unixMilli(s.told)
	case s.seen > 0:
		return unixMilli(s.seen)
	}
	return time.Time{}
}

// connectedFriends returns uid's friends in connected and, on a cluster,
// uid's state, read in one MULTI with them.
func (t *Tracker) connectedFriends(ctx context.Context, uid int64) ([]string, userState, error) {
	zs := &redis.ZStore{Keys: []string{t.opts.FriendsKey(uid), t.keys.connected()}}
	if !t.cluster {
		friends, err := t.rdb.ZInter(ctx, zs).Result()
		if err != nil {
			return nil, userState{}, fmt.Errorf("connected friends of %d: %w", uid, err)
		}
		return friends, userState{}, nil
	}
	pipe := t.rdb.TxPipeline()
	inter := pipe.ZInter(ctx, zs)
	state := t.queueState(ctx, pipe, uid)
	_, err := pipe.Exec(ctx)
	if err == nil || errors.Is(err, redis.Nil) { // a missing score is an answer
		err = inter.Err()
	}
	if err != nil {
		return nil, userState{}, fmt.Errorf("connected friends of %d: %w", uid, err)
	}
	st, err := state()
	if err != nil {
		return nil, userState{}, fmt.Errorf("connected friends of %d: %w", uid, err)
	}
	return inter.Val(), st, nil
}

// stateAndEnded reads uid's state, and which of batch's friends are
// friends no more (their channels), in one MULTI: on a cluster the friend
// set read is presence's mirror, in presence's slot.
func (t *Tracker) stateAndEnded(ctx context.Context, uid int64, batch []friendChannel) (userState, []string, error) {
	pipe := t.rdb.TxPipeline()
	state := t.queueState(ctx, pipe, uid)
	members := make([]string, len(batch))
	for i, f := range batch {
		members[i] = f.uid
	}
	since := pipe.ZMScore(ctx, t.opts.FriendsKey(uid), members...)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return userState{}, nil, err
	}
	st, err := state()
	if err != nil {
		return userState{}, nil, err
	}
	scores, err := since.Result()
	if err != nil {
		return userState{}, nil, err
	}
	var ended []string
	for i, score := range scores {
		if score == 0 { // ZMSCORE's nil: no longer a member
			ended = append(ended, batch[i].channel)
		}
	}
	return st, ended, nil
}

// tellEnded sends a friend_removed about user on channels, the channels of
// friends whose friendship with user ended while user's presence was told
// to them.
func (t *Tracker) tellEnded(ctx context.Context, user protocol.UserRef, channels []string) error {
	frame, err := json.Marshal(protocol.FriendRemoved{Type: protocol.TypeFriendRemoved, User: user})
	if err != nil {
		return err
	}
	return t.publishAll(ctx, channels, frame)
}

// queueState queues the reads of uid's state in pipe, and returns what
// gives the state once pipe has run.
func (t *Tracker) queueState(ctx context.Context, pipe redis.Pipeliner, uid int64) func() (userState, error) {
	told := pipe.ZScore(ctx, t.keys.connected(), itoa(uid))
	seen := pipe.ZScore(ctx, t.keys.lastSeen(), itoa(uid))
	return func() (userState, error) {
		var st userState
		for _, c := range []struct {
			cmd *redis.FloatCmd
			to  *int64
		}{{told, &st.told}, {seen, &st.seen}} {
			switch err := c.cmd.Err(); {
			case errors.Is(err, redis.Nil):
			case err != nil:
				return userState{}, err
			default:
				*c.to = int64(c.cmd.Val())
			}
		}
		st.online = told.Err() == nil
		return st, nil
	}
}

// userRef is uid as presence frames show it: with the login and name of
// Options.Profile when it has one and it answers.
func (t *Tracker) userRef(ctx context.Context, uid int64) protocol.UserRef {
	user := protocol.UserRef{ID: uid}
	if t.opts.Profile != nil {
		login, name, err := t.opts.Profile(ctx, uid)
		if err != nil {
			t.log.WarnContext(ctx, "presence event without a profile", "uid", uid, "err", err)
		}
		user.Login, user.Name = login, name
	}
	return user
}

// presenceFrame is the JSON frame telling that user is online (or offline),
// last seen at lastSeen.
func presenceFrame(user protocol.UserRef, online bool, lastSeen time.Time) ([]byte, error) {
	lastSeen = lastSeen.UTC()
	return json.Marshal(protocol.PresenceFrame{Type: protocol.TypePresence, User: user, Online: online, LastSeen: &lastSeen})
}
