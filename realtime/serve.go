package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"chorus/presence"
	"chorus/social"

	"github.com/coder/websocket"
)

// Serve runs one stream connection of uid, authenticated before the call
// with the session sessionID, until it ends. The caller has checked the
// request's Origin. Before upgrading it subscribes to the user's channel,
// checks the session and registers the connection's presence, answering in
// the API's error shape when it cannot: 503 when Redis cannot be reached,
// 401 when the session has just ended, 429 when the user holds all the
// connections presence allows.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, uid int64, sessionID string) {
	// Refuse what the upgrade would refuse before telling anyone the user
	// is online.
	if !isUpgrade(r) {
		refuse(w, http.StatusUpgradeRequired, "upgrade_required", "This endpoint speaks WebSocket only.")
		return
	}
	if n := h.admitted.Add(1); h.opts.MaxStreams > 0 && n > int64(h.opts.MaxStreams) {
		h.admitted.Add(-1)
		w.Header().Set("Retry-After", "5")
		refuse(w, http.StatusServiceUnavailable, "too_many_streams", "This instance holds all the streams it can; connect again shortly.")
		return
	}
	c := newConn(h, uid, sessionID)
	h.conns.Add(1)
	ready, ok := h.open(w, r, c)
	if !ok {
		c.stop()
		h.admitted.Add(-1)
		h.conns.Done()
		return
	}
	// The stream lives on in two goroutines of its own. This one, whose
	// stack grew deep in the setup, ends here, as a hijacked connection
	// allows, so that an idle stream holds only two shallow stacks.
	go c.run(ready)
}

// open subscribes, checks the session, registers presence, builds the ready
// frame and upgrades. When any step fails it answers the request, undoes
// the steps before, and reports false.
func (h *Hub) open(w http.ResponseWriter, r *http.Request, c *conn) (ready []byte, ok bool) {
	ctx := r.Context()
	if err := h.join(ctx, c); err != nil {
		unavailable(w, err)
		return nil, false
	}
	// From here on a sign-out reaches c through its channel; one published
	// before may have been missed, but it ended the session first.
	owners, err := h.feed.SessionOwners(ctx, []string{c.session})
	if err != nil || len(owners) != 1 {
		h.leave(c)
		unavailable(w, err)
		return nil, false
	}
	if owners[0] != c.uid {
		h.leave(c)
		h.Stats.SessionRefused.Add(1)
		refuse(w, http.StatusUnauthorized, "not_signed_in", "This session has ended; sign in again.")
		return nil, false
	}
	c.connectedAt = time.Now()
	c.lastActive.Store(c.connectedAt.UnixNano())
	if _, err := h.presence.Connect(ctx, c.uid, c.id); err != nil {
		h.leave(c)
		if errors.Is(err, presence.ErrTooManyConnections) {
			h.Stats.UserStreamsRefused.Add(1)
			w.Header().Set("Retry-After", strconv.Itoa(userStreamsRetryAfter))
			refuse(w, http.StatusTooManyRequests, "too_many_user_streams",
				"You have as many streams open as one user may; close one (another tab or device) and connect again.")
			return nil, false
		}
		unavailable(w, err)
		return nil, false
	}
	undo := func() {
		h.leave(c)
		if !c.shuttingDown.Load() {
			h.presence.Disconnect(context.WithoutCancel(ctx), c.uid, c.id)
		}
	}
	ready, err = h.readyFrame(ctx, c)
	if err != nil {
		undo()
		unavailable(w, err)
		return nil, false
	}
	// The edge (web) has checked the request's Origin before Serve.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		h.log.InfoContext(ctx, "websocket refused", "uid", c.uid, "err", err)
		undo()
		return nil, false // Accept has answered
	}
	if !c.attach(ws) {
		undo()
		return nil, false
	}
	ws.SetReadLimit(MaxFrameBytes)
	return ready, true
}

// userStreamsRetryAfter is the Retry-After, in seconds, of a stream refused
// because its user holds all the connections presence allows.
const userStreamsRetryAfter = 30

// run reads an open stream until it ends, then unregisters it. Frames go
// out through drain, which runs only while frames wait.
func (c *conn) run(ready []byte) {
	h := c.hub
	defer h.conns.Done()
	defer h.admitted.Add(-1)
	defer h.leave(c)
	h.Stats.Open.Add(1)
	defer h.Stats.Open.Add(-1)
	h.log.Info("stream opened", "uid", c.uid, "conn", c.id)

	// The ready frame goes first; what waited meanwhile follows it.
	if c.send(ready) && c.queue.release() {
		go c.drain()
	}
	c.keepAlive()
	end, by := c.read(c.life), "client"
	wire := end.Code
	if wire == websocket.StatusAbnormalClosure {
		wire = websocket.StatusNormalClosure // no close frame came: none to answer
	}
	if !c.close(wire, "") {
		// The server closed it first; its code and reason say why.
		end, by = c.closedWith(), "server"
	}
	lived := time.Since(c.connectedAt)
	c.closers.Wait()
	c.queue.hold()

	if !c.shuttingDown.Load() {
		// A clean end, or one this instance saw: tell friends now rather
		// than when the instance's lease runs out.
		h.beats.settle() // no beat of this closed connection is written after
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := h.presence.Disconnect(dctx, c.uid, c.id); err != nil {
			h.log.Warn("presence disconnect failed; retried at the next tick", "uid", c.uid, "err", err)
		}
		dcancel()
	}
	h.log.Info("stream closed", "uid", c.uid, "conn", c.id, "code", int(end.Code), "reason", end.Reason,
		"by", by, "duration", lived.Round(time.Millisecond))
}

func unavailable(w http.ResponseWriter, err error) {
	if errors.Is(err, errClosing) {
		refuse(w, http.StatusServiceUnavailable, "shutting_down", "This instance is shutting down; connect again.")
		return
	}
	refuse(w, http.StatusServiceUnavailable, "redis_unavailable", "Live updates are unavailable right now; try again shortly.")
}

// refuse answers a stream request that is not upgraded, in the API's error
// shape.
func refuse(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// readyFrame builds a connection's first frame, once its presence is
// registered.
func (h *Hub) readyFrame(ctx context.Context, c *conn) ([]byte, error) {
	u, err := h.feed.UserByID(ctx, c.uid)
	if err != nil {
		return nil, err
	}
	online, lastSeen, err := h.presence.UserPresence(ctx, c.uid)
	if err != nil {
		return nil, err
	}
	friends, err := OnlineFriends(ctx, h.feed, h.presence, c.uid)
	if err != nil {
		return nil, err
	}
	user := struct {
		social.User
		Online   bool       `json:"online"`
		LastSeen *time.Time `json:"last_seen"`
	}{u, online, lastSeen}
	return json.Marshal(readyFrame{
		Type: "ready", User: user,
		HeartbeatIntervalMS: h.opts.HeartbeatInterval.Milliseconds(),
		OnlineFriends:       friends,
	})
}

// FriendLister lists a user's friends online now.
type FriendLister interface {
	OnlineFriends(ctx context.Context, uid int64) ([]presence.OnlineFriend, error)
}

// UserLister reads users by id.
type UserLister interface {
	Users(ctx context.Context, ids []int64) ([]social.User, error)
}

// OnlineFriends lists uid's friends online now, most recent first, with
// their logins and names: the ready frame's list and GET /friends/online.
func OnlineFriends(ctx context.Context, feed UserLister, pres FriendLister, uid int64) ([]OnlineFriend, error) {
	online, err := pres.OnlineFriends(ctx, uid)
	if err != nil {
		return nil, err
	}
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
	out := make([]OnlineFriend, 0, len(online))
	for _, f := range online {
		if u, ok := byID[f.UID]; ok {
			out = append(out, OnlineFriend{User: FriendUser{ID: u.ID, Login: u.Login, Name: u.Name}, LastSeen: f.LastSeen})
		}
	}
	return out, nil
}
