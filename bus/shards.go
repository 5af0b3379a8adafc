package bus

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"chorus/internal/slots"

	"github.com/redis/go-redis/v9"
)

// Live delivery on a Redis Cluster uses sharded pub/sub: a channel belongs
// to the slot of its hash tag, SPUBLISH reaches only the master serving
// that slot (and its replicas), and SSUBSCRIBE must name channels of one
// slot, sent to that master. So an instance holds one connection per
// master it needs (a shard), and subscribes each slot's channels there, one
// command per slot.
//
// go-redis's PubSub cannot carry channels of several slots through a
// reconnect: it subscribes them all again in one SSUBSCRIBE, which Redis
// refuses (CROSSSLOT). So a shard's PubSub serves one connection only: when
// it breaks, or Redis moves some of its slots elsewhere, the hub is told
// which channels are lost, and those slots are subscribed again, slot by
// slot, on the masters that serve them now; Redis's new confirmations tell
// the hub its streams must catch up.

const (
	// shardRetryMin and shardRetryMax bound the wait before slots without a
	// subscription are tried again, doubling while they fail: a failed
	// master's replica takes a second or more to be promoted.
	shardRetryMin = 50 * time.Millisecond
	shardRetryMax = time.Second
	// shardReloadTimeout bounds one read of the cluster's slots.
	shardReloadTimeout = 2 * time.Second
)

// shardedPubSub is the hub's pub/sub on a Redis Cluster. One goroutine
// (run) owns which channels are wanted and where each slot is subscribed,
// and sends every command; each shard's reader hands messages and
// confirmations straight to the hub's router, and tells run of the rest.
type shardedPubSub struct {
	rdb      *redis.ClusterClient
	commands *atomic.Int64 // Stats.SubscribeCommands
	log      *slog.Logger
	out      chan any         // to the router
	changes  chan shardChange // from the hub's subscriber
	events   chan shardEvent  // from the shards' readers
	cancel   context.CancelFunc
	done     chan struct{} // closed once run has returned

	// Owned by run.
	want    map[int]map[string]struct{} // wanted channels, by slot
	placed  map[int]*shard              // the shard each wanted slot's channels were sent to
	shards  map[string]*shard           // open shards, by master address
	down    map[string]bool             // masters that could not be reached since the last repair
	retry   <-chan time.Time            // the next repair, when one is due
	backoff time.Duration
	readers sync.WaitGroup
}

// shardChange is a batch of channels to subscribe or unsubscribe.
type shardChange struct {
	channels  []string
	subscribe bool
}

func newShardedPubSub(ctx context.Context, rdb *redis.ClusterClient, commands *atomic.Int64, log *slog.Logger) *shardedPubSub {
	ctx, cancel := context.WithCancel(ctx)
	p := &shardedPubSub{
		rdb: rdb, commands: commands, log: log,
		out:     make(chan any, incomingBuffer),
		changes: make(chan shardChange),
		events:  make(chan shardEvent, 64),
		cancel:  cancel,
		done:    make(chan struct{}),
		want:    map[int]map[string]struct{}{},
		placed:  map[int]*shard{},
		shards:  map[string]*shard{},
		down:    map[string]bool{},
		backoff: shardRetryMin,
	}
	go p.run(ctx)
	return p
}

var errPubSubClosed = errors.New("pub/sub closed")

func (p *shardedPubSub) Subscribe(ctx context.Context, channels ...string) error {
	return p.change(ctx, shardChange{channels: channels, subscribe: true})
}

func (p *shardedPubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	return p.change(ctx, shardChange{channels: channels})
}

// change hands a batch to run, which sends its commands.
func (p *shardedPubSub) change(ctx context.Context, c shardChange) error {
	select {
	case p.changes <- c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.done:
		return errPubSubClosed
	}
}

func (p *shardedPubSub) Incoming() <-chan any { return p.out }

func (p *shardedPubSub) Close() error {
	p.cancel()
	<-p.done
	return nil
}

// run applies the hub's changes and the shards' events, one at a time,
// until ctx ends; then it closes every shard and waits for their readers.
func (p *shardedPubSub) run(ctx context.Context) {
	defer close(p.done)
	defer p.readers.Wait()
	defer func() {
		for _, sh := range p.shards {
			p.closeShard(sh)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-p.changes:
			p.apply(ctx, c)
		case ev := <-p.events:
			p.handle(ctx, ev)
		case <-p.retry:
			p.retry = nil
			p.repair(ctx)
		}
	}
}

// apply subscribes or unsubscribes a batch, one command per slot.
func (p *shardedPubSub) apply(ctx context.Context, c shardChange) {
	bySlot := map[int][]string{}
	for _, ch := range c.channels {
		s := slots.Of(ch)
		bySlot[s] = append(bySlot[s], ch)
	}
	for slot, channels := range bySlot {
		if c.subscribe {
			want := p.want[slot]
			if want == nil {
				want = map[string]struct{}{}
				p.want[slot] = want
			}
			for _, ch := range channels {
				want[ch] = struct{}{}
			}
			if sh := p.placed[slot]; sh != nil {
				p.send(ctx, sh, &shardCmd{subscribe: true, slot: slot, channels: channels})
			} else {
				p.place(ctx, slot)
			}
			continue
		}
		want := p.want[slot]
		for _, ch := range channels {
			delete(want, ch)
		}
		sh := p.placed[slot]
		if len(want) == 0 {
			delete(p.want, slot)
			p.unplace(slot)
		}
		if sh != nil {
			p.send(ctx, sh, &shardCmd{slot: slot, channels: channels})
		}
	}
}

// place subscribes the wanted channels of slot on the shard of the master
// that serves it, as far as the client knows, opening that shard if need
// be. When there is no master to reach, a repair tries again.
func (p *shardedPubSub) place(ctx context.Context, slot int) {
	channels := slices.Collect(maps.Keys(p.want[slot]))
	master, err := p.rdb.MasterForKey(ctx, channels[0])
	if err != nil { // the client knows no slots: the repair says so
		p.schedule()
		return
	}
	addr := master.Options().Addr
	sh := p.shards[addr]
	if sh == nil {
		if p.down[addr] {
			p.schedule()
			return
		}
		if sh, err = p.open(ctx, master); err != nil {
			p.log.Warn("cluster pub/sub: master unreachable; trying again", "master", addr, "err", err)
			p.down[addr] = true
			p.schedule()
			return
		}
	}
	p.placed[slot] = sh
	sh.slots[slot] = struct{}{}
	for batch := range slices.Chunk(channels, SubscribeBatch) {
		if !p.send(ctx, sh, &shardCmd{subscribe: true, slot: slot, channels: batch}) {
			return // the shard broke; the slot waits for a repair
		}
	}
}

// unplace forgets where slot is subscribed.
func (p *shardedPubSub) unplace(slot int) {
	if sh := p.placed[slot]; sh != nil {
		delete(sh.slots, slot)
		delete(p.placed, slot)
	}
}

// send sends cmd on sh and reports whether it went; when it did not, the
// shard is given up.
func (p *shardedPubSub) send(ctx context.Context, sh *shard, cmd *shardCmd) bool {
	p.commands.Add(1)
	if err := sh.send(ctx, cmd); err != nil {
		p.broken(ctx, sh, err)
		return false
	}
	return true
}

// handle acts on what a shard's reader found.
func (p *shardedPubSub) handle(ctx context.Context, ev shardEvent) {
	sh := ev.shard
	if p.shards[sh.addr] != sh {
		return // closed already
	}
	switch {
	case ev.err != nil && ev.cmd == nil:
		p.broken(ctx, sh, ev.err)
	case ev.cmd != nil:
		// Redis refused a command (the slot moved, the cluster is down, a
		// migration is under way). An unsubscribe needs nothing more; a
		// subscribe's slot is subscribed again, wherever it is served then.
		if !ev.cmd.subscribe || p.placed[ev.cmd.slot] != sh {
			return
		}
		p.log.Info("cluster pub/sub: subscribe refused; trying again", "master", sh.addr, "slot", ev.cmd.slot, "err", ev.err)
		p.lose(ctx, ev.cmd.slot)
	default:
		// Redis unsubscribed a channel itself: its slot has left this
		// master, and all the slot's channels with it.
		slot := slots.Of(ev.dropped)
		if _, wanted := p.want[slot][ev.dropped]; !wanted || p.placed[slot] != sh {
			return
		}
		p.log.Info("cluster pub/sub: slot moved; subscribing again", "master", sh.addr, "slot", slot)
		p.lose(ctx, slot)
	}
}

// lose tells the hub that the wanted channels of these slots are no longer
// subscribed, and has a repair subscribe them again.
func (p *shardedPubSub) lose(ctx context.Context, lostSlots ...int) {
	var lost LostChannels
	for _, slot := range lostSlots {
		p.unplace(slot)
		lost = slices.AppendSeq(lost, maps.Keys(p.want[slot]))
	}
	p.schedule()
	if len(lost) == 0 {
		return
	}
	select {
	case p.out <- lost:
	case <-ctx.Done():
	}
}

// broken gives up sh, whose connection failed: its slots are subscribed
// again on a new connection.
func (p *shardedPubSub) broken(ctx context.Context, sh *shard, err error) {
	if p.shards[sh.addr] != sh {
		return
	}
	p.closeShard(sh)
	lost := slices.Collect(maps.Keys(sh.slots))
	p.log.Warn("cluster pub/sub connection lost; subscribing again", "master", sh.addr, "slots", len(lost), "err", err)
	p.lose(ctx, lost...)
}

// schedule has a repair run after the current backoff, unless one is due.
func (p *shardedPubSub) schedule() {
	if p.retry == nil {
		p.retry = time.After(p.backoff)
	}
}

// repair reads the cluster's slots again, moves the slots whose master
// changed, subscribes every wanted slot that has no subscription, and
// closes the shards left with none. Until all are subscribed it runs
// again, ever less often.
func (p *shardedPubSub) repair(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, shardReloadTimeout)
	err := p.reload(rctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		p.log.Warn("cluster pub/sub: reading the cluster's slots failed", "err", err)
	}
	clear(p.down)
	var moved []int
	for slot, sh := range p.placed {
		for ch := range p.want[slot] {
			if master, err := p.rdb.MasterForKey(ctx, ch); err == nil && master.Options().Addr != sh.addr {
				moved = append(moved, slot)
			}
			break // any channel of the slot names its master
		}
	}
	if len(moved) > 0 {
		p.log.Info("cluster pub/sub: slots moved; subscribing again", "slots", len(moved))
		p.lose(ctx, moved...)
	}
	for slot := range p.want {
		if p.placed[slot] == nil {
			p.place(ctx, slot)
		}
	}
	for _, sh := range p.shards {
		if len(sh.slots) == 0 {
			p.closeShard(sh)
		}
	}
	if waiting := len(p.want) - len(p.placed); waiting > 0 {
		p.backoff = min(2*p.backoff, shardRetryMax)
		p.log.Info("cluster pub/sub: slots still without a subscription; trying again",
			"slots", waiting, "in", p.backoff)
		p.retry = nil
		p.schedule()
		return
	}
	p.backoff = shardRetryMin
	p.retry = nil
}

// reload has the client read the cluster's slots at once: ForEachMaster
// reloads them before it lists the masters, where ReloadState only asks for
// a reload in the background.
func (p *shardedPubSub) reload(ctx context.Context) error {
	return p.rdb.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil })
}

// open connects a shard to master and starts its reader.
func (p *shardedPubSub) open(ctx context.Context, master *redis.Client) (*shard, error) {
	sh, err := dialShard(ctx, master)
	if err != nil {
		return nil, err
	}
	p.shards[sh.addr] = sh
	p.readers.Add(1)
	go func() {
		defer p.readers.Done()
		sh.read(ctx, p.out, p.events)
	}()
	return sh, nil
}

// closeShard closes sh; its reader hands nothing more to the hub.
func (p *shardedPubSub) closeShard(sh *shard) {
	sh.close()
	delete(p.shards, sh.addr)
	for slot := range sh.slots {
		delete(p.placed, slot)
	}
}
