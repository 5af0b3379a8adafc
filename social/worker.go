package social

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// jobGroup is the consumer group every instance's worker reads jobs through.
const jobGroup = "fanout"

// consumerReapEvery is how often, at most, a worker removes the consumers
// of dead instances from the job group.
const consumerReapEvery = time.Minute

var (
	//go:embed reap_consumers.lua
	reapSource string
	reapScript = newScript(reapSource)

	//go:embed keep_job.lua
	keepSource string
	keepScript = newScript(keepSource)
)

// notReadyWait is how long a worker waits before it looks again at a job
// whose maker is still writing.
const notReadyWait = 20 * time.Millisecond

// sleepCtx sleeps for d, or until ctx ends; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Worker runs fan-out jobs from the job stream until its context ends. Every
// instance runs one; a job whose worker stops (or dies) part way is taken
// over by another worker once it has been idle for JobClaimIdle.
type Worker struct {
	s        *Service
	consumer string
	log      *slog.Logger

	// afterPass, when set, runs after every pass that did not finish a job;
	// tests use it to stop a worker part way.
	afterPass func()

	lastReap  time.Time // when this worker last removed dead consumers
	lastAdopt time.Time // when this worker last adopted jobs of dead makers

	keptAt time.Time // when the worker last claimed the entry it runs (keep)
}

// NewWorker returns a worker reading as consumer, a name unique to the
// instance.
func (s *Service) NewWorker(consumer string, log *slog.Logger) *Worker {
	return &Worker{s: s, consumer: consumer, log: log}
}

// Run works until ctx ends. A failing round is logged and retried, backing
// off up to five seconds.
func (w *Worker) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	needGroup := true
	for ctx.Err() == nil {
		var err error
		if needGroup {
			err = w.createGroup(ctx)
			needGroup = err != nil
		}
		if err == nil {
			err = w.round(ctx)
			// The stream (and its group) goes when someone deletes it.
			needGroup = redis.HasErrorPrefix(err, "NOGROUP")
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			continue
		}
		if ctx.Err() != nil {
			break
		}
		w.log.Warn("fan-out worker", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// createGroup makes the job stream's consumer group, unless it exists.
func (w *Worker) createGroup(ctx context.Context) error {
	s := w.s
	exists, err := s.rdb.Exists(ctx, s.keys.jobs()).Result()
	if err == nil && exists == 1 {
		groups, gerr := s.rdb.XInfoGroups(ctx, s.keys.jobs()).Result()
		if gerr == nil && slices.ContainsFunc(groups, func(g redis.XInfoGroup) bool { return g.Name == jobGroup }) {
			return nil
		}
	}
	err = s.rdb.XGroupCreateMkStream(ctx, s.keys.jobs(), jobGroup, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("create job group: %w", err)
	}
	return nil
}

// round takes over a job left idle by another worker, or else waits
// briefly for a new one, and runs what it got. A worker takes one job at a
// time: those queued behind it wait for the first worker free, not for
// this one.
func (w *Worker) round(ctx context.Context) error {
	s := w.s
	stream := s.keys.jobs()
	w.reapConsumers(ctx)
	w.adoptJobs(ctx)
	claimed, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: stream, Group: jobGroup, Consumer: w.consumer,
		MinIdle: s.opts.JobClaimIdle, Start: "0-0", Count: 1,
	}).Result()
	if err != nil {
		return fmt.Errorf("claim idle jobs: %w", err)
	}
	if len(claimed) > 0 {
		m := claimed[0]
		w.log.Info("took over an idle fan-out job", "entry", m.ID, "job", m.Values["job"])
		return w.run(ctx, m) // the next round looks for another at once
	}
	streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: jobGroup, Consumer: w.consumer, Streams: []string{stream, ">"},
		Count: 1, Block: min(time.Second, s.opts.JobClaimIdle/2),
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	for _, st := range streams {
		for _, m := range st.Messages {
			if err := w.run(ctx, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// keep claims again the entry of the job this worker runs (keep_job.lua),
// once a sixth of JobClaimIdle has gone since it last did: between passes,
// and while the job waits for its maker, so that no other worker takes
// over a job that moves or waits and redoes beside this one what its
// maker left (see makerDone). A pass may run for the rest of JobClaimIdle
// before another worker takes its job over. It reports whether the entry
// is still this worker's: one taken over meanwhile, this worker having
// stalled, or finished by another, is left alone.
func (w *Worker) keep(ctx context.Context, entry string) (bool, error) {
	if time.Since(w.keptAt) < w.s.opts.JobClaimIdle/6 {
		return true, nil
	}
	w.keptAt = time.Now()
	held, err := keepScript.Run(ctx, w.s.rdb, []string{w.s.keys.jobs()}, jobGroup, w.consumer, entry).Int()
	if err != nil {
		return false, fmt.Errorf("keep job entry %s: %w", entry, err)
	}
	if held == 0 {
		w.log.Warn("fan-out job no longer this worker's: taken over, or finished by another", "entry", entry)
	}
	return held == 1, nil
}

// adoptJobs gives the jobs of makers taken for dead a stream entry (see
// Service.adoptJobs), at most once every sixth of JobClaimIdle, or again
// at once after a whole batch; the next rounds read them. A failure is
// only logged; the next round tries again.
func (w *Worker) adoptJobs(ctx context.Context) {
	if time.Since(w.lastAdopt) < w.s.opts.JobClaimIdle/6 {
		return
	}
	w.lastAdopt = time.Now()
	n, full, err := w.s.adoptJobs(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("adopt fan-out jobs of dead makers", "err", err)
	case n > 0:
		w.log.Info("adopted fan-out jobs whose makers did not finish them", "jobs", n)
	}
	if full && err == nil {
		w.lastAdopt = time.Time{}
	}
}

// reapConsumers removes, at most once every consumerReapEvery, the consumers
// of the job group that have nothing pending and have been idle longer than
// ConsumerIdle: each instance that ever ran leaves one behind. A failure is
// only logged; the next try comes a minute later.
func (w *Worker) reapConsumers(ctx context.Context) {
	if !w.lastReap.IsZero() && time.Since(w.lastReap) < consumerReapEvery {
		return
	}
	w.lastReap = time.Now()
	s := w.s
	removed, err := reapScript.Run(ctx, s.rdb, []string{s.keys.jobs()},
		jobGroup, s.opts.ConsumerIdle.Milliseconds(), w.consumer).StringSlice()
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("remove idle fan-out consumers", "err", err)
		}
		return
	}
	if len(removed) > 0 {
		w.log.Info("removed idle fan-out consumers", "consumers", removed)
	}
}

// run carries one job to its end, or returns when ctx ends or its entry is
// no longer this worker's (keep), leaving the job pending for whoever
// claims it next.
func (w *Worker) run(ctx context.Context, m redis.XMessage) error {
	s := w.s
	stream := s.keys.jobs()
	key, _ := m.Values["job"].(string)
	w.keptAt = time.Now() // just read or claimed
	for key != "" {
		res, err := s.pass(ctx, key)
		if err != nil {
			return err
		}
		if res.finished {
			break
		}
		if res.wait {
			if !sleepCtx(ctx, notReadyWait) {
				return nil
			}
			if held, err := w.keep(ctx, m.ID); !held {
				return err
			}
			continue
		}
		if w.afterPass != nil {
			w.afterPass()
		}
		if ctx.Err() != nil {
			return nil
		}
		if held, err := w.keep(ctx, m.ID); !held {
			return err
		}
	}
	// The last pass acknowledges the entry it was queued with; this covers
	// an entry whose job another worker finished, or one with no job.
	pipe := s.rdb.Pipeline()
	pipe.XAck(ctx, stream, jobGroup, m.ID)
	pipe.XDel(ctx, stream, m.ID)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("acknowledge job %s: %w", key, err)
	}
	return nil
}
