package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"chorus/presence"
	"chorus/protocol"
	"chorus/social"

	"github.com/coder/websocket"
)

// Serve runs one stream connection of uid, authenticated before the call
// with the session sessionID, until it ends. The caller has checked the
// request's Origin. Before upgrading it subscribes to the user's channel,
// checks the session and registers the connection's presence.
//
// When it does not upgrade, it answers nothing and returns why, for the
// caller to answer: ErrNotWebSocket, ErrTooManyStreams, ErrShuttingDown,
// ErrSessionEnded, presence.ErrTooManyConnections, or an error wrapping
// ErrUnavailable. It returns nil once the request is answered: upgraded,
// or refused by the WebSocket handshake itself.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, uid int64, sessionID string) error {
	// Refuse what the upgrade would refuse before telling anyone the user
	// is online.
	if !isUpgrade(r) {
		return ErrNotWebSocket
	}
	c, ready, err := h.start(w, r, uid, sessionID, acceptWebSocket, nil)
	if c == nil {
		return err
	}
	// The stream lives on with no goroutine of its own while idle: its
	// socket is watched by the instance's poller, which starts a reader
	// only when the client sends (readReady), with a writer only while
	// frames wait and a timer for its pings. This goroutine, whose stack
	// grew deep in the setup, does the stream's first deep work too
	// (start), then ends here, as a hijacked connection allows. Where the
	// socket cannot be watched, a reader goroutine of its own waits (run),
	// on one shallow stack.
	c.start(ready)
	if !c.wire.watch(c.readReady) {
		go c.run()
	}
	return nil
}

// start admits a stream of uid and opens it (open), answering the request
// with accept; prepare, unless nil, is given the stream before it opens.
// It returns the stream and its ready frame for run, or no stream and the
// refusal, or nil when the request was answered (see open).
func (h *Hub) start(w http.ResponseWriter, r *http.Request, uid int64, sessionID string, accept acceptFunc, prepare func(*conn)) (*conn, []byte, error) {
	if n := h.admitted.Add(1); h.opts.MaxStreams > 0 && n > int64(h.opts.MaxStreams) {
		h.admitted.Add(-1)
		return nil, nil, ErrTooManyStreams
	}
	if !h.track() {
		h.admitted.Add(-1)
		return nil, nil, ErrShuttingDown
	}
	c := newConn(h, uid, sessionID)
	if prepare != nil {
		prepare(c)
	}
	ready, err := h.open(w, r, c, accept)
	if ready == nil {
		c.stop()
		h.admitted.Add(-1)
		h.conns.Done()
		return nil, nil, err
	}
	return c, ready, nil
}

// Refusal is why Serve did not open a stream, before any upgrade, for the
// edge to answer.
type Refusal string

func (r Refusal) Error() string { return string(r) }

// Serve's refusals.
const (
	ErrNotWebSocket   Refusal = "not a WebSocket handshake"
	ErrTooManyStreams Refusal = "the instance holds all the streams it may"
	ErrShuttingDown   Refusal = "the server is shutting down"
	ErrSessionEnded   Refusal = "the session ended while the stream opened"
	// ErrUnavailable wraps a failure to reach Redis, or anything else
	// that kept the stream from opening for now.
	ErrUnavailable Refusal = "live updates unavailable"
)

// open subscribes, checks the session, registers presence, builds the ready
// frame and has accept answer the request: upgrade it (acceptWebSocket) or
// start the event stream (acceptEvents). When any step fails it undoes the
// steps before and returns no frame, with the refusal for Serve to return,
// or nil when the request was answered (the handshake failed or the hub
// closed meanwhile).
func (h *Hub) open(w http.ResponseWriter, r *http.Request, c *conn, accept acceptFunc) (ready []byte, err error) {
	ctx := r.Context()
	// The catch-up floor (conn.floor), read before the stream subscribes:
	// every status posted from here on gets a greater id. Were Redis to
	// fail to tell, the join below fails too, or the hub's mark does.
	c.floor = h.statusMark.Load()
	if id, err := h.lastStatus.Get(struct{}{}); err == nil {
		c.floor = id
		h.raiseStatusMark(id)
	}
	c.newest = c.floor
	pullChanges, err := h.join(ctx, c)
	if err != nil {
		return nil, unavailable(err)
	}
	// Read once the user's channel is live: from here on a sign-out reaches
	// c through it (one published before ended the session first), and so
	// do a follow and an unfollow of a pulled author (pull_added,
	// pull_removed; joinAuthors tells whether one came since the read).
	o, err := h.openings.Get(social.StreamKey{UID: c.uid, Session: c.session})
	if err != nil {
		h.leave(c)
		return nil, unavailable(fmt.Errorf("stream opening: %w", err))
	}
	if o.Owner != c.uid {
		h.leave(c)
		h.Stats.SessionRefused.Add(1)
		return nil, ErrSessionEnded
	}
	if o.User.ID == 0 {
		h.leave(c)
		return nil, unavailable(fmt.Errorf("stream opening of %d: %w", c.uid, social.ErrUserNotFound))
	}
	// Before the queue is released: every frame is judged by it.
	c.hidden = hiddenSet(o.Hidden)
	if err := h.joinAuthors(ctx, c, pullChanges, o.Pulled); err != nil {
		h.leave(c)
		return nil, unavailable(err)
	}
	c.connectedAt = time.Now()
	c.lastActive.Store(c.connectedAt.UnixNano())
	opened, err := h.presence.Open(ctx, c.uid, c.id)
	if err != nil {
		h.leave(c)
		if errors.Is(err, presence.ErrTooManyConnections) {
			h.Stats.UserStreamsRefused.Add(1)
			return nil, err
		}
		return nil, unavailable(err)
	}
	undo := func() {
		h.leave(c)
		if !c.shuttingDown.Load() {
			if _, err := h.presence.Disconnect(context.WithoutCancel(ctx), c.uid, c.id); err != nil {
				h.log.Warn("presence disconnect of a stream that did not open failed; retried at the next tick", "uid", c.uid, "err", err)
			}
		}
	}
	ready, err = h.readyFrame(o, opened)
	if err != nil {
		undo()
		return nil, unavailable(err)
	}
	ws, err := accept(w, r, c)
	if err != nil {
		h.log.InfoContext(ctx, "stream refused", "uid", c.uid, "err", err)
		undo()
		return nil, nil // accept has answered
	}
	if !c.attach(ws) {
		undo()
		return nil, nil
	}
	return ready, nil
}

// acceptFunc answers a stream's request once the stream is set up, and
// returns what its frames go out on; on an error it has answered already.
type acceptFunc func(w http.ResponseWriter, r *http.Request, c *conn) (frameWriter, error)

// acceptWebSocket upgrades the request. The edge (web) has checked the
// request's Origin before Serve. Every byte from the client passes the
// frame meter (meteredConn).
func acceptWebSocket(w http.ResponseWriter, r *http.Request, c *conn) (frameWriter, error) {
	mw := &meteredWriter{ResponseWriter: w, frames: c.frames}
	ws, err := websocket.Accept(mw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil, err
	}
	c.wire = mw.conn
	ws.SetReadLimit(protocol.MaxFrameBytes)
	return webSocket{ws, mw.conn}, nil
}

// openingsPerCall bounds the streams whose openings one call reads.
const openingsPerCall = 500

// unavailable is the refusal of a stream that could not open because of
// err: ErrShuttingDown as it is, anything else as ErrUnavailable.
func unavailable(err error) error {
	if errors.Is(err, ErrShuttingDown) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// start counts and logs an open stream, sends it the ready frame, then
// what waited meanwhile, and starts its pings; run takes it on from there.
func (c *conn) start(ready []byte) {
	h := c.hub
	h.Stats.Open.Add(1)
	h.log.Info("stream opened", "uid", c.uid, "conn", c.id)
	// The ready frame goes first; what waited meanwhile follows it.
	if c.send(ready, 0) && c.queue.release() {
		writerPool.run(c.drain)
	}
	c.keepAlive()
}

// run reads a started stream until it ends, then finishes it. Frames go
// out through drain, which runs only while frames wait.
func (c *conn) run() {
	c.hub.Stats.Readers.Add(1)
	defer c.hub.Stats.Readers.Add(-1)
	c.finish(c.awaitEnd())
}

// finish answers how the client ended the stream (end; empty when this side
// closed it first), waits for the closing handshake, and unregisters the
// stream.
func (c *conn) finish(end websocket.CloseError) {
	h := c.hub
	defer h.conns.Done()
	defer h.admitted.Add(-1)
	defer h.leave(c)
	defer h.Stats.Open.Add(-1)
	by, why := "client", closeClient
	wire := end.Code
	if wire == websocket.StatusAbnormalClosure {
		wire = websocket.StatusNormalClosure // no close frame came: none to answer
	}
	if !c.answerClient(wire) {
		// The server closed it first; its code and reason say why.
		why, end = c.closedWith()
		by = "server"
	}
	lived := time.Since(c.connectedAt)
	c.closers.Wait()
	c.queue.hold()

	h.beats.settle() // no beat of this closed connection is written after
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	if !c.shuttingDown.Load() {
		// A clean end, or one this instance saw: tell friends now rather
		// than when the instance's lease runs out.
		if _, err := h.presence.Disconnect(dctx, c.uid, c.id); err != nil {
			h.log.Warn("presence disconnect failed; retried at the next tick", "uid", c.uid, "err", err)
		}
	} else if err := h.presence.Release(dctx, c.uid, c.id); err != nil {
		// Moved by a drain: its user stays online for the reconnection,
		// which the connection counts against no longer; failed, it is
		// left to this instance's lease as before.
		h.log.Warn("presence release failed; left to the lease", "uid", c.uid, "err", err)
	}
	dcancel()
	h.log.Log(context.Background(), why.rule().level, "stream closed", "uid", c.uid, "conn", c.id, "code", int(end.Code), "reason", end.Reason,
		"by", by, "duration", lived.Round(time.Millisecond))
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// readyFrame builds a connection's first frame from what its opening read
// (the user and their unread count) and what opening its presence told
// (the user is online, seen now, and their friends online).
func (h *Hub) readyFrame(o social.StreamOpening, opened presence.Opened) ([]byte, error) {
	friends, err := h.onlineFriends(opened.Friends)
	if err != nil {
		return nil, err
	}
	seen := opened.Seen
	return json.Marshal(protocol.Ready{
		Type:                protocol.TypeReady,
		User:                protocol.UserView{User: o.User, Presence: &protocol.Presence{Online: true, LastSeen: &seen}},
		HeartbeatIntervalMS: h.opts.HeartbeatInterval.Milliseconds(),
		OnlineFriends:       friends,
		UnreadNotifications: o.Unread,
	})
}

// FriendLister lists a user's friends online now.
type FriendLister interface {
	OnlineFriends(ctx context.Context, uid int64) ([]presence.FriendSeen, error)
}

// UserLister reads users by id.
type UserLister interface {
	Users(ctx context.Context, ids []int64) ([]social.User, error)
}

// OnlineFriends lists uid's friends online now, most recent first, with
// their logins and names: the ready frame's list and GET /friends/online.
func OnlineFriends(ctx context.Context, feed UserLister, pres FriendLister, uid int64) ([]protocol.OnlineFriend, error) {
	online, err := pres.OnlineFriends(ctx, uid)
	if err != nil {
		return nil, err
	}
	return friendRefs(ctx, feed, online)
}

// friendRefs are the friends online with their logins and names, in the
// order given.
func friendRefs(ctx context.Context, feed UserLister, online []presence.FriendSeen) ([]protocol.OnlineFriend, error) {
	ids := make([]int64, len(online))
	for i, f := range online {
		ids[i] = f.UID
	}
	users, err := feed.Users(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]social.User, len(users))
	for _, u := range users {
		byID[u.ID] = u
	}
	out := make([]protocol.OnlineFriend, 0, len(online))
	for _, f := range online {
		if u, ok := byID[f.UID]; ok {
			out = append(out, protocol.OnlineFriend{User: u.Ref(), LastSeen: f.LastSeen})
		}
	}
	return out, nil
}
