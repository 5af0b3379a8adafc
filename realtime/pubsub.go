package realtime

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// pubSub is the hub's side of Redis pub/sub: the subscriber changes its
// channels, the router reads what comes. On one Redis it is one PubSub
// (singlePubSub); on a cluster, sharded pub/sub with a connection per master
// (shardedPubSub).
type pubSub interface {
	// Subscribe and Unsubscribe send Redis the commands for a batch of
	// channels, counting them in Stats.SubscribeCommands. Redis's
	// confirmations come through Incoming. A command that fails is sent
	// again when the connection is made again.
	Subscribe(ctx context.Context, channels ...string) error
	Unsubscribe(ctx context.Context, channels ...string) error
	// Incoming yields every *redis.Message, every subscribe confirmation
	// (a *redis.Subscription of kind "subscribe" or "ssubscribe") and, on a
	// cluster, lostChannels.
	Incoming() <-chan any
	// Close stops it and waits for its goroutines.
	Close() error
}

// lostChannels are channels whose subscription a cluster lost (a
// connection to a master broke, or their slot moved to another master):
// nothing comes through them until Redis confirms each one again.
type lostChannels []string

// incomingBuffer is how many messages wait for the router.
const incomingBuffer = 4096

// singlePubSub is pub/sub on one Redis: one connection, which go-redis
// makes again, subscribed to every channel, when it is lost.
type singlePubSub struct {
	ps       *redis.PubSub
	in       <-chan any
	commands *atomic.Int64
}

var (
	_ pubSub = (*singlePubSub)(nil)
	_ pubSub = (*shardedPubSub)(nil)
)

func newSinglePubSub(ctx context.Context, rdb redis.UniversalClient, commands *atomic.Int64) *singlePubSub {
	ps := rdb.Subscribe(ctx)
	return &singlePubSub{ps: ps, in: ps.ChannelWithSubscriptions(redis.WithChannelSize(incomingBuffer)), commands: commands}
}

func (p *singlePubSub) Subscribe(ctx context.Context, channels ...string) error {
	p.commands.Add(1)
	return p.ps.Subscribe(ctx, channels...)
}

func (p *singlePubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	p.commands.Add(1)
	return p.ps.Unsubscribe(ctx, channels...)
}

func (p *singlePubSub) Incoming() <-chan any { return p.in }

func (p *singlePubSub) Close() error { return p.ps.Close() }

// publish sends payload to the subscribers of channel on every instance:
// PUBLISH on one Redis, SPUBLISH on a cluster, where c (the client, or a
// pipeline of it) sends it to the master of the channel's slot.
func (h *Hub) publish(ctx context.Context, c redis.Cmdable, channel string, payload []byte) *redis.IntCmd {
	if h.cluster {
		return c.SPublish(ctx, channel, payload)
	}
	return c.Publish(ctx, channel, payload)
}
