// Package app assembles one Chorus instance from a Redis client and its
// settings: the social service, the presence tracker, the stream hub and
// the HTTP server, wired to each other, and the background work they need.
// cmd/chorus runs one; web's tests run several.
package app

import (
	"context"
	"log/slog"
	"sync"

	"chorus/internal/slots"
	"chorus/presence"
	"chorus/protocol"
	"chorus/realtime"
	"chorus/social"
	"chorus/web"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Options are an instance's settings. The fields one part takes from
// another (the key prefix, presence's friends and channels, the loggers,
// the parts the server serves) are filled in by New.
type Options struct {
	Prefix   string // key prefix of every part, "chorus:" in production
	Social   social.Options
	Presence presence.Options
	Realtime realtime.Options // HeartbeatInterval defaults to presence's
	Web      web.Config
	Logger   *slog.Logger // nil: slog.Default()
	// Name names the instance's fan-out consumer; unique per instance.
	Name string
	// NoFanoutWorker runs no fan-out worker: jobs wait past their first
	// pass (for tests of what other instances' workers do).
	NoFanoutWorker bool
}

// Instance is one assembled Chorus instance.
type Instance struct {
	Social   *social.Service
	Presence *presence.Tracker
	Hub      *realtime.Hub
	Server   *web.Server

	log  *slog.Logger
	opts Options
}

// New wires an instance on rdb. Nothing runs until Run.
func New(rdb redis.UniversalClient, o Options) *Instance {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	cluster := slots.Cluster(rdb)
	so := o.Social
	so.Prefix, so.Logger = o.Prefix, log.With("component", "social")
	so.ConnectedKey = presence.ConnectedKey(o.Prefix, cluster)
	so.InstancesKey = presence.InstancesKey(o.Prefix, cluster)
	if cluster {
		// Presence's scripts read a user's friends in presence's slot: the
		// mirror of the friend set, which social keeps.
		so.FriendsMirror = func(uid int64) string { return presence.FriendsMirrorKey(o.Prefix, uid) }
	}
	// A follow that makes two users friends introduces them through
	// presence, which social does not import: it is told through this.
	var pres *presence.Tracker
	so.Befriended = func(ctx context.Context, a, b int64) error { return pres.AnnounceFriendship(ctx, a, b) }
	so.AccountDeleted = func(ctx context.Context, uid int64) error { return pres.Forget(ctx, uid) }
	so.ProfileChanged = func(ctx context.Context, user protocol.UserRef, frame []byte) error {
		return pres.AnnounceProfile(ctx, user, frame)
	}
	soc := social.New(rdb, so)

	po := o.Presence
	po.Prefix, po.Logger = o.Prefix, log.With("component", "presence")
	po.FriendsKey, po.Profile = soc.FriendsKey, soc.Profile
	if so.FriendsMirror != nil {
		po.FriendsKey = so.FriendsMirror
	}
	pres = presence.New(rdb, po)

	ro := o.Realtime
	ro.Prefix, ro.Logger = o.Prefix, log.With("component", "realtime")
	// Presence's id, new for each process: the hub's mark as a reader of
	// the frames channel, and its mark done with it once shut down, hold
	// under it (a reused id would lend a day's done mark to a process that
	// may not read the channel).
	ro.Instance = pres.ID()
	if ro.HeartbeatInterval == 0 {
		ro.HeartbeatInterval = pres.HeartbeatInterval()
	}
	hub := realtime.New(rdb, soc, pres, ro)

	wc := o.Web
	if wc.Metrics == nil {
		wc.Metrics = web.NewMetrics()
	}
	rdb.AddHook(wc.Metrics.RedisHook())
	wc.Social, wc.Presence, wc.Stream = soc, pres, hub
	wc.Limiter, wc.KeyPrefix, wc.Logger = redis_rate.NewLimiter(rdb), o.Prefix, log
	return &Instance{
		Social: soc, Presence: pres, Hub: hub, Server: web.NewServer(wc),
		log: log, opts: o,
	}
}

// Run runs the instance's background work until ctx ends, then waits for
// it: the fan-out worker, the presence sweeper, and the search index of
// users and the pulled statuses from before them (built once per Redis, by
// the first instance).
func (in *Instance) Run(ctx context.Context) {
	var work sync.WaitGroup
	if !in.opts.NoFanoutWorker {
		work.Go(func() { in.Social.NewWorker(in.opts.Name, in.log.With("component", "fanout")).Run(ctx) })
	}
	work.Go(func() { in.Presence.RunSweeper(ctx) })
	work.Go(func() {
		if err := in.Social.BuildIndexes(ctx, in.log); err != nil && ctx.Err() == nil {
			in.log.Warn("user search index not built; the next start tries again", "err", err)
		}
	})
	work.Go(func() {
		if err := in.Social.FillPulledStatuses(ctx, in.log); err != nil && ctx.Err() == nil {
			in.log.Warn("pulled statuses not filled; the next start tries again", "err", err)
		}
	})
	work.Wait()
}
