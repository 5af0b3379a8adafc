// Package batch gathers the calls that many requests make at once into one
// call for all of them: the reads and checks that streams opening together
// ask of Redis, so that a reconnect storm costs a round trip per batch, not
// per stream.
package batch

import (
	"context"
	"fmt"
	"runtime"
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
//
// Under a crowd the spacing grows (MaxSpacing, Crowd): each call's fixed
// cost, on Redis and on the way there, is then shared by more keys, for
// a longer wait each; it shrinks back as the flow thins, and is Spacing
// again once no key waits. A call due while Max keys or more wait starts
// at once, and so does one whose wait Max keys come to fill: the spacing
// gathers, it does not throttle.
type Batcher[K comparable, V any] struct {
	// Do answers keys, in their order; its calls are one at a time.
	Do func(ctx context.Context, keys []K) ([]V, error)
	// Spacing is the least time between the starts of two calls (but for
	// a backlog of Max keys); 0: none.
	Spacing time.Duration
	// MaxSpacing, when above Spacing, and Crowd, when above 0, let the
	// spacing grow under a flow of at least Crowd requests per Spacing (a
	// key asked twice counts twice): after a call that answered requests
	// at that rate or more since the last call's start, the next starts
	// twice as long after it as the last one did, up to MaxSpacing; after
	// one below it, half as long, down to Spacing. The rate, not a call's
	// size, decides, so the flow that keeps the spacing grown is the flow
	// that grew it.
	MaxSpacing time.Duration
	Crowd      int
	// Max bounds the keys of one call; 0: no bound.
	Max int

	mu        sync.Mutex
	waiting   []request[K, V]
	running   bool          // a goroutine makes calls until none waits
	lastStart time.Time     // of the last call, for Spacing
	spacing   time.Duration // now: Spacing, or more under a crowd
	wake      chan struct{} // told when Max keys wait, to end the runner's wait
	onSleep   func()        // called as the runner starts to wait (tests)
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
	b.ask(req)
	r := <-req.done
	return r.v, r.err
}

// GetAll answers keys as Get answers each, asked together (so that they go
// in one call, but for Max), and waits for all of them. The error is the
// first of their calls'.
func (b *Batcher[K, V]) GetAll(keys []K) ([]V, error) {
	reqs := make([]request[K, V], len(keys))
	for i, key := range keys {
		reqs[i] = request[K, V]{key: key, done: make(chan result[V], 1)}
	}
	b.ask(reqs...)
	out := make([]V, len(keys))
	var err error
	for i, req := range reqs {
		r := <-req.done
		out[i] = r.v
		if err == nil {
			err = r.err
		}
	}
	return out, err
}

// ask queues reqs for the next call, starting the runner when none runs.
func (b *Batcher[K, V]) ask(reqs ...request[K, V]) {
	if len(reqs) == 0 {
		return
	}
	b.mu.Lock()
	b.waiting = append(b.waiting, reqs...)
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	if b.full() {
		select {
		case b.wake <- struct{}{}:
		default: // told already
		}
	}
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.run()
	}
}

// Waiting is how many keys wait for the next call.
func (b *Batcher[K, V]) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

// run makes calls until no key waits. It first lets the goroutines
// readied with its starter run: requests released together, as the streams
// one call of an earlier stage answered, then go in one call, not in a call
// of the first alone and one of the rest.
func (b *Batcher[K, V]) run() {
	runtime.Gosched()
	for {
		b.mu.Lock()
		wait := max(b.spacing, b.Spacing) - time.Since(b.lastStart)
		full := b.full()
		b.mu.Unlock()
		if wait > 0 && !full {
			b.sleep(wait)
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
			b.spacing = b.Spacing // idle: no crowd
		} else {
			now := time.Now()
			b.adapt(len(reqs), now.Sub(b.lastStart))
			b.lastStart = now
		}
		b.mu.Unlock()
		if len(reqs) == 0 {
			return
		}
		b.call(reqs)
	}
}

// full tells whether Max keys or more wait. b.mu is held.
func (b *Batcher[K, V]) full() bool {
	return b.Max > 0 && len(b.waiting) >= b.Max
}

// sleep waits d, or until Max keys wait. A wake left from a backlog that a
// call has taken since does not end it.
func (b *Batcher[K, V]) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	if b.onSleep != nil {
		b.onSleep()
	}
	for {
		select {
		case <-t.C:
			return
		case <-b.wake:
			b.mu.Lock()
			full := b.full()
			b.mu.Unlock()
			if full {
				return
			}
		}
	}
}

// adapt sets the spacing for a call of n requests, gathered over gap (since
// the last call's start): twice the last when they came at Crowd per
// Spacing or faster, up to MaxSpacing, else half, down to Spacing. b.mu is
// held.
func (b *Batcher[K, V]) adapt(n int, gap time.Duration) {
	if b.Crowd <= 0 || b.MaxSpacing <= b.Spacing {
		b.spacing = b.Spacing
		return
	}
	if float64(n)*float64(b.Spacing) >= float64(b.Crowd)*float64(gap) {
		b.spacing = min(2*max(b.spacing, b.Spacing), b.MaxSpacing)
	} else {
		b.spacing = max(b.spacing/2, b.Spacing)
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

// The spacing of the calls that streams opening at once share (their
// sessions and limits, reads, registrations; see OpenSpaced).
//
// OpenSpacing: under a light flow, each opening waits at most this much
// longer per call it waits on. In a storm of 10,000 reconnects over 10 s
// on two cores it cut Redis's CPU per stream by a fifth against 10 ms.
//
// OpenMaxSpacing and OpenCrowd: a flow of ten streams per 25 ms or more
// (400 openings a second) doubles the spacing with each call, up to
// 200 ms, so that a storm of a thousand a second goes in calls of about
// 200 each; a thinner flow halves it back.
// Each round trip costs Redis a fixed amount besides its commands (tens of
// µs on a shared two-core machine), which 25 streams a call left at about
// a third of a stream's opening; in that storm, Redis's CPU per stream fell
// from about 72 µs at a fixed 25 ms to about 52, every stream ready within
// 0.6 s of its dial (docs/BENCHMARKS.md).
const (
	OpenSpacing    = 25 * time.Millisecond
	OpenMaxSpacing = 200 * time.Millisecond
	OpenCrowd      = 10
)

// OpenSpaced sets b's spacing to that of the calls streams opening at
// once share.
func (b *Batcher[K, V]) OpenSpaced() {
	b.Spacing, b.MaxSpacing, b.Crowd = OpenSpacing, OpenMaxSpacing, OpenCrowd
}
