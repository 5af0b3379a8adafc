package realtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"chorus/presence"
)

// beatTimeout bounds one flush of the connections' activity.
const beatTimeout = 5 * time.Second

// beats gathers the activity of the hub's connections and writes it to
// presence in one script call per tick (presence.Heartbeats), instead of one
// per connection: Redis does a fraction of the work per heartbeat, and the
// hub one round trip per tick. The same call renews the instance's lease, on
// which its connections live in Redis. Coming online and going offline do not wait
// for a tick: Connect and Disconnect stay immediate.
type beats struct {
	mu      sync.Mutex
	pending map[*conn]struct{}
	// flushing is held while a flush writes, so that a connection leaving
	// can wait until no beat of its own is being written: a beat written
	// after its Disconnect would register it again. Registering all the
	// instance's connections again after a lost lease is not done under it:
	// presence runs that beside the flush (Heartbeats does not wait for
	// it), so no stream closing waits for it.
	flushing sync.Mutex
}

// add queues c's activity for the next flush.
func (b *beats) add(c *conn) {
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[*conn]struct{}{}
	}
	b.pending[c] = struct{}{}
	b.mu.Unlock()
}

// settle waits until no flush that may hold a beat of c is writing; c must
// be closed already, so that later flushes leave it out.
func (b *beats) settle() {
	b.flushing.Lock()
	//lint:ignore SA2001 an empty critical section is the barrier: it waits out the flush holding the lock
	b.flushing.Unlock()
}

// flushBeats writes every beat queued since the last flush, every tick, until
// ctx ends.
func (h *Hub) flushBeats(ctx context.Context) {
	defer h.routerWG.Done()
	tick := time.NewTicker(h.opts.BeatFlushInterval)
	defer tick.Stop()
	var list []presence.Beat
	var conns []*conn // list's
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b := &h.beats
		b.flushing.Lock()
		b.mu.Lock()
		list, conns = list[:0], conns[:0]
		for c := range b.pending {
			if !c.isClosed() {
				list = append(list, presence.Beat{UID: c.uid, ConnID: c.id})
				conns = append(conns, c)
			}
		}
		clear(b.pending)
		b.mu.Unlock()
		// Every tick, beats or not: the call renews this instance's lease,
		// which keeps its connections alive in Redis.
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, beatTimeout)
		err := h.presence.Heartbeats(wctx, list)
		cancel()
		took := time.Since(start)
		h.Stats.BeatFlushTime.Add(int64(took))
		if len(list) > 0 {
			h.Stats.BeatFlushes.Add(1)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			// Carried by the next flush: a connection beats once an
			// interval, and two beats dropped in a row would age its user
			// out of the online copy while connected. But for a beat
			// presence refuses as malformed, which would fail every flush
			// after, and with them the instance's lease.
			if !errors.Is(err, presence.ErrInvalid) {
				for _, c := range conns {
					b.add(c)
				}
			}
			h.log.Warn("heartbeats not recorded; the next flush carries them", "connections", len(list), "err", err)
		case err == nil && took > h.opts.BeatFlushInterval:
			// The ticks missed meanwhile are dropped: the next flush
			// carries their beats, later than their connections' schedule.
			h.log.Warn("presence flush took longer than its tick; this instance's presence writes fall behind",
				"connections", len(list), "took", took, "tick", h.opts.BeatFlushInterval)
		}
		clear(conns) // no closed stream kept reachable till the next flush
		b.flushing.Unlock()
	}
}
