package realtime

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The hub's mark as a reader of the frames channel (bus.FramesReadersKey):
// made once Redis confirms the channel, and again every framesMarkEvery,
// each holding for framesMarkFor, so that a fan-out sends frames for many
// users in one message only while every instance holding streams reads
// them. Marks of instances gone for framesMarkKept are taken out by any
// instance's next mark.
//
// A hub that shut down marks itself for framesMarkDone (markFramesDone).
const (
	framesMarkEvery = 15 * time.Second
	framesMarkFor   = time.Minute
	framesMarkKept  = time.Hour
	framesMarkDone  = 24 * time.Hour
)

// markScript marks instance ARGV[1] in KEYS[1] until now + ARGV[2] ms, by
// Redis's clock (presence's leases' clock), and takes out the marks that
// ran out over ARGV[3] ms ago.
var markScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
`)

// markFramesReader keeps the hub's mark, on one Redis and with an instance
// id, from the frames channel's first confirmation on.
func (h *Hub) markFramesReader(ctx context.Context) {
	defer h.routerWG.Done()
	key := h.bus.FramesReadersKey()
	if key == "" || h.opts.Instance == "" {
		return
	}
	var tick <-chan time.Time // none until the channel is live
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.framesLive:
			if tick == nil {
				t := time.NewTicker(framesMarkEvery)
				defer t.Stop()
				tick = t.C
			}
		case <-tick:
		}
		if err := h.markFrames(ctx, key, framesMarkFor); err != nil && ctx.Err() == nil {
			h.log.Warn("marking this instance a reader of the frames channel failed; fan-outs send its users' frames one by one meanwhile", "err", err)
		}
	}
}

// framesDoneWait bounds markFramesDone: the end of a shutdown, which a
// Redis that does not answer must not hold for long.
const framesDoneWait = time.Second

// markFramesDone marks the hub's instance for framesMarkDone, once it has
// stopped reading (Shutdown): no frame can reach its streams any more, on
// the frames channel or on users' channels, so none is lost to it whichever
// way it goes. Its lease stays in presence's set until a sweep takes it out,
// up to the online window and a sweep later (its streams' presence is left
// to the lease); marked done, it no longer makes fan-outs send frames one
// by one meanwhile. A crashed instance's mark runs out within
// framesMarkFor, and until the sweep they do.
func (h *Hub) markFramesDone(ctx context.Context) {
	key := h.bus.FramesReadersKey()
	if key == "" || h.opts.Instance == "" {
		return
	}
	// Not bound by ctx, which may have ended waiting for the streams: a
	// Redis that answers marks it at once, and one that does not holds
	// the shutdown framesDoneWait at most.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), framesDoneWait)
	defer cancel()
	if err := h.markFrames(ctx, key, framesMarkDone); err != nil {
		h.log.Warn("marking this instance done with the frames channel failed; fan-outs send frames one by one until its lease is swept", "err", err)
	}
}

// markFrames marks the hub's instance in key (bus.FramesReadersKey) for
// hold from now, by Redis's clock, within framesMarkEvery.
func (h *Hub) markFrames(ctx context.Context, key string, hold time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, framesMarkEvery)
	defer cancel()
	return markScript.Run(ctx, h.rdb, []string{key}, h.opts.Instance,
		hold.Milliseconds(), framesMarkKept.Milliseconds()).Err()
}
