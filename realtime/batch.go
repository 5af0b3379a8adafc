package realtime

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// batchTimeout bounds one call of a batcher.
const batchTimeout = 5 * time.Second

// batcher makes one call for the reads that streams opening at once ask
// of the social core: a read asked while a call is under way waits for it
// to end and goes in the next call, with every other read asked meanwhile,
// each key once. A read is made after it was asked, never answered from
// one made before. A lone read costs what it did alone; a storm of
// reconnects costs a call per batch, not per stream.
type batcher[K comparable, V any] struct {
	// do answers keys, in their order; its calls are one at a time.
	do func(ctx context.Context, keys []K) ([]V, error)

	mu      sync.Mutex
	waiting []batchRequest[K, V]
	running bool // a goroutine makes calls until none waits
}

type batchRequest[K comparable, V any] struct {
	key  K
	done chan batchResult[V] // buffered: the call never waits for its caller
}

type batchResult[V any] struct {
	v   V
	err error
}

// get reads key in the next call and waits for it; the call is bounded by
// batchTimeout, not by the caller.
func (b *batcher[K, V]) get(key K) (V, error) {
	req := batchRequest[K, V]{key: key, done: make(chan batchResult[V], 1)}
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

// run makes calls until no read waits.
func (b *batcher[K, V]) run() {
	for {
		b.mu.Lock()
		reqs := b.waiting
		b.waiting = nil
		if len(reqs) == 0 {
			b.running = false
		}
		b.mu.Unlock()
		if len(reqs) == 0 {
			return
		}
		b.call(reqs)
	}
}

// call answers reqs with one call of do.
func (b *batcher[K, V]) call(reqs []batchRequest[K, V]) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	at := make(map[K]int, len(reqs))
	keys := make([]K, 0, len(reqs))
	for _, r := range reqs {
		if _, ok := at[r.key]; !ok {
			at[r.key] = len(keys)
			keys = append(keys, r.key)
		}
	}
	vs, err := b.do(ctx, keys)
	if err == nil && len(vs) != len(keys) {
		err = fmt.Errorf("%d answers for %d keys", len(vs), len(keys))
	}
	for _, r := range reqs {
		if err != nil {
			r.done <- batchResult[V]{err: err}
		} else {
			r.done <- batchResult[V]{v: vs[at[r.key]]}
		}
	}
}
