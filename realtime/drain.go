package realtime

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"chorus/protocol"
)

// A drain is how an instance leaves without a reconnect storm: it takes no
// new stream, and closes its streams one by one spread over a window, each
// told first (a reconnect frame, then close code 1001, reason "server
// draining: reconnect") to reconnect at once, which the load balancer sends
// to another instance. Their presence is left
// to the instance's lease, as at Shutdown: a user back on another instance
// before the lease runs out is never shown offline, and what was sent while
// they moved reaches them by resume.

// DefaultDrainWindow is the drain window cmd/chorus takes by default: at
// 50,000 streams an instance, about 1,700 reconnects a second for the
// others to take.
const DefaultDrainWindow = 30 * time.Second

const (
	// drainMaxGap is the longest a drain waits between two closes, so that
	// an instance with few streams is done well before its window: it
	// closes at least 10 streams a second.
	drainMaxGap = 100 * time.Millisecond
	// drainTick is the shortest wait a drain sleeps; closes due sooner go
	// together.
	drainTick = 10 * time.Millisecond
)

// Draining reports whether the hub takes no new stream: a drain or a
// shutdown began.
func (h *Hub) Draining() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closing
}

// Drain stops taking streams (Serve refuses them with ErrShuttingDown) and
// closes the open ones spread evenly over window, at least one every
// drainMaxGap, each sent a reconnect frame that says to reconnect at once,
// then closed with 1001 (ReasonDraining). It returns once every stream has
// closed, or when ctx ends: the streams not closed yet are then closed at once, told to
// reconnect within what was left of the window, so that they spread their
// reconnects themselves. Shutdown follows it.
func (h *Hub) Drain(ctx context.Context, window time.Duration) error {
	all := h.stopTaking()
	var sending sync.WaitGroup // the reconnect frames under way
	defer sending.Wait()
	gap := drainMaxGap
	if len(all) > 0 {
		gap = min(window/time.Duration(len(all)), drainMaxGap)
	}
	start := time.Now()
	now := reconnectFrame(0)
	for i, c := range all {
		wait := time.Until(start.Add(time.Duration(i) * gap))
		if wait < drainTick {
			h.drainOne(c, now, &sending)
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			h.drainOne(c, now, &sending)
		case <-ctx.Done():
			t.Stop()
			later := reconnectFrame(max(window-time.Since(start), 0))
			for _, c := range all[i:] {
				h.drainOne(c, later, &sending)
			}
			return ctx.Err()
		}
	}
	return h.waitConns(ctx)
}

// drainOne sends c its reconnect frame, then closes it with 1001, without
// waiting: a slow client's write takes up to WriteTimeout, which sending
// tracks. What c's queue still held is left for the client's resume. A
// stream not upgraded yet is closed by attach, with 1001 and no frame.
func (h *Hub) drainOne(c *conn, frame []byte, sending *sync.WaitGroup) {
	c.shuttingDown.Store(true) // its presence is left to the lease
	c.mu.Lock()
	upgraded := c.ws != nil
	c.mu.Unlock()
	if !upgraded || c.isClosed() {
		c.closeSoon(closeDrain)
		return
	}
	sending.Go(func() {
		// Writes on one WebSocket are serialized: this goes beside the
		// queue's writer, whole.
		c.send(frame, 0)
		c.closeSoon(closeDrain)
	})
}

// reconnectFrame tells a client to reconnect within d (0: at once).
func reconnectFrame(d time.Duration) []byte {
	b, _ := json.Marshal(protocol.Reconnect{Type: protocol.TypeReconnect, WithinMS: d.Milliseconds()})
	return b
}
