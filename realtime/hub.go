// Package realtime holds the live connections of one Chorus instance: each
// WebSocket's reader and writer, heartbeats, resume, and the routing of
// events from Redis pub/sub to the local connections they are for. Each
// instance subscribes, on one pub/sub connection, to the channels of the
// users connected to it, and unsubscribes when their last connection goes:
// publishers never need to know where a user is connected.
package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"chorus/presence"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

// Feed is what the hub reads from the social core.
type Feed interface {
	HomeTimeline(ctx context.Context, uid int64, c social.Cursor) (social.TimelinePage, error)
	UserByID(ctx context.Context, uid int64) (social.User, error)
	Users(ctx context.Context, ids []int64) ([]social.User, error)
	UserChannel(uid int64) string
}

// Presence is what the hub tells of connections, and asks of friends.
type Presence interface {
	Connect(ctx context.Context, uid int64, connID string) (first bool, err error)
	Heartbeat(ctx context.Context, uid int64, connID string) error
	Disconnect(ctx context.Context, uid int64, connID string) (last bool, err error)
	OnlineFriends(ctx context.Context, uid int64) ([]presence.OnlineFriend, error)
	UserPresence(ctx context.Context, uid int64) (online bool, lastSeen *time.Time, err error)
}

var (
	_ Feed     = (*social.Service)(nil)
	_ Presence = (*presence.Tracker)(nil)
)

// Defaults for Options fields left zero.
const (
	DefaultQueueSize      = 256
	DefaultWriteTimeout   = 5 * time.Second
	DefaultSubscribeWait  = 5 * time.Second
	DefaultShutdownCloses = 5 * time.Second
	MaxFrameBytes         = 64 << 10
)

// Options tune a Hub.
type Options struct {
	HeartbeatInterval time.Duration // told to clients in the ready frame
	QueueSize         int           // frames waiting for one slow connection before it is closed
	WriteTimeout      time.Duration // limit of one frame's write
	SubscribeWait     time.Duration // how long a new connection waits for its subscription
	OriginPatterns    []string      // extra browser origins allowed, as coder/websocket patterns
	MaxStreams        int           // most streams held at once; 0: no limit
	Logger            *slog.Logger
}

// Hub routes live events to this instance's connections.
type Hub struct {
	rdb      redis.UniversalClient
	feed     Feed
	presence Presence
	opts     Options
	log      *slog.Logger

	ps     *redis.PubSub
	syncCh chan string // channels whose subscription may need to change

	mu       sync.RWMutex
	users    map[string]*local // by channel
	live     map[string]bool   // channels whose subscription Redis confirmed
	closing  bool
	conns    sync.WaitGroup // every connection's Serve
	admitted atomic.Int64   // streams being opened or open
	routerWG sync.WaitGroup
	cancel   context.CancelFunc
	stopped  <-chan struct{} // closed when the hub stops

	Stats Stats
}

// Counters returns the hub's live counters.
func (h *Hub) Counters() *Stats { return &h.Stats }

// Stats are counters of a hub's life, read by the metrics endpoint.
type Stats struct {
	Open           atomic.Int64 // connections open now
	FramesSent     atomic.Int64
	FramesDropped  atomic.Int64 // frames not sent because the connection was closing or too slow
	SlowClosed     atomic.Int64 // connections closed because their queue overflowed
	Heartbeats     atomic.Int64
	PubSubRestarts atomic.Int64 // resubscriptions after the pub/sub connection was lost
}

// local is the set of this instance's connections of one user.
type local struct {
	uid   int64
	conns map[*conn]struct{}
	ready chan struct{} // closed once the user's channel is live
}

// New starts a hub; Close stops it.
func New(rdb redis.UniversalClient, feed Feed, pres Presence, opts Options) *Hub {
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = presence.DefaultHeartbeatInterval
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.SubscribeWait <= 0 {
		opts.SubscribeWait = DefaultSubscribeWait
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		rdb: rdb, feed: feed, presence: pres, opts: opts, log: opts.Logger,
		ps:     rdb.Subscribe(ctx),
		syncCh: make(chan string, 1024),
		users:  map[string]*local{},
		live:   map[string]bool{},
		cancel: cancel, stopped: ctx.Done(),
	}
	h.routerWG.Add(2)
	go h.route(ctx)
	go h.subscriber(ctx)
	return h
}

// route reads the pub/sub connection and hands each event to the local
// connections of the user it is for. It never blocks on a connection.
func (h *Hub) route(ctx context.Context) {
	defer h.routerWG.Done()
	ch := h.ps.ChannelWithSubscriptions(redis.WithChannelSize(4096))
	for {
		var msg any
		select {
		case <-ctx.Done():
			return
		case msg = <-ch:
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirmed(m.Channel)
			}
		case *redis.Message:
			h.dispatch(m.Channel, []byte(m.Payload))
		}
	}
}

// confirmed marks a channel's subscription as live. A confirmation for a
// channel already live means the pub/sub connection was lost and made again:
// its connections catch up on what they may have missed meanwhile.
func (h *Hub) confirmed(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.users[channel]
	if !h.live[channel] {
		h.live[channel] = true
		if u != nil {
			close(u.ready)
		}
		return
	}
	h.Stats.PubSubRestarts.Add(1)
	if u != nil {
		for c := range u.conns {
			c.enqueue(outgoing{catchUp: true})
		}
	}
}

func (h *Hub) dispatch(channel string, payload []byte) {
	var ev event
	if err := json.Unmarshal(payload, &ev); err != nil {
		h.log.Warn("unreadable event", "channel", channel, "err", err)
		return
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	u := h.users[channel]
	if u == nil {
		return
	}
	for c := range u.conns {
		if ev.Type == eventSessionEnded {
			if c.session == ev.Session {
				go c.close(statusPolicy, "signed out")
			}
			continue
		}
		out := outgoing{frame: payload}
		if ev.Type == social.EventStatus && ev.Status != nil {
			out.statusID = ev.Status.ID
		}
		c.enqueue(out)
	}
}

// subscriber brings the pub/sub connection's channels in line with the
// local users, one channel at a time, so that a subscribe and an unsubscribe
// of one channel never race.
func (h *Hub) subscriber(ctx context.Context) {
	defer h.routerWG.Done()
	subscribed := map[string]bool{}
	for {
		var channel string
		select {
		case <-ctx.Done():
			return
		case channel = <-h.syncCh:
		}
		h.mu.Lock()
		want := h.users[channel] != nil
		if !want {
			// From here on a joining connection waits for a new
			// confirmation.
			delete(h.live, channel)
		}
		h.mu.Unlock()
		if want == subscribed[channel] {
			continue
		}
		var err error
		if want {
			err = h.ps.Subscribe(ctx, channel)
		} else {
			err = h.ps.Unsubscribe(ctx, channel)
		}
		if err != nil {
			// The client keeps the channel in its list even when the
			// command fails, and subscribes it again on reconnecting.
			h.log.Warn("pub/sub change failed; it is made again on reconnect", "channel", channel, "subscribe", want, "err", err)
		}
		if want {
			subscribed[channel] = true
		} else {
			delete(subscribed, channel)
		}
	}
}

// join adds c to its user's local set, subscribing on the user's first
// local connection, and waits until the subscription is live.
func (h *Hub) join(ctx context.Context, c *conn) error {
	channel := h.feed.UserChannel(c.uid)
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return errClosing
	}
	u := h.users[channel]
	if u == nil {
		u = &local{uid: c.uid, conns: map[*conn]struct{}{}, ready: make(chan struct{})}
		if h.live[channel] { // still subscribed from a connection just gone
			close(u.ready)
		}
		h.users[channel] = u
	}
	u.conns[c] = struct{}{}
	ready := u.ready
	h.mu.Unlock()
	h.resync(channel)

	wait, cancel := context.WithTimeout(ctx, h.opts.SubscribeWait)
	defer cancel()
	select {
	case <-ready:
		return nil
	case <-wait.Done():
		h.leave(c)
		return fmt.Errorf("subscribe %s: %w", channel, errNoSubscription)
	}
}

// leave takes c out of its user's local set, unsubscribing after the last.
func (h *Hub) leave(c *conn) {
	channel := h.feed.UserChannel(c.uid)
	h.mu.Lock()
	u := h.users[channel]
	if u != nil {
		delete(u.conns, c)
		if len(u.conns) == 0 {
			delete(h.users, channel)
		}
	}
	h.mu.Unlock()
	h.resync(channel)
}

// resync asks the subscriber to bring channel in line.
func (h *Hub) resync(channel string) {
	select {
	case h.syncCh <- channel:
	case <-h.stopped:
	}
}

var (
	errClosing        = errors.New("the server is shutting down")
	errNoSubscription = errors.New("no pub/sub subscription")
)

// EndSession closes, on every instance, the connections opened with the
// session sessionID (a signed-out token's social.SessionID), with 1008.
func (h *Hub) EndSession(ctx context.Context, uid int64, sessionID string) error {
	payload, _ := json.Marshal(event{Type: eventSessionEnded, Session: sessionID})
	if err := h.rdb.Publish(ctx, h.feed.UserChannel(uid), payload).Err(); err != nil {
		return fmt.Errorf("end session of %d: %w", uid, err)
	}
	return nil
}

// Shutdown closes every connection with 1001 (reconnect elsewhere, then
// resume) and waits for them, until ctx ends. Their presence is left to
// expire rather than announced as offline: a client reconnecting to another
// instance stays online for its friends without a flicker.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true
	var all []*conn
	for _, u := range h.users {
		for c := range u.conns {
			all = append(all, c)
		}
	}
	h.mu.Unlock()
	for _, c := range all {
		c.shuttingDown.Store(true)
		go c.close(statusGoingAway, "server shutting down")
	}
	done := make(chan struct{})
	go func() { h.conns.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	h.cancel()
	h.ps.Close()
	h.routerWG.Wait()
	return err
}

// presenceFrame is the presence frame as the hub sends it about a user who
// may never have been seen (LastSeen nil).
type presenceFrame struct {
	Type     string     `json:"type"`
	User     FriendUser `json:"user"`
	Online   bool       `json:"online"`
	LastSeen *time.Time `json:"last_seen"`
}

// AnnounceFriendship tells a and b, on every instance, each other's
// presence: a follow has just made them friends, and their friends lists
// would otherwise learn of it only at the other's next coming or going.
func (h *Hub) AnnounceFriendship(ctx context.Context, a, b int64) error {
	return h.announcePair(ctx, a, b, func(u social.User) (any, error) {
		online, lastSeen, err := h.presence.UserPresence(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		return presenceFrame{Type: "presence", User: friendUser(u), Online: online, LastSeen: lastSeen}, nil
	})
}

// AnnounceFriendshipEnded tells a and b, on every instance, that an
// unfollow has ended their friendship: each leaves the other's friends list.
func (h *Hub) AnnounceFriendshipEnded(ctx context.Context, a, b int64) error {
	return h.announcePair(ctx, a, b, func(u social.User) (any, error) {
		return friendRemovedFrame{Type: "friend_removed", User: friendUser(u)}, nil
	})
}

type friendRemovedFrame struct {
	Type string     `json:"type"`
	User FriendUser `json:"user"`
}

func friendUser(u social.User) FriendUser { return FriendUser{ID: u.ID, Login: u.Login, Name: u.Name} }

// announcePair publishes to each of a and b the frame about the other.
func (h *Hub) announcePair(ctx context.Context, a, b int64, about func(social.User) (any, error)) error {
	users, err := h.feed.Users(ctx, []int64{a, b})
	if err != nil || len(users) != 2 {
		return fmt.Errorf("announce to %d and %d: %w", a, b, errors.Join(err, social.ErrNotFound))
	}
	pipe := h.rdb.Pipeline()
	for i, u := range users {
		frame, err := about(u)
		if err != nil {
			return fmt.Errorf("announce to %d and %d: %w", a, b, err)
		}
		raw, err := json.Marshal(frame)
		if err != nil {
			return fmt.Errorf("announce to %d and %d: %w", a, b, err)
		}
		pipe.Publish(ctx, h.feed.UserChannel(users[1-i].ID), raw)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("announce to %d and %d: %w", a, b, err)
	}
	return nil
}
