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
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// floorBaseID is the status id of a floor run's first post. Real ids count
// up from 1, so the made-up ones never meet one, and each is new to every
// stream's once-per-id memory.
const floorBaseID = 1 << 40

// floorTarget is the deployment's Redis: a floor run publishes on it
// directly, and any run given -redis-url reads its CPU.
type floorTarget struct {
	rdb *redis.Client
	bus *bus.Bus

	publishes   atomic.Int64 // PUBLISH commands sent
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
	return &floorTarget{rdb: rdb, bus: bus.New(rdb, cfg.KeyPrefix)}, nil
}

func (f *floorTarget) close() { _ = f.rdb.Close() }

// poster makes each post one pipeline of PUBLISH commands, a status frame
// shaped as the server's on the channel of each follower of its author,
// with a made-up id and no write to the deployment's data. The answer is
// the pipeline's reply.
func (f *floorTarget) poster(authors []benchUser, g graph, followers []benchUser, runID string) poster {
	return func(ctx context.Context, k, a int) (int64, error) {
		id := int64(floorBaseID + k)
		frame, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: protocol.Status{
			ID: id, UID: authors[a].ID, Login: authors[a].Login, Message: marker(runID, k),
			Posted: time.Now().UTC().Truncate(time.Millisecond), Mentions: []protocol.Mention{},
		}})
		if err != nil {
			return 0, fmt.Errorf("floor frame: %w", err)
		}
		fs := g.followers[a]
		cmds := make([]*redis.IntCmd, len(fs))
		pipe := f.rdb.Pipeline()
		for i, conn := range fs {
			cmds[i] = f.bus.Queue(ctx, pipe, f.bus.UserChannel(followers[conn].ID), frame)
		}
		_, err = pipe.Exec(ctx)
		f.publishes.Add(int64(len(fs)))
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
