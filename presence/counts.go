package presence

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"time"
)

var (
	//go:embed counts.lua
	countsSource string
	countsScript = script(copySource, countsSource)
)

// Counts are the site-wide presence figures.
type Counts struct {
	Online        int64 `json:"online"`          // seen within W and still connected
	ActiveLast10m int64 `json:"active_last_10m"` // active in the last ten minutes (estimated, ±1%)
}

// countsCache holds a Tracker's last site-wide counts. Every open browser
// tab polls them and so does every metrics scrape; through the cache they
// cost Redis one script run per Options.CountsTTL per instance, however
// many ask.
type countsCache struct {
	mu     sync.Mutex
	val    Counts
	at     time.Time     // when the run that gave val began; zero: none yet
	flight *countsFlight // the run under way, if any
}

// countsFlight is one run of the counts script, which the callers that
// come while it runs wait for.
type countsFlight struct {
	done      chan struct{} // closed when val and err are set
	val       Counts
	err       error
	abandoned bool // err is the context of the caller who ran it ending
}

// Counts returns the site-wide presence figures: those of the last script
// run (see counts.lua) when it began less than Options.CountsTTL ago, else
// those of a new run. Callers that come during a run wait for it rather
// than start another.
func (t *Tracker) Counts(ctx context.Context) (Counts, error) {
	if t.opts.CountsTTL < 0 {
		return t.countNow(ctx)
	}
	c := &t.counts
	for {
		c.mu.Lock()
		if !c.at.IsZero() && t.now().Sub(c.at) < t.opts.CountsTTL {
			val := c.val
			c.mu.Unlock()
			return val, nil
		}
		f := c.flight
		if f == nil {
			f = &countsFlight{done: make(chan struct{})}
			c.flight = f
			c.mu.Unlock()
			return t.runCounts(ctx, f)
		}
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return Counts{}, fmt.Errorf("presence counts: %w", ctx.Err())
		}
		if !f.abandoned {
			return f.val, f.err
		}
		// The caller running it went away: run it again for this one.
	}
}

// runCounts runs flight f, which this caller started, and keeps its result
// for the others.
func (t *Tracker) runCounts(ctx context.Context, f *countsFlight) (Counts, error) {
	c := &t.counts
	start := t.now()
	f.val, f.err = t.countNow(ctx)
	f.abandoned = f.err != nil && ctx.Err() != nil
	c.mu.Lock()
	c.flight = nil
	if f.err == nil {
		c.val, c.at = f.val, start
	}
	c.mu.Unlock()
	close(f.done)
	return f.val, f.err
}

// countNow runs the counts script: a ZCOUNT of the shared online copy
// (O(log N), and the copy's trim when due) and a merge of ten HyperLogLogs,
// whatever the population.
func (t *Tracker) countNow(ctx context.Context) (Counts, error) {
	k := t.keys
	var c Counts
	err := t.inMinute(func(minute int64) (int64, bool, error) {
		keys := []string{k.lastSeen(), k.connected(), k.onlineCopy(), k.activeUnion()}
		for i := range int64(activeMinutes) {
			keys = append(keys, k.activeHLL(minute-i))
		}
		res, err := countsScript.Run(ctx, t.rdb, keys, ms(t.opts.Window), ms(t.opts.CopyTTL), minute).Slice()
		if err != nil {
			return 0, false, err
		}
		c = Counts{Online: toInt(res, 1), ActiveLast10m: toInt(res, 2)}
		return toInt(res, 0), c.Online == minuteMoved, nil
	})
	if err != nil {
		return Counts{}, fmt.Errorf("presence counts: %w", err)
	}
	return c, nil
}
