// Package realtime holds the live connections of one Chorus instance: each
// stream's reader and writer, a WebSocket or Server-Sent Events
// (events.go), heartbeats, resume, and the routing of frames from the bus
// (package bus, Redis pub/sub) to the local connections they are for; it
// publishes only the frames a client posts by REST for its stream, to the
// instance that holds it (Send). Each instance subscribes, through the
// bus's subscriber (one pub/sub connection, or on a Redis Cluster one per
// master), to the channels of the users connected to it, and unsubscribes
// when their last connection goes: publishers never need to know where a
// user is connected. It subscribes too to the channels
// of the pulled authors its users follow (authors with so many followers
// that their statuses are published once, not to each follower), and routes
// their frames to those users; and, while any of its streams watches the
// global timeline, to that timeline's channel (watch.go).
package realtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"chorus/bus"
	"chorus/internal/batch"
	"chorus/presence"
	"chorus/protocol"
	"chorus/social"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Feed is what the hub reads from the social core.
type Feed interface {
	HomeTimeline(ctx context.Context, uid int64, c social.Cursor) (social.TimelinePage, error)
	Users(ctx context.Context, ids []int64) ([]social.User, error)
	// StreamOpenings reads, in one call, what each stream opening at once
	// needs once its user's channel is live.
	StreamOpenings(ctx context.Context, keys []social.StreamKey) ([]social.StreamOpening, error)
	SessionOwners(ctx context.Context, sessionIDs []string) ([]int64, error)
	LastStatusID(ctx context.Context) (int64, error)
	// Originals fills in repost entries' originals, as live frames carry
	// them.
	Originals(ctx context.Context, sts []social.Status) ([]social.Status, error)
	HiddenAuthors(ctx context.Context, uid int64) ([]int64, error)
	// HiddenAuthorsOf is HiddenAuthors of many users, in a few round trips
	// whatever their number.
	HiddenAuthorsOf(ctx context.Context, uids []int64) ([][]int64, error)
	// PulledAuthorsOf reads, for each of many users in a round trip, the
	// pulled authors they follow (social.Service.PulledAuthors).
	PulledAuthorsOf(ctx context.Context, uids []int64) ([][]int64, error)
}

// Presence is what the hub tells of connections, and asks of friends.
type Presence interface {
	// Open registers a new connection and reads its user's friends online,
	// in batches of the connections opening at once.
	Open(ctx context.Context, uid int64, connID string) (presence.Opened, error)
	Heartbeats(ctx context.Context, beats []presence.Beat) error
	Disconnect(ctx context.Context, uid int64, connID string) (last bool, err error)
	// Release lets go of a connection closed as the instance drains or
	// shuts down, leaving its user online for their reconnection
	// elsewhere.
	Release(ctx context.Context, uid int64, connID string) error
}

var (
	_ Feed     = (*social.Service)(nil)
	_ Presence = (*presence.Tracker)(nil)
)

// Defaults for Options fields left zero.
const (
	DefaultQueueSize            = 256
	DefaultWriteTimeout         = 5 * time.Second
	DefaultSubscribeWait        = 5 * time.Second
	DefaultFrameRate            = rate.Limit(5)
	DefaultFrameBurst           = 20
	DefaultSessionCheckInterval = time.Minute
)

// Options tune a Hub. Each default is the Default constant of the field's
// name, applied by New to a field left zero (or negative); cmd/chorus takes
// its flags' defaults from the same constants.
type Options struct {
	// HeartbeatInterval is how often each stream is pinged and its activity
	// recorded, told to clients in the ready frame. Zero:
	// presence.DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	QueueSize         int           // frames waiting for one slow connection before it is closed; 0: DefaultQueueSize
	WriteTimeout      time.Duration // limit of one frame's write; 0: DefaultWriteTimeout
	SubscribeWait     time.Duration // how long a new connection waits for its subscription; 0: DefaultSubscribeWait
	MaxStreams        int           // most streams held at once; 0: no limit
	// FrameRate and FrameBurst bound the frames one client sends, of every
	// type, pings, pongs and each fragment of a message included: past them
	// the stream fails with 1008 and nothing more it sent is read.
	// rate.Inf: no limit; zero: DefaultFrameRate and DefaultFrameBurst.
	FrameRate  rate.Limit
	FrameBurst int
	// ResumeLimit bounds one user's resumes, on all of their streams on
	// every instance together, counted in Redis under Prefix: past it a
	// resume is answered with a rate_limited error frame. Zero: no limit.
	ResumeLimit redis_rate.Limit
	// Prefix is the key prefix of the hub's own keys (the resume budgets).
	Prefix string
	// SessionCheckInterval is how often the sessions of every local stream
	// are checked, closing those that ended without the hub being told.
	// Zero: DefaultSessionCheckInterval.
	SessionCheckInterval time.Duration
	// BeatFlushInterval is how often the hub writes its connections'
	// activity to presence, all of it in one call. Zero: a tenth of the
	// heartbeat interval, at most a second.
	BeatFlushInterval time.Duration
	// HealthInterval is how often the hub pings Redis to tell its streams
	// whether the instance can serve (the service frame). Zero:
	// DefaultHealthInterval.
	HealthInterval time.Duration
	Logger         *slog.Logger // nil: slog.Default()

	// Instance is presence's id of this instance (presence.Tracker.ID): on
	// one Redis the hub marks it as reading the frames channel
	// (bus.FramesReadersKey) while it does. Empty: no mark, and fan-outs
	// send frames for many users in one message only while presence is not
	// kept.
	Instance string
}

// Hub routes live events to this instance's connections.
type Hub struct {
	rdb      redis.UniversalClient
	bus      *bus.Bus // the channels' names, and the subscriber's Redis
	feed     Feed
	presence Presence
	opts     Options
	log      *slog.Logger

	ps      bus.Subscriber
	budgets *redis_rate.Limiter // the users' resume budgets
	changes *channelChanges     // channels whose subscription may need to change
	recheck chan struct{}       // wakes the session checker for channels in h.unchecked

	mu         sync.RWMutex                // the first lock of all (locks.go)
	users      map[string]*local           // by channel
	authors    map[string]*readers         // pulled authors' channels: the local users who follow them
	watchers   map[*conn]*local            // the streams that watch the global timeline, with their users (watch.go)
	threads    map[string]map[*conn]*local // thread channels: the streams that watch each, with their users
	threadOf   map[*conn]*threadWatch      // each stream's watch of a thread
	global     string                      // the global timeline's channel
	frames     string                      // on one Redis, the channel of frames for many users (bus.FramesChannel)
	frameName  []byte                      // route's buffer for the channel names of a frames message
	framesLive chan struct{}               // told each time Redis confirms the frames channel
	live       map[string]bool             // channels whose subscription Redis confirmed
	// subscribed are the channels the subscriber last sent SUBSCRIBE for,
	// not UNSUBSCRIBE since: a confirmation of another is of a
	// subscription undone since, and is let go (see confirmed).
	subscribed map[string]bool
	unchecked  map[string]struct{} // channels confirmed again, their sessions still to check
	lost       map[string]struct{} // live channels a cluster lost, until confirmed again
	closing    bool
	beats      beats
	// posting are the frames posted for streams here by REST through
	// another instance, waiting their turn (events.go); a stream is in it
	// while its frames are being handled.
	postedMu sync.Mutex
	posting  map[*conn][]protocol.ClientFrame
	conns    sync.WaitGroup // every connection's Serve
	admitted atomic.Int64   // streams being opened or open
	routerWG sync.WaitGroup // the router, the subscriber, the session checker, the health watch, the beats and the frames reader mark
	// statusMark is the greatest status id the hub has seen given: read
	// from Redis as streams open, raised by the status frames routed. A
	// stream that opens while Redis cannot tell the last id takes it as
	// its catch-up floor (see conn.floor).
	statusMark atomic.Int64
	friendRefs refCache // the friends' references ready frames read lately (friendrefs.go)
	// refReads reads the friends' references not cached, those that
	// streams opening at once miss together in one read, each user once.
	refReads batch.Batcher[int64, social.User]
	// lastStatus and openings read, for the streams opening at once, the
	// last status id and what each needs once subscribed.
	lastStatus batch.Batcher[struct{}, int64]
	openings   batch.Batcher[social.StreamKey, social.StreamOpening]
	cancel     context.CancelFunc
	stopped    <-chan struct{} // closed when the hub stops

	Stats Stats
}

// Counters returns the hub's live counters.
func (h *Hub) Counters() *Stats { return &h.Stats }

// Stats are counters of a hub's life, read by the metrics endpoint.
type Stats struct {
	Open          atomic.Int64 // connections open now
	FramesSent    atomic.Int64
	FramesDropped atomic.Int64 // frames not sent because the connection was closing or too slow, or past maxHeldFrames
	SlowClosed    atomic.Int64 // connections closed because their queue overflowed
	Heartbeats    atomic.Int64 // heartbeat frames received, recorded or not
	// PubSubRestarts counts channels confirmed again after their
	// subscription was lost: the pub/sub connection broke, or on a cluster,
	// a master's connection broke or the channel's slot moved.
	PubSubRestarts atomic.Int64
	// BeatFlushes counts the script calls that wrote the connections'
	// activity to presence, one per tick with any.
	BeatFlushes atomic.Int64
	// BeatFlushTime sums the nanoseconds the hub spent writing its
	// connections' activity, every tick: per second, the share of the time
	// the flusher is busy. Near a second per second, it falls behind.
	BeatFlushTime atomic.Int64
	// SubscribeCommands counts SUBSCRIBE and UNSUBSCRIBE commands sent,
	// each for a batch of channels; on a cluster, SSUBSCRIBE and
	// SUNSUBSCRIBE, each for the channels of one slot, those that subscribe
	// a lost connection's slots again included.
	SubscribeCommands atomic.Int64
	// PresenceCoalesced counts presence frames held back (within a second
	// of the last one about the same user) and then not sent: a newer one
	// replaced them, they told what the last one sent told, or a
	// friend_removed about the user came. A frame sent, at once or once
	// held back, is not counted.
	PresenceCoalesced atomic.Int64

	// Pongs counts pongs to the hub's pings: browsers answer them even when
	// their page's timers are throttled.
	Pongs atomic.Int64
	// IdleClosed counts connections closed with 4000: no frame and no pong
	// for three heartbeat intervals.
	IdleClosed atomic.Int64
	// HeartbeatsRecorded counts heartbeats written to presence: at most one
	// per connection per heartbeat interval, however many frames come.
	HeartbeatsRecorded atomic.Int64
	// FloodClosed counts connections closed with 1008 for sending frames,
	// control frames included, faster than Options.FrameRate allows.
	FloodClosed atomic.Int64
	// ProtocolClosed counts connections failed for a frame the protocol
	// refuses: unmasked (1002), or a text frame not UTF-8 (1007).
	ProtocolClosed atomic.Int64
	// ResumesLimited counts resume frames answered rate_limited: their
	// user's budget (Options.ResumeLimit) was spent.
	ResumesLimited atomic.Int64
	// SessionClosed counts connections closed with 1008 because their
	// session ended: signed out, found gone by a check, or predating a user
	// created anew under their uid.
	SessionClosed atomic.Int64
	// SessionRefused counts streams refused with 401 before the upgrade
	// because their session ended while they were being opened.
	SessionRefused atomic.Int64
	// UserStreamsRefused counts streams refused with 429 because their user
	// held the most connections presence allows one user.
	UserStreamsRefused atomic.Int64
	// Drained counts streams closed with 1001 by a drain (Hub.Drain),
	// each told to reconnect elsewhere.
	Drained atomic.Int64
	// EventStreams counts the streams open now as Server-Sent Events
	// (events.go), among Open.
	EventStreams atomic.Int64
	// Readers counts the goroutines reading streams' clients now: one for
	// each stream whose client's bytes are being read, and one for each
	// stream that waits for its client on a goroutine of its own, where
	// the poller cannot watch its socket (poll_linux.go). An idle stream
	// has none.
	Readers atomic.Int64
}

// readers are the local users who follow one pulled author.
type readers struct {
	users map[int64]*local // by uid
	ready chan struct{}    // closed once the author's channel is live
}

// local is the set of this instance's connections of one user.
type local struct {
	uid   int64
	conns map[*conn]struct{}
	pulls map[int64]struct{} // the pulled authors the user follows; nil while none
	ready chan struct{}      // closed once the user's channel is live
	// checking holds back the channel's frames while its sessions are
	// checked after the pub/sub connection was made again; checkRound tells
	// a check from a later one asked for meanwhile. held are the frames
	// that came meanwhile, sent once the streams have caught up (at most
	// maxHeldFrames; those past it are dropped, left to the catch-up).
	checking   bool
	checkRound uint64
	held       []heldFrame
	// watchHeld says that a global_status or a thread_status came while
	// checking, and was not sent to the user's watching streams
	// (forwardWatched): they are told to read what they watch again once
	// the check is over. Written by the router under Hub.mu read-locked,
	// as held is.
	watchHeld bool
	// hiddenChanges counts the hidden_changed messages routed to the
	// user: a hidden set read before one is not set after it.
	hiddenChanges atomic.Uint64
	// hiddenRead is the shared read of the user's hidden set that the
	// latest hidden_changed queued (hiddenChanged).
	hiddenRead atomic.Pointer[hiddenRead]
	// pullChanges counts the pull_added and pull_removed messages routed
	// to the user (setPull): pulled authors read before one are not set
	// after it. Under Hub.mu.
	pullChanges uint64
}

// heldFrame is a frame that came for a user whose frames are held back.
type heldFrame struct {
	ev      event
	payload []byte
}

// maxHeldFrames bounds the frames held back for one user while its
// sessions are checked: a second's worth and more for any one user.
const maxHeldFrames = 256

// orDefault sets an option left zero (or negative) to its default.
func orDefault[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// New starts a hub; Shutdown stops it.
func New(rdb redis.UniversalClient, feed Feed, pres Presence, opts Options) *Hub {
	orDefault(&opts.HeartbeatInterval, presence.DefaultHeartbeatInterval)
	orDefault(&opts.QueueSize, DefaultQueueSize)
	orDefault(&opts.WriteTimeout, DefaultWriteTimeout)
	orDefault(&opts.SubscribeWait, DefaultSubscribeWait)
	orDefault(&opts.FrameRate, DefaultFrameRate)
	orDefault(&opts.FrameBurst, DefaultFrameBurst)
	orDefault(&opts.SessionCheckInterval, DefaultSessionCheckInterval)
	orDefault(&opts.HealthInterval, DefaultHealthInterval)
	orDefault(&opts.BeatFlushInterval, min(time.Second, opts.HeartbeatInterval/10))
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		rdb: rdb, bus: bus.New(rdb, opts.Prefix), feed: feed, presence: pres, opts: opts, log: opts.Logger,
		budgets:    redis_rate.NewLimiter(rdb),
		changes:    newChannelChanges(),
		recheck:    make(chan struct{}, 1),
		framesLive: make(chan struct{}, 1),
		users:      map[string]*local{},
		authors:    map[string]*readers{},
		watchers:   map[*conn]*local{},
		threads:    map[string]map[*conn]*local{},
		threadOf:   map[*conn]*threadWatch{},
		live:       map[string]bool{},
		subscribed: map[string]bool{},
		unchecked:  map[string]struct{}{},
		lost:       map[string]struct{}{},
		posting:    map[*conn][]protocol.ClientFrame{},
		cancel:     cancel, stopped: ctx.Done(),
	}
	h.global = h.bus.GlobalChannel()
	h.lastStatus.Do = func(ctx context.Context, _ []struct{}) ([]int64, error) {
		id, err := h.feed.LastStatusID(ctx)
		return []int64{id}, err
	}
	h.lastStatus.OpenSpaced()
	h.openings.Do = h.feed.StreamOpenings
	h.openings.OpenSpaced()
	h.openings.Max = openingsPerCall
	h.refReads.Do = h.readRefs
	h.refReads.Max = refReadsPerCall
	h.ps = h.bus.Subscribe(ctx, &h.Stats.SubscribeCommands, h.log)
	// The channel of frames for many users is subscribed first, and stays:
	// one Redis takes one connection's commands in order, and makes its
	// subscriptions again all in one command, so it is live before any
	// user's channel Redis confirms, first or again.
	if h.frames = h.bus.FramesChannel(); h.frames != "" {
		if err := h.ps.Subscribe(ctx, h.frames); err != nil {
			h.log.Warn(changeFailed, "channels", 1, "subscribe", true, "err", err)
		}
	}
	h.routerWG.Add(6)
	go h.route(ctx)
	go h.markFramesReader(ctx)
	go h.subscriber(ctx)
	go h.checkSessions(ctx)
	go h.watchRedis(ctx)
	go h.flushBeats(ctx)
	return h
}

// route reads pub/sub and hands each event to the local connections of the
// user it is for. It never blocks on a connection.
func (h *Hub) route(ctx context.Context) {
	defer h.routerWG.Done()
	ch := h.ps.Incoming()
	for {
		var msg any
		select {
		case <-ctx.Done():
			return
		case msg = <-ch:
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" || m.Kind == "ssubscribe" {
				h.confirmed(m.Channel)
			}
		case *redis.Message:
			if m.Channel == h.frames {
				h.dispatchFrames(m.Payload)
			} else {
				h.dispatch(m.Channel, []byte(m.Payload))
			}
		case bus.LostChannels:
			h.lose(m)
		}
	}
}

// confirmed marks a channel's subscription as live. A confirmation for a
// channel already live means its subscription was lost and made again, and
// Redis may have lost its data meanwhile (a restart without persistence, a
// failover to a lagging replica): the frames of the channel's users are
// held back until the session checker has closed the connections whose
// session is gone, and the others have caught up on what they missed. A
// pulled author's statuses missed meanwhile are caught up that way too:
// their readers' home timelines merge them.
func (h *Hub) confirmed(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if channel == h.frames {
		// Confirmed again with every user's channel, whose confirmations
		// catch their users up.
		h.live[channel] = true
		select {
		case h.framesLive <- struct{}{}:
		default:
		}
		return
	}
	if !h.subscribed[channel] {
		// Confirmed after the subscriber undid it (its users left): were
		// it marked live, the next user to join would not wait for the
		// subscription made for them.
		return
	}
	if h.watchConfirmed(channel) {
		return
	}
	r, u := h.authors[channel], h.users[channel]
	if !h.live[channel] {
		h.live[channel] = true
		switch {
		case r != nil:
			close(r.ready)
			// Those of its readers held back are let through once all
			// their channels are live (recheckChannels): their check is
			// due now, maybe.
			for _, u := range r.users {
				if u.checking {
					h.restart(u)
				}
			}
		case u != nil:
			close(u.ready)
		}
		return
	}
	h.Stats.PubSubRestarts.Add(1)
	delete(h.lost, channel)
	if r != nil {
		for _, u := range r.users {
			h.restart(u)
		}
	}
	if u != nil {
		h.restart(u)
	}
}

func (h *Hub) dispatch(channel string, payload []byte) {
	if channel == h.global || h.bus.IsThreadChannel(channel) {
		h.forwardWatched(channel, payload)
		return
	}
	ev, err := parseEvent(payload)
	if err != nil {
		h.log.Warn("unreadable event", "channel", channel, "err", err)
		return
	}
	switch ev.Type {
	case protocol.TypePullAdded, protocol.TypePullRemoved:
		h.setPull(channel, ev.Author, ev.Type == protocol.TypePullAdded)
		return
	}
	if ev.Type == protocol.TypeStatus && ev.Status.ID > 0 {
		h.raiseStatusMark(ev.Status.ID)
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if r := h.authors[channel]; r != nil {
		for _, u := range r.users {
			h.deliver(u, ev, payload)
		}
		return
	}
	u := h.users[channel]
	if u == nil {
		return
	}
	switch ev.Type {
	case protocol.TypeHiddenChanged:
		h.hiddenChanged(u)
		return
	case protocol.TypeSessionEnded:
		why := closeSignedOut
		if ev.Ended {
			why = closeSessionEnded
		}
		for c := range u.conns {
			if c.session == ev.Session {
				h.endSession(c, why)
			}
		}
		return
	case protocol.TypeAccountSuspended:
		for c := range u.conns {
			h.endSession(c, closeSuspended)
		}
		return
	case typePostedFrame:
		h.posted(u, ev)
		return
	case protocol.TypeUserCreated:
		// Every connection under this uid predates the user: it was opened
		// by a user Redis has since lost. Closed before this event is done,
		// none is sent a frame of the new user.
		for c := range u.conns {
			h.endSession(c, closeSessionEnded)
		}
		return
	}
	h.deliver(u, ev, payload)
}

// dispatchFrames hands a message of the frames channel (bus.SplitFrames),
// a status frame for many users, to the local connections of those users,
// as dispatch would have the frame on each user's channel. It runs on
// route alone, whose buffer names the channels.
func (h *Hub) dispatchFrames(msg string) {
	uids, frame, ok := bus.SplitFrames(msg)
	if !ok {
		h.log.Warn("unreadable frames message", "bytes", len(msg))
		return
	}
	payload := []byte(frame)
	ev, err := parseEvent(payload)
	if err != nil || ev.Type != protocol.TypeStatus || ev.Status.ID <= 0 {
		h.log.Warn("unreadable frames message", "bytes", len(msg), "err", err)
		return
	}
	h.raiseStatusMark(ev.Status.ID)
	h.mu.RLock()
	defer h.mu.RUnlock()
	for uids != "" {
		var uid string
		uid, uids, _ = strings.Cut(uids, " ")
		h.frameName = h.bus.AppendUserChannel(h.frameName[:0], uid)
		// Only once the user's channel is live, as a frame on it would
		// come: what is published on it after this frame (the status's
		// deletion) then comes too.
		if u := h.users[string(h.frameName)]; u != nil && h.live[string(h.frameName)] {
			h.deliver(u, ev, payload)
		}
	}
}

// deliver queues an event's frame for each of u's connections. Called with
// h.mu held.
func (h *Hub) deliver(u *local, ev event, payload []byte) {
	if u.checking {
		// Held, not dropped: its status may have reached the home
		// timeline only after the catch-up's read (a post's frames go
		// out a round trip ahead of its pushes).
		if len(u.held) < maxHeldFrames {
			u.held = append(u.held, heldFrame{ev, payload})
		} else {
			h.Stats.FramesDropped.Add(int64(len(u.conns)))
		}
		return
	}
	switch {
	case ev.Type == protocol.TypePresence && ev.User != nil:
		for c := range u.conns {
			c.enqueuePresence(ev.User.ID, ev.Online, payload)
		}
		return
	case ev.Type == protocol.TypeFriendRemoved && ev.User != nil:
		// A presence frame about the friend held back was published
		// before this one: it goes with it, not after.
		for c := range u.conns {
			if c.presence.drop(ev.User.ID) {
				h.Stats.PresenceCoalesced.Add(1)
			}
		}
	case ev.Type == protocol.TypeProfile && ev.User != nil:
		// A presence frame about the user held back was published before
		// this one, under the name it changes: it goes first, as it came,
		// rather than after, where it would show the old name again.
		for c := range u.conns {
			c.flushPresence(ev.User.ID)
		}
	}
	out := outgoing{frame: payload}
	if ev.Type == protocol.TypeStatus {
		out.statusID, out.author = ev.Status.ID, ev.Status.UID
	}
	for c := range u.conns {
		c.enqueue(out)
	}
}

// subscriber brings the pub/sub connection's channels in line with the
// local users, one channel at a time, so that a subscribe and an unsubscribe
// of one channel never race.
func (h *Hub) subscriber(ctx context.Context) {
	defer h.routerWG.Done()
	batch := map[string]struct{}{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.changes.wake:
		}
		// Take every change that comes within subscribeLinger, up to a
		// batch: a reconnect storm of thousands of streams costs a few
		// commands, not one per channel.
		if h.changes.waiting() < bus.SubscribeBatch {
			linger := time.NewTimer(subscribeLinger)
		more:
			for {
				select {
				case <-h.changes.wake:
					if h.changes.waiting() >= bus.SubscribeBatch {
						break more
					}
				case <-linger.C:
					break more
				case <-ctx.Done():
					linger.Stop()
					return
				}
			}
			linger.Stop()
		}
		h.changes.take(batch, bus.SubscribeBatch)
		if len(batch) == 0 {
			continue
		}
		var subscribe, unsubscribe []string
		h.mu.Lock()
		for channel := range batch {
			want := h.users[channel] != nil || h.authors[channel] != nil ||
				(channel == h.global && len(h.watchers) > 0) || h.threads[channel] != nil
			if !want {
				// From here on a joining connection waits for a new
				// confirmation.
				delete(h.live, channel)
				delete(h.lost, channel)
			}
			switch {
			case want && !h.subscribed[channel]:
				subscribe = append(subscribe, channel)
				h.subscribed[channel] = true
			case !want && h.subscribed[channel]:
				unsubscribe = append(unsubscribe, channel)
				delete(h.subscribed, channel)
			}
		}
		h.mu.Unlock()
		clear(batch)
		for _, change := range []struct {
			channels  []string
			subscribe bool
			do        func(context.Context, ...string) error
		}{{subscribe, true, h.ps.Subscribe}, {unsubscribe, false, h.ps.Unsubscribe}} {
			if len(change.channels) == 0 {
				continue
			}
			if err := change.do(ctx, change.channels...); err != nil && ctx.Err() == nil {
				// The subscriber keeps the channels it was asked for even
				// when the command fails, and a new connection carries
				// them (bus.Subscriber). (At shutdown the connection is
				// closed on purpose.)
				h.log.Warn(changeFailed,
					"channels", len(change.channels), "subscribe", change.subscribe, "err", err)
			}
		}
	}
}

// join adds c to its user's local set, subscribing on the user's first
// local connection, and waits until the subscription is live. It returns
// the user's count of pull changes (local.pullChanges) as c joined, for
// joinAuthors to tell whether one was routed since.
func (h *Hub) join(ctx context.Context, c *conn) (pullChanges uint64, err error) {
	channel := h.bus.UserChannel(c.uid)
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return 0, ErrShuttingDown
	}
	u := h.users[channel]
	if u == nil {
		u = &local{uid: c.uid, conns: map[*conn]struct{}{}, ready: make(chan struct{})}
		if h.live[channel] { // still subscribed from a connection just gone
			close(u.ready)
		}
		_, u.checking = h.lost[channel] // lost since: held back until confirmed again
		h.users[channel] = u
	}
	u.conns[c] = struct{}{}
	pullChanges = u.pullChanges
	ready := u.ready
	h.mu.Unlock()
	h.resync(channel)
	if err := h.wait(ctx, ready); err != nil {
		h.leave(c)
		return 0, fmt.Errorf("subscribe %s: %w", channel, err)
	}
	return pullChanges, nil
}

// pullReads bounds the reads of a stream's pulled authors as it opens: its
// opening's, and those made again because a follow or unfollow of a pulled
// author was routed meanwhile (joinAuthors).
const pullReads = 3

// joinAuthors makes c's user, who has joined, a reader of authors, the
// pulled authors they follow, and waits until the authors' channels are
// live too. The authors were read once the user's channel was live and
// its count of pull changes was seen (seen): a follow or unfollow made
// since reaches the hub as pull_added or pull_removed, which setPull
// applies. One routed before the authors are added may be newer than the
// read: adding them then could undo an unfollow, so they are read again,
// until none comes between a read and its use. Past pullReads reads the
// stream is refused, as one that could not subscribe is.
func (h *Hub) joinAuthors(ctx context.Context, c *conn, seen uint64, authors []int64) error {
	for reads := 1; len(authors) > 0; reads++ {
		ready, now, added := h.addPulls(c, seen, authors)
		if added {
			return h.waitAuthors(ctx, ready)
		}
		if reads == pullReads {
			return fmt.Errorf("the pulled authors of %d changed %d times while the stream opened", c.uid, reads)
		}
		seen = now
		var err error
		if authors, err = h.pulledAuthors(ctx, c.uid); err != nil {
			return err
		}
	}
	return nil
}

// addPulls makes c's user a reader of authors, unless the user's count of
// pull changes is no longer seen: then it adds none, and returns the count
// now. Otherwise it returns the ready channels of the authors' readers.
func (h *Hub) addPulls(c *conn, seen uint64, authors []int64) (ready []chan struct{}, now uint64, added bool) {
	h.mu.Lock()
	u := h.users[h.bus.UserChannel(c.uid)]
	if u == nil { // c left meanwhile
		h.mu.Unlock()
		return nil, seen, true
	}
	if u.pullChanges != seen {
		h.mu.Unlock()
		return nil, u.pullChanges, false
	}
	var changed []string
	for _, author := range authors {
		ch, first := h.addPull(u, author)
		if first {
			changed = append(changed, ch)
		}
		ready = append(ready, h.authors[ch].ready)
	}
	h.mu.Unlock()
	for _, ch := range changed {
		h.resync(ch)
	}
	return ready, seen, true
}

// waitAuthors waits until the pulled authors' channels whose readers'
// ready channels are given are live.
func (h *Hub) waitAuthors(ctx context.Context, ready []chan struct{}) error {
	for _, r := range ready {
		if err := h.wait(ctx, r); err != nil {
			return fmt.Errorf("subscribe to %d authors: %w", len(ready), err)
		}
	}
	return nil
}

// pulledAuthors reads the pulled authors uid follows.
func (h *Hub) pulledAuthors(ctx context.Context, uid int64) ([]int64, error) {
	pulled, err := readEach(ctx, []int64{uid}, "pulled authors", h.feed.PulledAuthorsOf)
	if err != nil {
		return nil, fmt.Errorf("pulled authors of %d: %w", uid, err)
	}
	return pulled[0], nil
}

// wait waits, up to SubscribeWait, for ready to close.
func (h *Hub) wait(ctx context.Context, ready <-chan struct{}) error {
	wait, cancel := context.WithTimeout(ctx, h.opts.SubscribeWait)
	defer cancel()
	select {
	case <-ready:
		return nil
	case <-wait.Done():
		return errNoSubscription
	}
}

// leave takes c out of its user's local set, unsubscribing after the last,
// and out of the global timeline's and its thread's watchers.
func (h *Hub) leave(c *conn) {
	channel := h.bus.UserChannel(c.uid)
	h.mu.Lock()
	u := h.users[channel]
	var changed []string
	if _, watching := h.watchers[c]; watching {
		delete(h.watchers, c)
		if len(h.watchers) == 0 {
			changed = append(changed, h.global)
		}
	}
	if w := h.threadOf[c]; w != nil {
		if ch, last := h.unwatchThread(c, w); last {
			changed = append(changed, ch)
		}
	}
	if u != nil {
		delete(u.conns, c)
		if len(u.conns) == 0 {
			delete(h.users, channel)
			for author := range u.pulls {
				if ch, ok := h.removePull(u, author); ok {
					changed = append(changed, ch)
				}
			}
		}
	}
	h.mu.Unlock()
	h.resync(channel)
	for _, ch := range changed {
		h.resync(ch)
	}
}

// setPull records that the user of channel started (add) or stopped
// following a pulled author, and brings the author's channel in line.
func (h *Hub) setPull(channel string, author int64, add bool) {
	h.mu.Lock()
	u := h.users[channel]
	var ch string
	var changed bool
	if u != nil && author > 0 {
		u.pullChanges++
		if add {
			ch, changed = h.addPull(u, author)
		} else {
			ch, changed = h.removePull(u, author)
		}
	}
	h.mu.Unlock()
	if changed {
		h.resync(ch)
	}
}

// addPull makes u a reader of author's channel; it returns the channel and
// whether it gained its first reader. Called with h.mu held.
func (h *Hub) addPull(u *local, author int64) (string, bool) {
	if u.pulls == nil {
		u.pulls = map[int64]struct{}{}
	}
	u.pulls[author] = struct{}{}
	ch := h.bus.AuthorChannel(author)
	r := h.authors[ch]
	first := r == nil
	if first {
		r = &readers{users: map[int64]*local{}, ready: make(chan struct{})}
		if h.live[ch] { // still subscribed from readers just gone
			close(r.ready)
		}
		h.authors[ch] = r
	}
	r.users[u.uid] = u
	if _, lost := h.lost[ch]; lost {
		u.checking = true // until the author's channel is confirmed again
	}
	return ch, first
}

// removePull takes u out of author's readers; it returns the channel and
// whether it lost its last reader. Called with h.mu held.
func (h *Hub) removePull(u *local, author int64) (string, bool) {
	delete(u.pulls, author)
	ch := h.bus.AuthorChannel(author)
	if _, lost := h.lost[ch]; lost && u.checking {
		h.restart(u) // held back for this author alone, maybe
	}
	r := h.authors[ch]
	if r == nil {
		return ch, false
	}
	delete(r.users, u.uid)
	if len(r.users) > 0 {
		return ch, false
	}
	delete(h.authors, ch)
	// A stream of u waiting for this channel (u unfollowed while it
	// opened) no longer needs it: let it go on rather than time out.
	select {
	case <-r.ready:
	default:
		close(r.ready)
	}
	return ch, true
}

// resync asks the subscriber to bring channel in line. It never blocks.
func (h *Hub) resync(channel string) { h.changes.add(channel) }

var (
	errNoSubscription = errors.New("no pub/sub subscription")
)

// changeFailed is the log line of a subscribe or unsubscribe that failed:
// the connection broke, and the subscriber makes a new one, with the
// change.
const changeFailed = "pub/sub change failed; it holds once the connection is made again"

// subscribeLinger is how long the subscriber waits for more changes to
// send with one: a stream's opening waits that much longer for its
// subscription, and streams opening at 1,000 a second share a command
// five at a time.
const subscribeLinger = 5 * time.Millisecond

// stopTaking has the hub take no new stream, and returns the streams it
// holds, in the maps' order, which is random. No stream is counted in
// h.conns after it (see track), so that waitConns may wait for them.
func (h *Hub) stopTaking() []*conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closing = true
	var all []*conn
	for _, u := range h.users {
		for c := range u.conns {
			all = append(all, c)
		}
	}
	return all
}

// track counts a stream about to open in h.conns, unless the hub takes no
// new stream: the count and stopTaking exclude each other, so no stream is
// added while waitConns waits.
func (h *Hub) track() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closing {
		return false
	}
	h.conns.Add(1)
	return true
}

// waitConns waits until every stream has ended, or ctx has.
func (h *Hub) waitConns(ctx context.Context) error {
	done := make(chan struct{})
	go func() { h.conns.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown closes every connection with 1001 (reconnect elsewhere, then
// resume) and waits for them, until ctx ends. Their presence is left to
// expire rather than announced as offline: a client reconnecting to another
// instance stays online for its friends without a flicker. Once it reads
// nothing more, the hub marks itself done with the frames channel
// (markFramesDone).
func (h *Hub) Shutdown(ctx context.Context) error {
	for _, c := range h.stopTaking() {
		c.shuttingDown.Store(true)
		c.closeSoon(closeShutdown)
	}
	err := h.waitConns(ctx)
	h.cancel()
	_ = h.ps.Close() // its connections end with the process
	h.routerWG.Wait()
	h.markFramesDone(ctx)
	return err
}
