// Package presence knows who is online, on the classic Redis layout for it
// (per-minute active.users sets, a last.seen sorted set, online friends in
// one Lua script of ZUNIONSTORE, ZREMRANGEBYSCORE and ZINTERSTORE), made to
// scale: activity goes into a shared online copy of last.seen every tick,
// and into last.seen and the minute's active set (and HyperLogLog) once a
// minute per user, by Redis's clock; online friends is one Lua script over
// the shared copy; a registry of live connections tells a user's first
// connection and last disconnect apart from the others, and caps how many
// one user holds; presence frames go to friends over Redis pub/sub. It
// knows nothing of HTTP or WebSockets.
//
// Each Tracker is one instance. Its connections live as long as its lease,
// which it renews every tick with its connections' activity (Heartbeats), so
// a tick costs Redis a few commands per active user and none per
// connection; when an instance goes away, its lease runs out and the sweep
// takes its connections out.
//
// Presence is private to a user and their friends. This package does not
// check who asks: its caller (the web layer) does.
package presence

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"chorus/bus"
	"chorus/internal/batch"
	"chorus/internal/slots"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Defaults for Options fields left zero.
const (
	DefaultWindow            = 30 * time.Second
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultCopyTTL           = time.Second
	DefaultMaxOnlineFriends  = 1000
	DefaultMaxConnsPerUser   = 10
)

const (
	activeMinutes  = 10               // active_last_10m counts this many minutes
	activeKeyTTL   = 11 * time.Minute // a minute's keys outlive the ten minutes they are read in
	sweepBatch     = 500              // connections the sweep script takes out per call
	trimBatch      = 1000             // users the trim script takes out of the online copy per call
	announceBatch  = 1000             // channels per publishing script call, or pipeline on a cluster
	presencesBatch = 1000             // users per presences script call
)

// announceCorrections is how many times an announcement on a cluster
// publishes the user's current state after finding it changed under its
// publish (see publishSharded).
const announceCorrections = 8

var (
	// ErrInvalid reports input no call can act on, such as an empty connection id.
	ErrInvalid = errors.New("invalid presence input")
	// ErrTooManyConnections refuses a connection of a user who holds
	// Options.MaxConnsPerUser live connections already, on any instance.
	ErrTooManyConnections = errors.New("too many connections for one user")
)

// Options tune a Tracker. Each default is the Default constant of the
// field's name, applied by fill to a field left zero; cmd/chorus takes its
// flags' defaults from the same constants. FriendsKey is required.
type Options struct {
	// Prefix goes before every key, as the social package's does ("chorus:"
	// in production); it is used as given.
	Prefix string
	// Window is W: a user counts as online while seen within W and still
	// connected, and a connection counts for W after its last heartbeat.
	// Zero: DefaultWindow.
	Window time.Duration
	// HeartbeatInterval is how often the hub records each connection's
	// activity (a frame, or a pong to its ping) with Heartbeats; RunSweeper
	// sweeps every half of it. It should be well under Window. Zero:
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// CopyTTL is the least time between two trims of the shared online
	// copy, which the instances' sweepers do (see copy.lua). Negative copies
	// last.seen afresh on every read, as the classic layout does (for comparison in
	// benchmarks). Zero: DefaultCopyTTL.
	CopyTTL time.Duration
	// MaxOnlineFriends caps the list OnlineFriends returns (most recent
	// kept). Zero: DefaultMaxOnlineFriends.
	MaxOnlineFriends int
	// MaxConnsPerUser is the most live connections one user may hold, on
	// all instances together: Connect refuses more. Zero:
	// DefaultMaxConnsPerUser; negative: no cap.
	MaxConnsPerUser int
	// CountsTTL is how long a Tracker serves the site-wide Counts it last
	// computed; zero means HeartbeatInterval. Negative computes them on
	// every call (for tests).
	CountsTTL time.Duration

	// FriendsKey names the sorted set of uid's friends (member: friend uid in
	// decimal, score: friend since, unix ms). The social package owns it; on a
	// Redis Cluster it must be the mirror in presence's slot
	// (FriendsMirrorKey), which the social package keeps.
	FriendsKey func(uid int64) string
	// Profile gives the login and name shown in presence events. When nil,
	// or when it fails, events carry the id alone.
	Profile func(ctx context.Context, uid int64) (login, name string, err error)
	// Logger takes the failures of announcements nobody waits for; nil
	// means slog.Default().
	Logger *slog.Logger
}

func (o *Options) fill() {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.CopyTTL == 0 {
		o.CopyTTL = DefaultCopyTTL
	}
	if o.MaxOnlineFriends <= 0 {
		o.MaxOnlineFriends = DefaultMaxOnlineFriends
	}
	if o.MaxConnsPerUser == 0 {
		o.MaxConnsPerUser = DefaultMaxConnsPerUser
	}
	if o.CountsTTL == 0 {
		o.CountsTTL = o.HeartbeatInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Tracker records presence in one Redis. Every instance of Chorus has one;
// they agree through Redis alone.
type Tracker struct {
	id      string // this instance's, for its lease
	rdb     redis.UniversalClient
	cluster bool // rdb is a Redis Cluster: announcements are checked from Go, not in a script
	bus     *bus.Bus
	opts    Options
	keys    keys
	log     *slog.Logger
	counts  countsCache
	now     func() time.Time // the local clock, for the counts cache alone
	// skew is Redis's clock less the local one (ms) at the last script
	// reply, to tell which minute's keys to hand the scripts (see inMinute).
	skew atomic.Int64

	mu      sync.Mutex
	held    map[Beat]struct{} // the connections registered through this instance
	leaving map[Beat]struct{} // connections whose Disconnect failed, retried every tick
	// unsure are the users of register calls that failed, which may have
	// run all the same (an answer lost) and made the user connected
	// unannounced: once the disconnects are retried, each is announced
	// online while still connected (disconnectAgain).
	unsure map[int64]struct{}
	server string // Redis's run_id at the last tick
	// registering is closed when the registerAgain under way, on a
	// goroutine of its own, ends; nil when none runs. Under mu.
	registering chan struct{}
	// again counts the times the connections were found to need
	// registering again; registerAgain sets it to 0 once it did.
	again atomic.Int64

	opens batch.Batcher[Beat, openResult] // the Opens written together (open.go)

	// active is the users whose last.seen and active set this instance
	// wrote in a minute. Its own lock, which no other is taken under.
	activeMu sync.Mutex
	active   struct {
		minute int64 // unix s / 60, Redis's clock
		users  map[int64]struct{}
	}
}

// New returns a Tracker using rdb under the options' key prefix; on a Redis
// Cluster every key is in one slot (see keys). It panics when FriendsKey is
// missing, or on a cluster when FriendsKey names a key outside presence's
// slot: wiring mistakes.
func New(rdb redis.UniversalClient, opts Options) *Tracker {
	if opts.FriendsKey == nil {
		panic("presence: Options.FriendsKey is required")
	}
	cluster := slots.Cluster(rdb)
	k := newKeys(opts.Prefix, cluster)
	if cluster && slots.Of(opts.FriendsKey(1)) != slots.Of(k.lastSeen()) {
		panic("presence: on a Redis Cluster, Options.FriendsKey must name the mirror in presence's slot (FriendsMirrorKey)")
	}
	opts.fill()
	t := &Tracker{
		id: uuid.NewString(), rdb: rdb, cluster: cluster, bus: bus.New(rdb, opts.Prefix), opts: opts, keys: k,
		log: opts.Logger, now: time.Now, held: map[Beat]struct{}{}, leaving: map[Beat]struct{}{},
		unsure: map[int64]struct{}{},
	}
	t.opens.Do = t.openBatch
	t.opens.OpenSpaced()
	t.opens.Max = MaxBeatsPerCall
	return t
}

// shard returns the client of the Redis holding presence's keys, for
// commands that name no key: rdb itself, or on a cluster the master of
// presence's slot, where a keyless command through rdb could reach any node.
func (t *Tracker) shard(ctx context.Context) (redis.Cmdable, error) {
	return shardOf(ctx, t.rdb, t.keys)
}

func shardOf(ctx context.Context, rdb redis.UniversalClient, k keys) (redis.Cmdable, error) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.MasterForKey(ctx, k.lastSeen())
	}
	return rdb, nil
}

// Window is the online window W the tracker was built with.
func (t *Tracker) Window() time.Duration { return t.opts.Window }

// HeartbeatInterval is how often a connection's activity is recorded: the
// hub pings each stream this often, and writes what came in between.
func (t *Tracker) HeartbeatInterval() time.Duration { return t.opts.HeartbeatInterval }

// ID is this instance's id, the member of its lease in the instances set
// (InstancesKey).
func (t *Tracker) ID() string { return t.id }

func ms(d time.Duration) int64 { return d.Milliseconds() }

func unixMilli(n int64) time.Time { return time.UnixMilli(n).UTC() }
