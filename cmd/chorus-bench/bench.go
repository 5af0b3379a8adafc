package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// bench runs the whole measurement: users and follows, connections, idle
// memory, posts, deliveries. It returns the result so far with an error
// when a phase fails. exe is the program to run as worker processes.
func bench(ctx context.Context, cfg config, exe string, log *slog.Logger, stderr io.Writer) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxTime)
	defer cancel()
	res := &Result{RunID: newRunID(), Started: time.Now().UTC(), URLs: cfg.URLs, Params: Params{
		Conns: cfg.Conns, Authors: cfg.Authors, FollowersPerAuthor: cfg.FollowersPerAuthor,
		Rate: cfg.Rate, DurationSeconds: cfg.Duration.Seconds(), SourceIPs: len(cfg.SourceIPs),
		MaxLagMS: float64(cfg.MaxLag) / 1e6,
	}}
	res.Floor = cfg.Floor
	if cfg.Floor {
		res.FloorFrames = cfg.FloorFrames
	}
	res.SSE = cfg.SSE
	api := newAPIClient(cfg.MaxInFlight + cfg.SignupConcurrency + cfg.FollowConcurrency)
	defer api.close()
	var floor *floorTarget // the deployment's Redis, when -redis-url names it
	if cfg.RedisURL != "" {
		f, err := openFloor(ctx, &cfg)
		if err != nil {
			return res, err
		}
		defer f.close()
		floor = f
	}

	// Users: authors first, then one user per connection.
	g := buildGraph(cfg.Authors, cfg.Conns, cfg.FollowersPerAuthor)
	users, err := setupUsers(ctx, api, &cfg, res, cfg.Authors+cfg.Conns, g.edges, log)
	if err != nil {
		return res, err
	}

	// Connections, spread over instances, source addresses and shards.
	for _, pid := range cfg.ServerPIDs {
		before, err := readRSS(pid)
		if err != nil {
			return res, err
		}
		res.Memory = append(res.Memory, ServerMemory{PID: pid, BeforeKiB: before})
	}
	for _, u := range cfg.URLs {
		res.Metrics = append(res.Metrics, InstanceMetrics{URL: u})
	}
	scrapeAll(ctx, api, res.Metrics, "before", func(m *InstanceMetrics) *map[string]float64 { return &m.Before })
	specs := make([]connSpec, cfg.Conns)
	for i := range specs {
		u, err := streamURL(cfg.URLs[i%len(cfg.URLs)])
		if err != nil {
			return res, err
		}
		specs[i] = connSpec{Index: i, URL: u, Token: users[cfg.Authors+i].Token}
		if len(cfg.SourceIPs) > 0 {
			specs[i].Source = cfg.SourceIPs[i%len(cfg.SourceIPs)].String()
		}
	}
	col := newCollector(cfg.Conns)
	workers := cfg.workerCount()
	res.Client.Workers = workers
	deadline, _ := ctx.Deadline()
	opts := shardOptions{RunID: res.RunID, DialConcurrency: cfg.DialConcurrency, DialTimeout: cfg.DialTimeout, Lifetime: time.Until(deadline), SSE: cfg.SSE}
	log.Info("connecting", "conns", cfg.Conns, "workers", workers, "urls", len(cfg.URLs), "source_ips", len(cfg.SourceIPs))
	hs, err := connectAll(ctx, workers, exe, specs, opts, col, res, log, stderr)
	if err != nil {
		return res, err
	}
	defer func() { _ = hs.stop(15 * time.Second) }() // at once after the stop below: stop is idempotent

	if err := sleep(ctx, cfg.Hold); err != nil {
		return res, err
	}
	idleHeld := col.heldAt(monoNow())
	res.Conns.HeldIdle = idleHeld
	for i := range res.Memory {
		if res.Memory[i].IdleKiB, err = readRSS(res.Memory[i].PID); err != nil {
			return res, err
		}
	}

	if cfg.WarmAuthors {
		// Before the idle figures, from which the run's are counted.
		if err := warmAuthors(ctx, api, cfg.URLs, users[:cfg.Authors], log); err != nil {
			return res, err
		}
		res.WarmAuthors = true
	}
	scrapeAll(ctx, api, res.Metrics, "idle", func(m *InstanceMetrics) *map[string]float64 { return &m.Idle })
	res.MetricsPerConn = perConn(res.Metrics, idleHeld)
	redisCPUBefore := floor.cpu(ctx)

	// Posts, then a grace period for the last deliveries.
	post := apiPoster(api, &cfg, users[:cfg.Authors], res.RunID)
	if cfg.Floor {
		// Again with the streams open: an instance that joined presence's
		// set since must read the frames channel too.
		if err := floor.checkBatch(ctx); err != nil {
			return res, err
		}
		if err := floor.reserveIDs(ctx, cfg.postCount()); err != nil {
			return res, err
		}
		post = floor.poster(users[:cfg.Authors], g, users[cfg.Authors:], res.RunID)
	}
	posts, sched := runPosts(ctx, &cfg, cfg.Authors, post, log)
	graceEnd := time.Now().Add(cfg.Grace)
	for time.Now().Before(graceEnd) && ctx.Err() == nil {
		if col.missing(posts, g) == 0 {
			break
		}
		_ = sleep(ctx, 100*time.Millisecond)
	}
	res.Conns.HeldAtEnd = col.heldAt(monoNow())
	redisCPUAfter := floor.cpu(ctx)
	for i := range res.Memory {
		if res.Memory[i].AfterKiB, err = readRSS(res.Memory[i].PID); err != nil {
			return res, err
		}
	}
	scrapeAll(ctx, api, res.Metrics, "after", func(m *InstanceMetrics) *map[string]float64 { return &m.After })
	stopErr := hs.stop(30 * time.Second)
	fill(res, col, posts, sched, g, idleHeld)
	if cfg.Floor {
		res.Posts.Publishes, res.Posts.Subscribers = floor.publishes.Load(), floor.subscribers.Load()
		res.Posts.FramesMessages = floor.messages.Load()
	}
	res.CPU = cpuFigures(res.Metrics, redisCPUBefore, redisCPUAfter, res.Deliveries.Delivered)
	if c := res.CPU; c != nil && c.ServerNotMeasured != "" {
		log.Warn("server CPU per delivery not measured", "why", c.ServerNotMeasured)
	}
	res.PostsOnServer = postsOnServer(res.Metrics)
	res.Metrics = answered(res.Metrics)
	return res, shardsDone(hs, col, stopErr)
}

// connectAll starts the holders of specs and waits until every shard has
// dialled, adding what they report to res. On failure it stops the holders
// it started.
func connectAll(ctx context.Context, workers int, exe string, specs []connSpec, opts shardOptions, col *collector, res *Result, log *slog.Logger, stderr io.Writer) (*holders, error) {
	hs, err := startHolders(ctx, workers, exe, specs, opts, col, stderr)
	if err != nil {
		return nil, err
	}
	if err := awaitShards(ctx, hs, col, func(dialed, _ int) bool { return dialed == hs.count }); err != nil {
		_ = hs.stop(15 * time.Second)
		return nil, fmt.Errorf("connecting: %w", err)
	}
	addDialed(res, col)
	log.Info("connected", "held", res.Conns.Held, "failed", res.Conns.Failed, "seconds", res.Conns.ConnectSeconds)
	return hs, nil
}

// shardsDone reports, once the holders are stopped (with stopErr), whether
// any worker failed or a shard's final report is missing.
func shardsDone(hs *holders, col *collector, stopErr error) error {
	if stopErr != nil {
		return stopErr
	}
	select {
	case err := <-hs.errs:
		return err
	default:
	}
	if _, finals := col.counts(); finals != hs.count {
		return fmt.Errorf("%d of %d shards sent their final report", finals, hs.count)
	}
	return nil
}

// setupUsers makes sure the deployment has need users, signing up those the
// users file lacks, and that the follows among them are those edges gives,
// and keeps the file up to date. It returns the first need users.
func setupUsers(ctx context.Context, api *apiClient, cfg *config, res *Result, need int, edges func([]benchUser) []edge, log *slog.Logger) ([]benchUser, error) {
	store, err := loadUsers(cfg.UsersFile)
	if err != nil {
		return nil, err
	}
	res.Users.Total, res.Users.Reused = need, min(len(store.Users), need)
	t := time.Now()
	signedUp, err := ensureUsers(ctx, api, cfg, store, need, log)
	res.Users.SignedUp, res.Users.SignupSeconds = signedUp, time.Since(t).Seconds()
	if signedUp > 0 {
		if serr := saveUsers(cfg.UsersFile, store); serr != nil {
			return nil, errors.Join(err, serr)
		}
	}
	if err != nil {
		return nil, err
	}
	users := store.Users[:need]
	added, removed, err := syncFollows(ctx, api, cfg, store, edges(users), log)
	res.Users.FollowsAdded, res.Users.FollowsRemoved = added, removed
	if added+removed > 0 {
		if serr := saveUsers(cfg.UsersFile, store); serr != nil {
			return nil, errors.Join(err, serr)
		}
	}
	if err != nil {
		return nil, err
	}
	return users, nil
}

// addDialed adds the shards' "dialed" reports to the result.
func addDialed(res *Result, col *collector) {
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, d := range col.dialed {
		res.Conns.Attempted += d.Attempted
		res.Conns.Held += d.Held
		res.Conns.Failed += d.Failed
		res.Conns.ConnectSeconds = max(res.Conns.ConnectSeconds, d.Seconds)
		for k, v := range d.Reasons {
			if res.Conns.FailReasons == nil {
				res.Conns.FailReasons = map[string]int{}
			}
			res.Conns.FailReasons[k] += v
		}
	}
}

// awaitShards waits until done says the shards' reports are in, a worker
// fails, or ctx ends.
func awaitShards(ctx context.Context, hs *holders, col *collector, done func(dialed, finals int) bool) error {
	for {
		if done(col.counts()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-hs.errs:
			return err
		case <-col.notify:
		}
	}
}

// fill completes the result from the collector and the posts.
func fill(res *Result, col *collector, posts []postRecord, sched postSchedule, g graph, idleHeld int) {
	o := col.outcome(posts, g)
	res.Deliveries.Expected, res.Deliveries.Delivered, res.Deliveries.Lost = o.Expected, o.Delivered, o.Lost
	res.Deliveries.LostOnClosed, res.Deliveries.Early, res.Deliveries.Unexpected = o.LostOnClosed, o.Early, o.Unexpected
	res.Posts.LostExamples = o.LostExamples
	res.Latency = summarize(o.Latencies)
	res.LatencyFromDue = summarize(o.LatenciesFromDue)

	col.mu.Lock()
	res.Deliveries.Duplicated, res.Deliveries.Foreign = col.dupes, col.foreign
	col.mu.Unlock()
	addShardTotals(res, col)

	res.Posts.Planned = len(posts)
	for _, p := range posts {
		switch {
		case p.Sent == 0:
		case p.Err != nil:
			res.Posts.Sent++
			res.Posts.Failed++
			if res.Posts.FirstError == "" {
				res.Posts.FirstError = p.Err.Error()
			}
		default:
			res.Posts.Sent++
		}
	}
	res.Posts.Seconds = sched.Seconds
	if sched.Seconds > 0 {
		res.Posts.AchievedRate = float64(res.Posts.Sent) / sched.Seconds
	}
	res.Posts.MaxLagMS = float64(sched.MaxLag) / 1e6
	res.Posts.AnswerLatency = summarize(sched.Answered)
	res.Posts.AnswerFromDue = summarize(sched.AnsweredFromDue)

	var grown int64
	for _, m := range res.Memory {
		grown += m.IdleKiB - m.BeforeKiB
	}
	if len(res.Memory) > 0 && idleHeld > 0 {
		res.MemoryPerConnKiB = float64(grown) / float64(idleHeld)
	}
}

// addShardTotals adds what the shards counted to the result: connections
// dropped, frames by type, heartbeats, and the memory of the processes.
func addShardTotals(res *Result, col *collector) {
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, at := range col.closedAt {
		if at != 0 {
			res.Conns.Dropped++
		}
	}
	if len(col.closedBy) > 0 {
		res.Conns.DropReasons = col.closedBy
	}
	res.Frames.ByType = map[string]int64{}
	for _, f := range col.finals {
		for k, v := range f.Frames {
			res.Frames.ByType[k] += v
			res.Frames.Total += v
		}
		res.Frames.HeartbeatsSent += f.Heartbeats
		res.Frames.HeartbeatErrors += f.HeartbeatErrors
		res.Client.RSSKiB = append(res.Client.RSSKiB, f.RSSKiB)
	}
}

// sleep waits d, or less if ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
