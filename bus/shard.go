package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pubsubPing is how long a pub/sub connection (a shard's, or one Redis's)
// may be silent before it is pinged, and then before it is given up.
const pubsubPing = 3 * time.Second

// shard is one pub/sub connection to a cluster master: the slots whose
// channels were sent to it, and the commands still waiting for Redis's
// answer.
type shard struct {
	addr  string
	ps    *redis.PubSub
	slots map[int]struct{} // owned by shardedPubSub.run
	done  chan struct{}    // closed with the shard

	// mu orders the reader's hand-offs to the hub before the shard's
	// closing: once close has returned, nothing of this connection reaches
	// the hub.
	mu      sync.Mutex
	closed  bool
	pending []*shardCmd // sent, oldest first, not yet answered in full
}

// shardCmd is one SSUBSCRIBE or SUNSUBSCRIBE: channels of one slot.
type shardCmd struct {
	subscribe bool
	slot      int
	channels  []string
	answered  int // how many of channels Redis has confirmed
}

// shardEvent is what a shard's reader tells shardedPubSub.run: the
// connection failed (err alone), Redis refused a command (cmd and err), or
// Redis unsubscribed a channel on its own (dropped), as it does for each
// channel of a slot that leaves the master.
type shardEvent struct {
	shard   *shard
	err     error
	cmd     *shardCmd
	dropped string
}

// dialShard opens a pub/sub connection to master, a node client of the
// cluster's own (its address, credentials, TLS and timeouts). It connects
// at once, so an unreachable master is found here.
func dialShard(ctx context.Context, master *redis.Client) (*shard, error) {
	ps := master.SSubscribe(ctx)
	if err := ps.Ping(ctx); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return &shard{addr: master.Options().Addr, ps: ps, slots: map[int]struct{}{}, done: make(chan struct{})}, nil
}

// send sends cmd. It is recorded first, so that its answer, which the
// reader may read at once, finds it.
func (sh *shard) send(ctx context.Context, cmd *shardCmd) error {
	sh.mu.Lock()
	sh.pending = append(sh.pending, cmd)
	sh.mu.Unlock()
	if cmd.subscribe {
		return sh.ps.SSubscribe(ctx, cmd.channels...)
	}
	return sh.ps.SUnsubscribe(ctx, cmd.channels...)
}

// close closes the connection, once the reader has handed over what it
// holds.
func (sh *shard) close() {
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return
	}
	sh.closed = true
	sh.mu.Unlock()
	close(sh.done)
	_ = sh.ps.Close() // the shard is done with it either way
}

// read reads the connection until it fails or is closed: messages and
// confirmations go to out, for the hub's router; what shardedPubSub.run
// must act on goes to events. A connection silent for pubsubPing is pinged,
// and one silent for as long again is given up.
//
// go-redis makes a failed connection again inside Receive and Ping,
// subscribing every channel in one command; that connection is never used:
// the error still comes back, and the shard is given up.
func (sh *shard) read(ctx context.Context, out chan<- any, events chan<- shardEvent) {
	report := func(ev shardEvent) {
		ev.shard = sh
		select {
		case events <- ev:
		case <-sh.done:
		case <-ctx.Done():
		}
	}
	pinged := false
	for {
		msg, err := sh.ps.ReceiveTimeout(ctx, pubsubPing)
		var redisErr redis.Error
		var netErr net.Error
		switch {
		case err == nil:
		case errors.As(err, &redisErr):
			// Redis refused the oldest command waiting.
			cmd, ok := sh.refused(err)
			if !ok {
				report(shardEvent{err: fmt.Errorf("answers out of step: %w", err)})
				return
			}
			report(shardEvent{cmd: cmd, err: err})
			continue
		case errors.As(err, &netErr) && netErr.Timeout() && !pinged:
			pinged = true
			if err := sh.ps.Ping(ctx); err != nil {
				report(shardEvent{err: err})
				return
			}
			continue
		default:
			report(shardEvent{err: err})
			return
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Message:
			if !sh.handOver(ctx, out, m) {
				return
			}
		case *redis.Subscription:
			switch m.Kind {
			case "ssubscribe":
				ok, closed := sh.confirm(ctx, out, m)
				if closed {
					return
				}
				if !ok {
					report(shardEvent{err: fmt.Errorf("unexpected confirmation of %s", m.Channel)})
					return
				}
			case "sunsubscribe":
				if !sh.unsubscribed(m.Channel) {
					report(shardEvent{dropped: m.Channel})
				}
			}
		}
	}
}

// handOver gives m to the hub, unless the shard is closed; it reports
// whether the shard is still open.
func (sh *shard) handOver(ctx context.Context, out chan<- any, m any) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return false
	}
	select {
	case out <- m:
	case <-ctx.Done():
	}
	return true
}

// confirm matches a subscribe confirmation with the oldest command waiting
// and hands it to the hub. ok is false when that command does not name the
// channel: the answers are out of step with the commands.
func (sh *shard) confirm(ctx context.Context, out chan<- any, m *redis.Subscription) (ok, closed bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return false, true
	}
	if !sh.answer(true, m.Channel) {
		return false, false
	}
	select {
	case out <- m:
	case <-ctx.Done():
	}
	return true, false
}

// unsubscribed reports whether an unsubscribe confirmation answers the
// oldest command waiting, rather than coming from Redis on its own.
func (sh *shard) unsubscribed(channel string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.answer(false, channel)
}

// answer counts a confirmation of channel against the oldest command
// waiting, if it is the next one that command expects. Called with sh.mu
// held.
func (sh *shard) answer(subscribe bool, channel string) bool {
	if len(sh.pending) == 0 {
		return false
	}
	cmd := sh.pending[0]
	if cmd.subscribe != subscribe || cmd.channels[cmd.answered] != channel {
		return false
	}
	cmd.answered++
	if cmd.answered == len(cmd.channels) {
		sh.pending = sh.pending[1:]
	}
	return true
}

// refused takes the oldest command waiting, which Redis refused with err.
// ok is false when there is none, or when err names another slot.
func (sh *shard) refused(err error) (cmd *shardCmd, ok bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.pending) == 0 || sh.pending[0].answered > 0 {
		return nil, false
	}
	cmd = sh.pending[0]
	if slot, named := redirectSlot(err); named && slot != cmd.slot {
		return nil, false
	}
	sh.pending = sh.pending[1:]
	return cmd, true
}

// redirectSlot is the slot a MOVED or ASK error names.
func redirectSlot(err error) (int, bool) {
	f := strings.Fields(err.Error())
	if len(f) < 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return 0, false
	}
	slot, convErr := strconv.Atoi(f[1])
	return slot, convErr == nil
}
