package presence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed register.lua
	registerSource string
	registerScript = script(registerSource)

	//go:embed heartbeats.lua
	heartbeatsSource string
	heartbeatsScript = script(heartbeatsSource)

	//go:embed disconnect.lua
	disconnectSource string
	disconnectScript = script(disconnectSource)

	//go:embed release.lua
	releaseSource string
	releaseScript = script(releaseSource)
)

// heldElsewhere is the disconnect script's answer when the connection is
// held by another instance than the one it was told, whose id follows: it
// wrote nothing, and runs again with that instance's connection set.
const heldElsewhere = -1

// disconnectTries bounds those runs: a connection is held by the instance
// that serves it, or after a lost lease by the one it was registered again on.
const disconnectTries = 3

var errHolderMoving = errors.New("the connection's instance kept changing")

// registerCallTimeout bounds each register call of registerAgain.
const registerCallTimeout = 5 * time.Second

// Beat is the activity of one connection, for Heartbeats.
type Beat struct {
	UID    int64
	ConnID string
}

// MaxBeatsPerCall is the most users (or connections, when registering) one
// script call carries; longer lists are written in several.
const MaxBeatsPerCall = 1000

// Connect registers connection connID of uid (an id unique to the
// connection, such as a UUID) on this instance and records activity as a
// heartbeat does. It reports whether this is the user's first connection
// (none other is registered; one of a vanished instance counts until it is
// swept), in which case it tells the user's connected friends that the user
// is online.
//
// A new connection of a user who holds Options.MaxConnsPerUser live ones
// already, on any instance, is refused with ErrTooManyConnections, and
// nothing of it is recorded: the user is not seen, nor shown online, by it.
//
// For a client to miss no change, read its OnlineFriends after both
// subscribing to its channel and Connect: a friend's change either is in
// that list or is published after the subscription.
func (t *Tracker) Connect(ctx context.Context, uid int64, connID string) (first bool, err error) {
	c := Beat{UID: uid, ConnID: connID}
	if err := checkConn(c); err != nil {
		return false, fmt.Errorf("connect %d: %w", uid, err)
	}
	res, err := t.admit(ctx, []Beat{c})
	if err != nil {
		return false, fmt.Errorf("connect %d: %w", uid, err)
	}
	if res.each[0] == refused {
		return false, ErrTooManyConnections
	}
	return res.each[0] == announced, nil
}

// admit registers conns, new connections of this instance, under
// Options.MaxConnsPerUser, and holds those it did not refuse: what Connect
// and Open share.
//
// When the register call fails, it may have run all the same (a timeout):
// conns are disconnected again at the next ticks, so that none is left
// registered without its stream. When it finds the lease lost, the other
// connections are registered again at the next tick (Heartbeats), not in
// this call, which is bounded by its caller's deadline. No lease is a lost
// one only when the instance held connections when this call began: a fresh
// instance has no lease yet, nor one that held none for W, and neither has
// anything to register again. Connections registered by calls racing with
// this one renewed the lease themselves, before or after this call's script.
func (t *Tracker) admit(ctx context.Context, conns []Beat) (registered, error) {
	t.mu.Lock()
	holding := len(t.held) > 0
	t.mu.Unlock()
	res, err := t.register(ctx, conns, max(t.opts.MaxConnsPerUser, 0))
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		for _, c := range conns {
			t.leaving[c] = struct{}{}
			t.unsure[c.UID] = struct{}{}
		}
		return res, err
	}
	if res.lost && holding {
		t.again.Add(1)
	}
	for i, c := range conns {
		if res.each[i] != refused {
			t.held[c] = struct{}{}
		}
	}
	return res, nil
}

// Heartbeat records activity on connection connID of uid; it is Heartbeats
// of one connection.
func (t *Tracker) Heartbeat(ctx context.Context, uid int64, connID string) error {
	return t.Heartbeats(ctx, []Beat{{UID: uid, ConnID: connID}})
}

// Heartbeats records activity on many connections of this instance and
// renews the instance's lease, in one script call per MaxBeatsPerCall users:
// an instance writes the activity of all its connections once per tick
// instead of once per connection, and its connections need no write of their
// own. Call it every tick, with no beats when none came: while the instance
// holds connections, the lease keeps them alive. Never send a beat after
// Disconnect of the same connection.
//
// The lease is renewed first; then a beat of a connection this instance
// does not hold (Connect was never called for it here) registers it, and
// last the disconnects that failed are retried. When the lease had run out
// while the instance held connections (it stalled for W and may have been
// swept, or Redis lost its data), or Redis is another server than at the
// last call (a restart or a failover, which may have lost recent writes),
// the instance registers all its connections again, on a goroutine of its
// own that this call starts and does not wait for (see
// registerAgainAside), or, if that fails, that the next calls start until
// it is done. Options.MaxConnsPerUser refuses none of these. Users this
// brings online are announced to their friends.
func (t *Tracker) Heartbeats(ctx context.Context, beats []Beat) error {
	var unknown []Beat
	t.mu.Lock()
	holding := len(t.held) > 0 // before this call: no lease is no lease lost (see admit)
	for _, b := range beats {
		if err := checkConn(b); err != nil {
			t.mu.Unlock()
			return fmt.Errorf("heartbeats: %w", err)
		}
		if _, ok := t.held[b]; !ok {
			unknown = append(unknown, b)
			t.held[b] = struct{}{}
		}
	}
	holds, leaving := len(t.held) > 0, len(t.leaving) > 0
	t.mu.Unlock()
	// The lease first: the disconnects that failed before, retried one
	// round trip each, and a registration, could take the whole call's
	// time after a storm of reconnects, and a lease not renewed for W
	// gets the instance's own users swept (see Sweep).
	if leaving {
		defer t.disconnectAgain(ctx)
	}
	if !holds {
		return nil
	}
	moved, err := t.serverMoved(ctx)
	if err != nil {
		return fmt.Errorf("heartbeats: %w", err)
	}

	users := make([]int64, 0, len(beats))
	seen := make(map[int64]bool, len(beats))
	for _, b := range beats {
		if !seen[b.UID] {
			seen[b.UID] = true
			users = append(users, b.UID)
		}
	}
	lost := false
	for first := true; first || len(users) > 0; first = false {
		chunk := users[:min(len(users), MaxBeatsPerCall)]
		users = users[len(chunk):]
		l, err := t.heartbeats(ctx, chunk)
		if err != nil {
			return fmt.Errorf("heartbeats of %d users: %w", len(chunk), err)
		}
		lost = lost || l
	}
	if (lost && holding) || moved {
		t.again.Add(1)
	}
	if len(unknown) > 0 {
		if _, err := t.register(ctx, unknown, 0); err != nil {
			t.mu.Lock()
			for _, c := range unknown {
				delete(t.held, c) // so that the next beat tries again
			}
			t.mu.Unlock()
			return fmt.Errorf("heartbeats: %w", err)
		}
	}
	t.registerAgainAside(ctx) // when due, until it succeeds
	return nil
}

// registerAgainAside starts registerAgain on a goroutine of its own when it
// is due and none runs, and returns: registering 20,000 connections again
// takes seconds, and the realtime hub calls Heartbeats holding the lock
// that every stream closing waits on before its Disconnect. Connections
// that close meanwhile are disconnected again after it (registerAgain).
// When it succeeds but was found due again meanwhile, it runs again at
// once; when it fails, the next call starts it again. RunSweeper waits for
// it on its way out.
func (t *Tracker) registerAgainAside(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.registering != nil || t.again.Load() == 0 {
		return
	}
	done := make(chan struct{})
	t.registering = done
	go func() {
		defer close(done)
		// At once again when it succeeded but was found due meanwhile.
		for t.registerAgain(context.WithoutCancel(ctx)) && t.again.Load() != 0 {
		}
		t.mu.Lock()
		t.registering = nil
		t.mu.Unlock()
	}()
}

// registeredAgain waits for the registerAgain under way, if any.
func (t *Tracker) registeredAgain() {
	t.mu.Lock()
	done := t.registering
	t.mu.Unlock()
	if done != nil {
		<-done
	}
}

// heartbeats runs the heartbeats script for users (MaxBeatsPerCall at most)
// and reports whether the lease had run out. Users whose last.seen and
// active set the instance wrote this minute already go last, for the script
// to write only the copy for them.
func (t *Tracker) heartbeats(ctx context.Context, users []int64) (lost bool, err error) {
	k := t.keys
	rebuilt := 0
	if t.opts.CopyTTL < 0 {
		rebuilt = 1
	}
	err = t.inMinute(func(minute int64) (int64, bool, error) {
		fresh, done := t.unwritten(minute, users)
		args := make([]any, 0, 7+len(users))
		args = append(args, t.id, ms(t.opts.Window), minute, int64(activeKeyTTL/time.Second),
			len(fresh), rebuilt, t.again.Load() != 0)
		args = append(append(args, fresh...), done...)
		res, err := heartbeatsScript.Run(ctx, t.rdb, []string{
			k.lastSeen(), k.onlineCopy(), k.instances(), k.activeUsers(minute), k.activeHLL(minute),
			k.connected(),
		}, args...).Slice()
		if err != nil {
			return 0, false, err
		}
		now := toInt(res, 0)
		if toInt(res, 1) == minuteMoved {
			return now, true, nil
		}
		lost = toInt(res, 1) == 1
		t.written(now, users)
		return now, false, nil
	})
	return lost, err
}

// unwritten splits users into those whose last.seen and active set this
// instance has not written in minute yet, and those it has.
func (t *Tracker) unwritten(minute int64, users []int64) (fresh, done []any) {
	t.activeMu.Lock()
	defer t.activeMu.Unlock()
	for _, uid := range users {
		if _, ok := t.active.users[uid]; ok && t.active.minute == minute {
			done = append(done, uid)
		} else {
			fresh = append(fresh, uid)
		}
	}
	return fresh, done
}

// written notes that the last.seen and active set of users were written for
// the minute of nowMS (Redis's clock): their next ticks of that minute write
// the copy alone.
func (t *Tracker) written(nowMS int64, users []int64) {
	minute := nowMS / 1000 / 60
	t.activeMu.Lock()
	defer t.activeMu.Unlock()
	if t.active.minute != minute {
		t.active.minute, t.active.users = minute, make(map[int64]struct{}, len(t.active.users))
	}
	for _, uid := range users {
		t.active.users[uid] = struct{}{}
	}
}

// serverMoved reports whether Redis (on a cluster, the master of presence's
// slot) is another server process than at the last call (its run_id
// changed: a restart, or a failover to a replica), after which writes of
// the last moments may be lost. The embedded store, which tells no run_id,
// never moves.
func (t *Tracker) serverMoved(ctx context.Context) (bool, error) {
	shard, err := t.shard(ctx)
	if err != nil {
		return false, err
	}
	info, err := shard.Info(ctx, "server").Result()
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return false, nil // a server that does not tell (the embedded store)
	}
	if err != nil {
		return false, err
	}
	_, id, ok := strings.Cut(info, "run_id:")
	if !ok {
		return false, nil
	}
	id, _, _ = strings.Cut(id, "\r\n")
	t.mu.Lock()
	defer t.mu.Unlock()
	moved := t.server != "" && t.server != id
	t.server = id
	return moved, nil
}

// registerAgain registers again the connections this instance holds, when
// t.again says it is due (after a lost lease or lost writes), and marks it
// done once it succeeded: a failure is logged, and the next tick tries
// again. It holds no lock while it writes, so that streams open and close
// meanwhile (200,000 connections take seconds): a Disconnect that ran
// before the registration reached its connection would leave that
// connection registered, so the connections that closed meanwhile are
// disconnected again after it. One runs at a time (registerAgainAside).
//
// It is not bound by the deadline of the tick that found it due, which a
// large instance's registration may outlast, but by registerCallTimeout per
// call of MaxBeatsPerCall connections. It reports whether it succeeded (or
// had nothing to do).
func (t *Tracker) registerAgain(ctx context.Context) bool {
	due := t.again.Load()
	if due == 0 {
		return true
	}
	t.mu.Lock()
	list := make([]Beat, 0, len(t.held))
	for c := range t.held {
		list = append(list, c)
	}
	t.mu.Unlock()
	calls := time.Duration(len(list)/MaxBeatsPerCall + 1)
	ctx, cancel := context.WithTimeout(ctx, calls*registerCallTimeout)
	defer cancel()
	got, err := t.register(ctx, list, 0)
	if err == nil && got.lostLater {
		// The lease ran out again between two of its calls (a stall past
		// the window): a sweep since may have taken out what the calls
		// before registered. Still due, for the next tick.
		err = errors.New("the lease ran out while the connections were being registered")
	}
	var closed []Beat
	t.mu.Lock()
	for _, c := range list {
		if _, ok := t.held[c]; !ok {
			closed = append(closed, c)
			if err != nil {
				// The part of the registration that ran may have
				// registered it after its Disconnect: disconnected
				// again by the next ticks, as a failed disconnect is.
				t.leaving[c] = struct{}{}
			}
		}
	}
	t.mu.Unlock()
	if err != nil {
		t.log.WarnContext(ctx, "connections not registered again; the next tick tries again",
			"connections", len(list), "closed_meanwhile", len(closed), "err", err)
		return false
	}
	// Done, unless it was found due again meanwhile: then it runs again
	// (registerAgainAside) for what may have been lost after this list.
	t.again.CompareAndSwap(due, 0)
	for _, c := range closed {
		if _, err := t.disconnect(ctx, c, false); err != nil {
			t.mu.Lock()
			t.leaving[c] = struct{}{} // retried every tick
			t.mu.Unlock()
		}
	}
	t.log.InfoContext(ctx, "connections registered again after a lost lease or a Redis restart",
		"connections", len(list)-len(closed), "closed_meanwhile", len(closed))
	return true
}

// registered is what register did.
type registered struct {
	lost bool // the lease had run out before this call
	// lostLater: before a call after the first (of MaxBeatsPerCall
	// connections each), so what the calls before registered may have
	// been swept.
	lostLater bool
	// each is, per connection in the order given, what became of it:
	// announced, registered alone, or refused.
	each []int8
	now  time.Time // Redis's clock at the last call
}

// What register.lua did with one connection.
const (
	refused   = -1 // the cap refused it: nothing of it is written
	joined    = 0  // registered; its user was online already
	announced = 1  // registered, and its user announced online
)

// register runs the register script over conns, MaxBeatsPerCall at a time,
// with the given cap (<= 0: none), and announces the users it brought
// online.
func (t *Tracker) register(ctx context.Context, conns []Beat, maxConns int) (registered, error) {
	k := t.keys
	var out registered
	for len(conns) > 0 {
		chunk := conns[:min(len(conns), MaxBeatsPerCall)]
		conns = conns[len(chunk):]
		var res []any
		err := t.inMinute(func(minute int64) (int64, bool, error) {
			keys := make([]string, 0, 7+len(chunk))
			keys = append(keys, k.lastSeen(), k.connected(), k.onlineCopy(), k.instances(),
				k.instanceConns(t.id), k.activeUsers(minute), k.activeHLL(minute))
			args := make([]any, 0, 5+2*len(chunk))
			args = append(args, t.id, ms(t.opts.Window), minute, int64(activeKeyTTL/time.Second), maxConns)
			for _, c := range chunk {
				keys = append(keys, k.conns(c.UID))
				args = append(args, c.UID, c.ConnID)
			}
			var err error
			res, err = registerScript.Run(ctx, t.rdb, keys, args...).Slice()
			if err != nil {
				return 0, false, err
			}
			return toInt(res, 0), toInt(res, 1) == minuteMoved, nil
		})
		if err != nil {
			return out, fmt.Errorf("register %d connections: %w", len(chunk), err)
		}
		now := unixMilli(toInt(res, 0))
		out.now = now
		out.lost = out.lost || toInt(res, 1) == 1
		out.lostLater = out.lostLater || toInt(res, 1) == 1 && len(out.each) > 0
		users := make([]int64, 0, len(chunk))
		var online []userSeen
		for i, c := range chunk {
			what := int8(toInt(res, 2+i))
			out.each = append(out.each, what)
			switch what {
			case announced:
				online = append(online, userSeen{c.UID, now})
			case refused:
				continue
			}
			users = append(users, c.UID)
		}
		t.announceAll(ctx, online, true)
		t.written(toInt(res, 0), users)
	}
	return out, nil
}

// Disconnect removes connection connID of uid and reports whether it was the
// user's last live one, in which case it tells the user's connected friends
// that the user is offline. A connection whose Disconnect fails is
// disconnected again at every later Heartbeats until it succeeds: it would
// live on with the instance's lease otherwise.
func (t *Tracker) Disconnect(ctx context.Context, uid int64, connID string) (last bool, err error) {
	c := Beat{UID: uid, ConnID: connID}
	if err := checkConn(c); err != nil {
		return false, fmt.Errorf("disconnect %d: %w", uid, err)
	}
	t.mu.Lock()
	delete(t.held, c)
	t.mu.Unlock()
	last, err = t.disconnect(ctx, c, false)
	if err != nil {
		t.mu.Lock()
		t.leaving[c] = struct{}{}
		t.mu.Unlock()
		return false, fmt.Errorf("disconnect %d: %w", uid, err)
	}
	return last, nil
}

// Release lets go of connection connID of uid, which closed as this
// instance drains or shuts down and whose client reconnects elsewhere: it
// counts no longer against the user's cap of live connections, but the
// user stays online, with no frame, until they connect again elsewhere or,
// not coming back, the sweep of this instance, once its lease runs out,
// tells the friends they are offline (release.lua). A Release that fails
// leaves the connection to that sweep as before.
func (t *Tracker) Release(ctx context.Context, uid int64, connID string) error {
	c := Beat{UID: uid, ConnID: connID}
	if err := checkConn(c); err != nil {
		return fmt.Errorf("release %d: %w", uid, err)
	}
	t.mu.Lock()
	delete(t.held, c)
	t.mu.Unlock()
	if err := releaseScript.Run(ctx, t.rdb, []string{t.keys.conns(uid)}, connID, t.id).Err(); err != nil {
		return fmt.Errorf("release %d: %w", uid, err)
	}
	return nil
}

// disconnectAgain retries the disconnects that failed.
func (t *Tracker) disconnectAgain(ctx context.Context) {
	t.mu.Lock()
	list := make([]Beat, 0, len(t.leaving))
	for c := range t.leaving {
		list = append(list, c)
	}
	t.mu.Unlock()
	for _, c := range list {
		if _, err := t.disconnect(ctx, c, true); err != nil {
			t.log.WarnContext(ctx, "presence disconnect failed again; the next tick tries again",
				"uid", c.UID, "conn", c.ConnID, "err", err)
			return
		}
		t.mu.Lock()
		delete(t.leaving, c)
		t.mu.Unlock()
	}
	// A failed register may have made its user connected with nobody told,
	// and their next stream then counts them told already: announced
	// online now, which goes out only while they are connected.
	t.mu.Lock()
	now := unixMilli(time.Now().UnixMilli() + t.skew.Load()) // Redis's clock, as the scripts'
	unsure := make([]userSeen, 0, len(t.unsure))
	for uid := range t.unsure {
		unsure = append(unsure, userSeen{uid: uid, seen: now})
	}
	clear(t.unsure)
	t.mu.Unlock()
	t.announceAll(ctx, unsure, true)
}

// disconnect runs the disconnect script for c and announces the user
// offline when c was their last live connection. Run again (again: a
// call that failed, whose script may have run in Redis and taken the user
// out of connected before its answer was lost), it announces them offline
// whenever no live connection is left, as the call that took them out did
// not: announce.lua sends it only while it is true.
func (t *Tracker) disconnect(ctx context.Context, c Beat, again bool) (last bool, err error) {
	k := t.keys
	holder := t.id // the script says when another instance holds c
	for range disconnectTries {
		res, err := disconnectScript.Run(ctx, t.rdb, []string{
			k.conns(c.UID), k.connected(), k.lastSeen(), k.onlineCopy(), k.instances(),
			k.instanceConns(holder),
		}, c.UID, c.ConnID, holder).Slice()
		if err != nil {
			return false, err
		}
		if toInt(res, 0) == heldElsewhere {
			holder = fmt.Sprint(res[1])
			continue
		}
		last = toInt(res, 0) == 1
		if last || again && toInt(res, 2) == 1 {
			seen := time.Time{}
			if n := toInt(res, 1); n > 0 {
				seen = unixMilli(n)
			}
			t.announce(ctx, c.UID, false, seen)
		}
		return last, nil
	}
	return false, errHolderMoving
}

func checkConn(c Beat) error {
	switch {
	case c.UID <= 0:
		return fmt.Errorf("%w: user id %d", ErrInvalid, c.UID)
	case c.ConnID == "":
		return fmt.Errorf("%w: empty connection id", ErrInvalid)
	}
	return nil
}
