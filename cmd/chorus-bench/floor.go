package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"chorus/bus"
	"chorus/presence"
	"chorus/protocol"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

// floorTarget is the deployment's Redis: a floor run publishes on it
// directly, and any run given -redis-url reads its CPU.
type floorTarget struct {
	rdb    *redis.Client
	bus    *bus.Bus
	prefix string // the deployment's -key-prefix

	// batch (-floor-frames batch): a post's frames go in one message on
	// the frames channel, as push.lua sends them, when the post has as
	// many followers as readers, the instances that read that channel.
	batch   bool
	readers int64
	// firstID is the status id of the run's first post (reserveIDs).
	firstID int64

	publishes   atomic.Int64 // PUBLISH commands sent
	messages    atomic.Int64 // of them, messages on the frames channel
	subscribers atomic.Int64 // their replies summed: the instances that got each
}

// parseFloorRedis reads -redis-url for a floor run. Only one Redis is
// supported: a cluster's streams would need SPUBLISH through a cluster
// client, which the bus does, but which this tool does not set up.
func parseFloorRedis(raw string) (*redis.Options, error) {
	if scheme, _, _ := strings.Cut(raw, "://"); strings.HasSuffix(scheme, "+cluster") {
		return nil, usagef("-redis-url: a Redis Cluster is not supported by -floor, only one Redis (redis:// or rediss://)")
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, usagef("-redis-url: %v", err)
	}
	return opt, nil
}

// openFloor connects to the deployment's Redis and checks that it answers.
func openFloor(ctx context.Context, cfg *config) (*floorTarget, error) {
	opt, err := parseFloorRedis(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	opt.PoolSize = max(opt.PoolSize, min(cfg.MaxInFlight, 64))
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("floor: redis at %s: %w", opt.Addr, err)
	}
	f := &floorTarget{rdb: rdb, bus: bus.New(rdb, cfg.KeyPrefix), prefix: cfg.KeyPrefix, batch: cfg.Floor && cfg.FloorFrames == floorBatch}
	if err := f.checkBatch(pctx); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return f, nil
}

// Values of -floor-frames.
const (
	floorChannel = "channel" // one PUBLISH a follower, on their channel
	floorBatch   = "batch"   // one message a post on the frames channel, as push.lua
)

// checkBatch checks, for -floor-frames batch, that the deployment's
// instances read the frames channel as push.lua requires before it sends
// a frame for many users there: some instance subscribes to it, and every
// instance in presence's set (those holding streams) is marked in its
// readers' set, its mark not run out by Redis's clock (an instance of a
// build before the channel reads only its users' channels, and would miss
// the frames). It notes how many read it. Nothing to check otherwise.
func (f *floorTarget) checkBatch(ctx context.Context) error {
	if !f.batch {
		return nil
	}
	channel := f.bus.FramesChannel()
	subs, err := f.rdb.PubSubNumSub(ctx, channel).Result()
	if err != nil {
		return fmt.Errorf("floor: readers of %s: %w", channel, err)
	}
	if subs[channel] == 0 {
		return fmt.Errorf("-floor-frames batch: no instance reads the frames channel %s (is -key-prefix the deployment's? a build before the channel reads only users' channels: use -floor-frames channel)", channel)
	}
	holders, err := f.rdb.ZRange(ctx, presence.InstancesKey(f.prefix, false), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("floor: instances: %w", err)
	}
	if len(holders) > 0 {
		now, err := f.rdb.Time(ctx).Result()
		if err != nil {
			return fmt.Errorf("floor: redis time: %w", err)
		}
		marks, err := f.rdb.ZMScore(ctx, f.bus.FramesReadersKey(), holders...).Result()
		if err != nil {
			return fmt.Errorf("floor: readers' marks: %w", err)
		}
		for i, m := range marks {
			if m < float64(now.UnixMilli()) { // 0: not marked
				return fmt.Errorf("-floor-frames batch: instance %s holds streams but is not marked as reading the frames channel "+
					"(a build before the channel?): the server itself would send each frame on its user's channel; use -floor-frames channel", holders[i])
			}
		}
	}
	f.readers = subs[channel]
	return nil
}

// reserveIDs takes n status ids from the deployment's counter for the
// floor's made-up statuses, as n posts would. Their frames raise each
// instance's mark of the greatest status id given, which a stream opening
// while Redis cannot tell the last id takes as its catch-up floor; ids
// above the counter would leave the mark over every status posted until
// the counter got there. Reserved, they are also never a real status's,
// so no stream's once-per-id memory takes one for the other.
func (f *floorTarget) reserveIDs(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	last, err := f.rdb.IncrBy(ctx, social.StatusSeqKey(f.prefix), int64(n)).Result()
	if err != nil {
		return fmt.Errorf("floor: reserve %d status ids: %w", n, err)
	}
	f.firstID = last - int64(n) + 1
	return nil
}

func (f *floorTarget) close() { _ = f.rdb.Close() }

// poster makes each post one pipeline of PUBLISH commands, a status frame
// shaped as the server's on the channel of each follower of its author,
// or (batch) one message for them all on the frames channel, with an id
// reserved (reserveIDs) and no other write to the deployment's data. The
// answer is the pipeline's reply.
func (f *floorTarget) poster(authors []benchUser, g graph, followers []benchUser, runID string) poster {
	return func(ctx context.Context, k, a int) (int64, error) {
		id := f.firstID + int64(k)
		frame, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: protocol.Status{
			ID: id, UID: authors[a].ID, Login: authors[a].Login, Message: marker(runID, k),
			Posted: time.Now().UTC().Truncate(time.Millisecond), Mentions: []protocol.Mention{},
		}})
		if err != nil {
			return 0, fmt.Errorf("floor frame: %w", err)
		}
		fs := g.followers[a]
		var cmds []*redis.IntCmd
		pipe := f.rdb.Pipeline()
		if f.batch && int64(len(fs)) >= f.readers {
			// push.lua's message: the users' ids, a space between two, a
			// newline, the frame.
			msg := make([]byte, 0, len(fs)*8+len(frame))
			for i, conn := range fs {
				if i > 0 {
					msg = append(msg, ' ')
				}
				msg = strconv.AppendInt(msg, followers[conn].ID, 10)
			}
			msg = append(append(msg, '\n'), frame...)
			cmds = append(cmds, pipe.Publish(ctx, f.bus.FramesChannel(), msg))
			f.messages.Add(1)
		} else {
			for _, conn := range fs {
				cmds = append(cmds, f.bus.Queue(ctx, pipe, f.bus.UserChannel(followers[conn].ID), frame))
			}
		}
		_, err = pipe.Exec(ctx)
		f.publishes.Add(int64(len(cmds)))
		for _, c := range cmds {
			f.subscribers.Add(c.Val())
		}
		if err != nil {
			return id, fmt.Errorf("floor publish of post %d: %w", k, err)
		}
		return id, nil
	}
}

// cpu is the CPU seconds Redis has used, system and user, from INFO cpu;
// -1 when f is nil or Redis does not tell.
func (f *floorTarget) cpu(ctx context.Context) float64 {
	if f == nil {
		return -1
	}
	info, err := f.rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return -1
	}
	var sum float64
	found := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return -1
		}
		sum += x
		found++
	}
	if found != 2 {
		return -1
	}
	return sum
}

// cpuFigures takes the instances' CPU from idle to after the posts and
// Redis's from before to after (-1: unknown) over delivered frames; nil
// when neither is known. The instances' is the sum over every instance of
// the run (ms): when some told their CPU at both moments and others did
// not, a sum over part of the deployment would pass for the whole, so it
// is not measured, and ServerNotMeasured names those that did not tell.
func cpuFigures(ms []InstanceMetrics, redisBefore, redisAfter float64, delivered int) *CPUFigures {
	c := &CPUFigures{ServerSeconds: -1, RedisSeconds: -1, ServerPerDelivery: -1, RedisPerDelivery: -1}
	var sum float64
	var missing []string
	for _, m := range ms {
		a, okA := m.After["process_cpu_seconds_total"]
		b, okB := m.Idle["process_cpu_seconds_total"]
		if okA && okB {
			sum += a - b
			continue
		}
		why := "no process_cpu_seconds_total"
		for _, at := range []struct{ moment, when string }{{"idle", "before"}, {"after", "after"}} {
			if e := m.Errors[at.moment]; e != "" {
				why = "/metrics " + at.when + " the posts: " + e
				break
			}
		}
		missing = append(missing, m.URL+" ("+why+")")
	}
	switch {
	case len(ms) > 0 && len(missing) == 0:
		c.ServerSeconds = sum
	case len(missing) < len(ms):
		c.ServerNotMeasured = fmt.Sprintf("%d of %d instances did not tell their CPU: %s", len(missing), len(ms), strings.Join(missing, "; "))
	}
	if redisBefore >= 0 && redisAfter >= 0 {
		c.RedisSeconds = redisAfter - redisBefore
	}
	if c.ServerSeconds < 0 && c.RedisSeconds < 0 && c.ServerNotMeasured == "" {
		return nil
	}
	if delivered > 0 {
		if c.ServerSeconds >= 0 {
			c.ServerPerDelivery = c.ServerSeconds / float64(delivered) * 1e6
		}
		if c.RedisSeconds >= 0 {
			c.RedisPerDelivery = c.RedisSeconds / float64(delivered) * 1e6
		}
	}
	return c
}
