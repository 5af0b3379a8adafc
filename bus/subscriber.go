package bus

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	return newSinglePubSub(ctx, b.rdb, commands, log)
}

// readRetry is how long the reader of one Redis's pub/sub waits after a
// failed read before it reads again, which makes the connection anew.
const readRetry = 100 * time.Millisecond

// singlePubSub is pub/sub on one Redis: one connection, subscribed to every
// channel. go-redis makes it again, with all of them, when a read or a
// command finds it broken; the reader (read) gives it up for a new one when
// it stays silent (pubsubPing), as a peer gone without a reset leaves it.
type singlePubSub struct {
	rdb      redis.UniversalClient
	commands *atomic.Int64
	log      *slog.Logger
	out      chan any // to the hub, from every connection in turn
	cancel   context.CancelFunc
	done     chan struct{} // closed once read has returned

	// mu is held while a command is sent and while the connection is
	// replaced, so that none is sent on one given up.
	mu       sync.Mutex
	ps       *redis.PubSub
	channels map[string]struct{} // subscribed: a new connection's
}

var (
	_ Subscriber = (*singlePubSub)(nil)
	_ Subscriber = (*shardedPubSub)(nil)
)

func newSinglePubSub(ctx context.Context, rdb redis.UniversalClient, commands *atomic.Int64, log *slog.Logger) *singlePubSub {
	ctx, cancel := context.WithCancel(ctx)
	p := &singlePubSub{
		rdb: rdb, commands: commands, log: log,
		out:    make(chan any, incomingBuffer),
		cancel: cancel, done: make(chan struct{}),
		ps:       rdb.Subscribe(ctx),
		channels: map[string]struct{}{},
	}
	go p.read(ctx)
	return p
}

func (p *singlePubSub) Subscribe(ctx context.Context, channels ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ch := range channels {
		p.channels[ch] = struct{}{}
	}
	return p.subscribe(ctx, channels)
}

// subscribe sends SUBSCRIBE for channels. When its write fails, go-redis
// makes the connection again inside the call, subscribing the channels it
// held before, and only then adds these to them: they are sent once more,
// on that connection. Should that fail too, go-redis holds them by then,
// and subscribes them with the others when it makes the connection again.
// Called with p.mu held.
func (p *singlePubSub) subscribe(ctx context.Context, channels []string) error {
	p.commands.Add(1)
	err := p.ps.Subscribe(ctx, channels...)
	if err == nil || ctx.Err() != nil {
		return err
	}
	p.commands.Add(1)
	return p.ps.Subscribe(ctx, channels...)
}

func (p *singlePubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ch := range channels {
		delete(p.channels, ch)
	}
	p.commands.Add(1)
	return p.ps.Unsubscribe(ctx, channels...)
}

func (p *singlePubSub) Incoming() <-chan any { return p.out }

func (p *singlePubSub) Close() error {
	p.cancel()
	p.mu.Lock()
	err := p.ps.Close()
	p.mu.Unlock()
	<-p.done
	return err
}

// read hands every message and subscribe confirmation to the hub until ctx
// ends. A connection silent for pubsubPing is pinged, and one silent for as
// long again is given up for a new one (reopen): go-redis's own check of a
// channel writes a PING but never waits for the answer, and a connection
// whose peer vanished without a reset (a failover behind a virtual
// address, a dropped NAT entry) would take its writes for as long as TCP
// retries them, a quarter of an hour, while nothing came through it.
func (p *singlePubSub) read(ctx context.Context) {
	defer close(p.done)
	pinged := false
	for {
		p.mu.Lock()
		ps := p.ps
		p.mu.Unlock()
		msg, err := ps.ReceiveTimeout(ctx, pubsubPing)
		if ctx.Err() != nil {
			return
		}
		var netErr net.Error
		switch {
		case err == nil:
			pinged = false
			switch msg.(type) {
			case *redis.Message, *redis.Subscription:
				select {
				case p.out <- msg:
				case <-ctx.Done():
					return
				}
			}
		case errors.As(err, &netErr) && netErr.Timeout() && !pinged:
			pinged = true
			// A failed write has go-redis make the connection again; the
			// next read tells either way.
			_ = ps.Ping(ctx)
		case errors.As(err, &netErr) && netErr.Timeout():
			pinged = false
			p.reopen(ctx, ps, err)
		default:
			// go-redis makes the connection again, subscribing every
			// channel, on the next read, or did already.
			select {
			case <-time.After(readRetry):
			case <-ctx.Done():
				return
			}
		}
	}
}

// reopen closes old, silent after a ping, and opens a new connection in its
// place, subscribed to every channel in one command as go-redis makes one
// again: Redis's confirmations tell the hub that its streams must catch up.
func (p *singlePubSub) reopen(ctx context.Context, old *redis.PubSub, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ps != old || ctx.Err() != nil {
		return
	}
	p.log.Warn("pub/sub connection silent; making a new one", "channels", len(p.channels), "err", err)
	_ = old.Close() // given up either way
	p.ps = p.rdb.Subscribe(ctx)
	if len(p.channels) == 0 {
		return
	}
	if err := p.subscribe(ctx, slices.Collect(maps.Keys(p.channels))); err != nil && ctx.Err() == nil {
		p.log.Warn("pub/sub subscribe on a new connection failed; it is made again", "channels", len(p.channels), "err", err)
	}
}
