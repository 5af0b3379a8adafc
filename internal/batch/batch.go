// Package batch gathers the calls that many requests make at once into one
// call for all of them: the reads and checks that streams opening together
// ask of Redis, so that a reconnect storm costs a round trip per batch, not
// per stream.
package batch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Timeout bounds one call of a Batcher.
const Timeout = 5 * time.Second

// Batcher makes one call for the keys asked of it at once: a key asked
// while a call is under way waits for it to end and goes in the next call,
// with every other key asked meanwhile, each key once. A key is answered by
// a call made after it was asked, never by one made before.
//
// A lone key costs what it did alone. Under a steady flow, Spacing, when
// set, keeps two calls' starts at least that far apart: a call that would
// start sooner waits for the rest of it, and the keys asked meanwhile join
// it, so that a flow of a few keys a millisecond is answered in calls of
// many keys rather than in calls of one or two, each key waiting at most
// Spacing longer.
type Batcher[K comparable, V any] struct {
	// Do answers keys, in their order; its calls are one at a time.
	Do func(ctx context.Context, keys []K) ([]V, error)
	// Spacing is the least time between the starts of two calls; 0: none.
	Spacing time.Duration
	// Max bounds the keys of one call; 0: no bound.
	Max int

	mu        sync.Mutex
	waiting   []request[K, V]
	running   bool      // a goroutine makes calls until none waits
	lastStart time.Time // of the last call, for Spacing
}

type request[K comparable, V any] struct {
	key  K
	done chan result[V] // buffered: the call never waits for its caller
}

type result[V any] struct {
	v   V
	err error
}

// Get answers key in the next call and waits for it; the call is bounded by
// Timeout, not by the caller.
func (b *Batcher[K, V]) Get(key K) (V, error) {
	req := request[K, V]{key: key, done: make(chan result[V], 1)}
	b.mu.Lock()
	b.waiting = append(b.waiting, req)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.run()
	}
	r := <-req.done
	return r.v, r.err
}

// Waiting is how many keys wait for the next call.
func (b *Batcher[K, V]) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

// run makes calls until no key waits.
func (b *Batcher[K, V]) run() {
	for {
		b.mu.Lock()
		wait := b.Spacing - time.Since(b.lastStart)
		b.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		b.mu.Lock()
		reqs := b.waiting
		if b.Max > 0 && len(reqs) > b.Max {
			reqs = reqs[:b.Max:b.Max]
		}
		b.waiting = b.waiting[len(reqs):]
		if len(reqs) == 0 {
			b.waiting = nil
			b.running = false
		} else {
			b.lastStart = time.Now()
		}
		b.mu.Unlock()
		if len(reqs) == 0 {
			return
		}
		b.call(reqs)
	}
}

// call answers reqs with one call of Do.
func (b *Batcher[K, V]) call(reqs []request[K, V]) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	at := make(map[K]int, len(reqs))
	keys := make([]K, 0, len(reqs))
	for _, r := range reqs {
		if _, ok := at[r.key]; !ok {
			at[r.key] = len(keys)
			keys = append(keys, r.key)
		}
	}
	vs, err := b.Do(ctx, keys)
	if err == nil && len(vs) != len(keys) {
		err = fmt.Errorf("%d answers for %d keys", len(vs), len(keys))
	}
	for _, r := range reqs {
		if err != nil {
			r.done <- result[V]{err: err}
		} else {
			r.done <- result[V]{v: vs[at[r.key]]}
		}
	}
}

// OpenSpacing is the Spacing of the calls that streams opening at once
// share (their sessions and limits, reads, registrations): in a reconnect
// storm of a thousand streams a second, calls of about 25 streams each,
// for at most this much longer an opening, per call it waits on (about
// 60 ms in all at the median). In a storm of 10,000 reconnects over 10 s
// on two cores it cut Redis's CPU per stream by a fifth against 10 ms
// (docs/BENCHMARKS.md).
const OpenSpacing = 25 * time.Millisecond
