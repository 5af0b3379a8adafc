package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// StormResult is what a reconnect storm came to.
type StormResult struct {
	KilledPID    int           `json:"killed_pid"`
	Signal       string        `json:"signal"` // SIGKILL, or SIGTERM: a drain
	KilledAt     time.Time     `json:"killed_at"`
	WatchSeconds float64       `json:"watch_seconds"` // from the kill to the end of the watch
	Movers       StormMovers   `json:"movers"`
	Redis        *StormRedis   `json:"redis,omitempty"` // with -redis-url
	Presence     StormPresence `json:"presence"`
	// Counters are the surviving instances' chorus_ counters that changed
	// from just before the kill to the end of the watch.
	Counters []CounterChanges `json:"server_counters,omitempty"`
}

// CounterChanges are the counters of one instance that changed, each summed
// over its labels.
type CounterChanges struct {
	URL     string             `json:"url"`
	Changed map[string]float64 `json:"changed"`
}

// storm runs a reconnect storm: movers on the first instance and observers
// on the others, friends of each other; once all are connected it kills the
// first instance's process, the movers reconnect to the others within the
// spread, and the observers' presence frames tell whether anyone saw a
// mover go offline. It returns the result so far with an error when a phase
// fails. exe is the program to run as worker processes.
func storm(ctx context.Context, cfg config, exe string, log *slog.Logger, stderr io.Writer) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxTime)
	defer cancel()
	res := &Result{RunID: newRunID(), Started: time.Now().UTC(), URLs: cfg.URLs, Params: Params{
		Conns: cfg.Conns, Observers: cfg.Observers, FriendsPerMover: cfg.FriendsPerMover,
		SpreadSeconds: cfg.Spread.Seconds(), WatchSeconds: cfg.Watch.Seconds(), SourceIPs: len(cfg.SourceIPs),
	}}
	res.Storm = &StormResult{KilledPID: cfg.KillPID, Movers: StormMovers{Total: cfg.Conns}}
	victim, err := os.FindProcess(cfg.KillPID)
	if err == nil {
		err = victim.Signal(syscall.Signal(0))
	}
	if err != nil {
		return res, fmt.Errorf("-storm-kill-pid %d: %w", cfg.KillPID, err)
	}
	api := newAPIClient(cfg.SignupConcurrency + cfg.FollowConcurrency)
	defer api.close()

	// Users: the movers first, then the observers, friends of each other.
	movers, survivors := cfg.Conns, cfg.URLs[1:]
	fr := buildFriends(movers, cfg.Observers, cfg.FriendsPerMover)
	users, err := setupUsers(ctx, api, &cfg, res, cfg.connCount(), fr.edges, log)
	if err != nil {
		return res, err
	}

	// Connections: movers on the first instance, each to move to one of the
	// others; observers spread over the others. Observers are dialled first,
	// so that they are told of the movers coming online: a check that they
	// would be told of them going offline.
	specs := make([]connSpec, cfg.connCount())
	moverOf := make(map[int64]int, movers)
	for i := range specs {
		home := cfg.URLs[0]
		if i < movers {
			moverOf[users[i].ID] = i
		} else {
			home = survivors[(i-movers)%len(survivors)]
		}
		u, err := streamURL(home)
		if err != nil {
			return res, err
		}
		specs[i] = connSpec{Index: i, URL: u, Token: users[i].Token}
		if i < movers {
			if specs[i].Move, err = streamURL(survivors[i%len(survivors)]); err != nil {
				return res, err
			}
		}
		if len(cfg.SourceIPs) > 0 {
			specs[i].Source = cfg.SourceIPs[i%len(cfg.SourceIPs)].String()
		}
	}
	specs = slices.Concat(specs[movers:], specs[:movers])
	col := newCollector(len(specs))
	workers := cfg.workerCount()
	res.Client.Workers = workers
	deadline, _ := ctx.Deadline()
	opts := shardOptions{RunID: res.RunID, DialConcurrency: cfg.DialConcurrency, DialTimeout: cfg.DialTimeout,
		Lifetime: time.Until(deadline), Storm: true, Spread: cfg.Spread, SSE: cfg.SSE}
	log.Info("connecting", "movers", movers, "observers", cfg.Observers, "workers", workers, "source_ips", len(cfg.SourceIPs))
	hs, err := connectAll(ctx, workers, exe, specs, opts, col, res, log, stderr)
	if err != nil {
		return res, err
	}
	defer func() { _ = hs.stop(15 * time.Second) }() // at once after the stop below: stop is idempotent
	var rdb *redis.Client                            // the deployment's Redis, to read its work, when -redis-url names it
	if cfg.RedisURL != "" {
		opt, err := parseFloorRedis(cfg.RedisURL)
		if err != nil {
			return res, err
		}
		rdb = redis.NewClient(opt)
		defer func() { _ = rdb.Close() }()
	}
	var holdStart, atKill, atBack redisWork
	known := rdb != nil
	if known {
		holdStart, known = readRedisWork(ctx, rdb)
	}
	if err := sleep(ctx, cfg.Hold); err != nil {
		return res, err
	}
	res.Conns.HeldIdle = col.heldAt(monoNow())
	connected := col.readyAmong(0, movers)

	// The storm: kill the first instance and watch.
	before := make([]map[string]float64, len(survivors))
	for i, u := range survivors {
		before[i] = scrapeCounters(ctx, api, u)
	}
	sig := syscall.SIGKILL
	res.Storm.Signal = "SIGKILL"
	if cfg.Signal == "term" {
		sig, res.Storm.Signal = syscall.SIGTERM, "SIGTERM"
	}
	log.Info("stopping the first instance", "pid", cfg.KillPID, "signal", res.Storm.Signal, "url", cfg.URLs[0], "watch", cfg.Watch)
	if known {
		atKill, known = readRedisWork(ctx, rdb)
	}
	killed, killAt := time.Now(), monoNow()
	if err := victim.Signal(sig); err != nil {
		return res, fmt.Errorf("%s to %d: %w", res.Storm.Signal, cfg.KillPID, err)
	}
	res.Storm.KilledAt = killed.UTC()
	allBack := func() {
		if known {
			atBack, known = readRedisWork(ctx, rdb)
		}
	}
	if err := watchStorm(ctx, hs, col, killed.Add(cfg.Watch), connected, allBack, log); err != nil {
		return res, err
	}
	for i, u := range survivors {
		if after := scrapeCounters(ctx, api, u); after != nil {
			res.Storm.Counters = append(res.Storm.Counters, CounterChanges{URL: u, Changed: counterChanges(before[i], after)})
		}
	}
	res.Storm.WatchSeconds = time.Since(killed).Seconds()
	endAt := monoNow()
	heldAtEnd := col.heldAt(endAt)
	stopErr := hs.stop(30 * time.Second)

	addShardTotals(res, col)
	col.mu.Lock()
	res.Storm.Movers = tallyMoves(col.moves, movers, connected, killAt)
	if known && !atBack.at.IsZero() {
		res.Storm.Redis = stormRedis(holdStart, atKill, atBack, res.Storm.Movers.Back)
	}
	res.Storm.Presence = tallyPresence(col.presence, movers, moverOf, killAt, endAt)
	col.mu.Unlock()
	// A mover that failed to reconnect is no longer held, though no
	// connection of it was reported closed.
	res.Conns.HeldAtEnd = heldAtEnd - res.Storm.Movers.Failed
	return res, shardsDone(hs, col, stopErr)
}

// watchStorm waits until end, logging how the movers are doing every few
// seconds, and calls allBack once the connected movers are all back or
// failed; it returns early only when a worker fails or ctx ends.
func watchStorm(ctx context.Context, hs *holders, col *collector, end time.Time, connected int, allBack func(), log *slog.Logger) error {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	done := time.NewTimer(time.Until(end))
	defer done.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-hs.errs:
			return err
		case <-done.C:
			return nil
		case <-poll.C:
			if back, failed, _ := col.stormProgress(); back+failed >= connected {
				allBack()
				poll.Stop()
			}
		case <-tick.C:
			back, failed, frames := col.stormProgress()
			log.Info("storm", "movers_back", back, "movers_failed", failed, "presence_frames", frames, "watch_left", time.Until(end).Round(time.Second))
		}
	}
}
