package realtime

import (
	"context"
	"time"
)

// Defaults of the Redis health watch.
const (
	DefaultHealthInterval = 5 * time.Second
	healthTimeout         = 2 * time.Second
)

// watchRedis pings Redis every HealthInterval, one PING per instance
// whatever the number of streams, and tells every local stream when the
// answer changes: a socket can stay open while its server cannot serve.
func (h *Hub) watchRedis(ctx context.Context) {
	defer h.routerWG.Done()
	tick := time.NewTicker(h.opts.HealthInterval)
	defer tick.Stop()
	available := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, min(healthTimeout, h.opts.HealthInterval))
		err := h.rdb.Ping(pctx).Err()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if now := err == nil; now != available {
			available = now
			conns := h.allConns()
			if available {
				h.log.Info("redis answers again; streams told", "streams", len(conns))
			} else {
				h.log.Warn("redis does not answer; streams told", "streams", len(conns), "err", err)
			}
			frame := serviceFrameJSON(available)
			for _, c := range conns {
				c.enqueue(outgoing{frame: frame})
			}
		}
	}
}
