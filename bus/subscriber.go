package bus

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Subscriber is the receiving side of the bus: its owner changes its
// channels, and reads what comes through Incoming. On one Redis it is one
// PubSub (singlePubSub); on a cluster, sharded pub/sub with a connection per
// master (shardedPubSub).
type Subscriber interface {
	// Subscribe and Unsubscribe send Redis the commands for a batch of
	// channels, counting them in the commands counter given to Subscribe.
	// Redis's confirmations come through Incoming. A command that fails
	// returns an error, but holds all the same once the connection is made
	// again: the subscriber keeps the channels it was asked for, and
	// subscribes them all on each new connection.
	Subscribe(ctx context.Context, channels ...string) error
	Unsubscribe(ctx context.Context, channels ...string) error
	// Incoming yields every *redis.Message, every subscribe confirmation
	// (a *redis.Subscription of kind "subscribe" or "ssubscribe") and, on a
	// cluster, LostChannels.
	Incoming() <-chan any
	// Close stops it and waits for its goroutines.
	Close() error
}

// LostChannels are channels whose subscription a cluster lost (a
// connection to a master broke, or their slot moved to another master):
// nothing comes through them until Redis confirms each one again.
type LostChannels []string

const (
	// SubscribeBatch is the most channels one SUBSCRIBE or UNSUBSCRIBE
	// names (on a cluster, one SSUBSCRIBE of a slot's channels).
	SubscribeBatch = 500
	// incomingBuffer is how many messages wait for the reader of Incoming.
	incomingBuffer = 4096
)

// Subscribe starts the bus's subscriber on b's Redis, subscribed to
// nothing yet; commands counts the subscribe and unsubscribe commands it
// sends. Close stops it.
func (b *Bus) Subscribe(ctx context.Context, commands *atomic.Int64, log *slog.Logger) Subscriber {
	if cc, ok := b.rdb.(*redis.ClusterClient); ok {
		return newShardedPubSub(ctx, cc, commands, log)
	}
	return newSinglePubSub(ctx, b.rdb, commands)
}

// singlePubSub is pub/sub on one Redis: one connection, which go-redis
// makes again, subscribed to every channel, when it is lost.
type singlePubSub struct {
	ps       *redis.PubSub
	in       <-chan any
	commands *atomic.Int64
}

var (
	_ Subscriber = (*singlePubSub)(nil)
	_ Subscriber = (*shardedPubSub)(nil)
)

func newSinglePubSub(ctx context.Context, rdb redis.UniversalClient, commands *atomic.Int64) *singlePubSub {
	ps := rdb.Subscribe(ctx)
	return &singlePubSub{ps: ps, in: ps.ChannelWithSubscriptions(redis.WithChannelSize(incomingBuffer)), commands: commands}
}

// Subscribe sends SUBSCRIBE for channels. When its write fails, go-redis
// makes the connection again inside the call, subscribing the channels it
// held before, and only then adds these to them: they are sent once more,
// on that connection. Should that fail too, go-redis holds them by then,
// and subscribes them with the others when it makes the connection again.
func (p *singlePubSub) Subscribe(ctx context.Context, channels ...string) error {
	p.commands.Add(1)
	err := p.ps.Subscribe(ctx, channels...)
	if err == nil || ctx.Err() != nil {
		return err
	}
	p.commands.Add(1)
	return p.ps.Subscribe(ctx, channels...)
}

func (p *singlePubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	p.commands.Add(1)
	return p.ps.Unsubscribe(ctx, channels...)
}

func (p *singlePubSub) Incoming() <-chan any { return p.in }

func (p *singlePubSub) Close() error { return p.ps.Close() }
