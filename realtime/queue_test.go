package realtime

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueueBoundOrderAndDrainers(t *testing.T) {
	q := newQueue(3)
	for i := range 3 {
		ok, start := q.push(outgoing{statusID: int64(i)})
		if !ok || start {
			t.Fatalf("push %d while held: ok=%v start=%v, want queued with no drainer", i, ok, start)
		}
	}
	if ok, _ := q.push(outgoing{statusID: 99}); ok {
		t.Fatal("push over the bound accepted")
	}
	if !q.release() {
		t.Fatal("release with items waiting starts no drainer")
	}
	got := q.next()
	if len(got) != 3 || got[0].statusID != 0 || got[2].statusID != 2 {
		t.Fatalf("next = %+v, want 0,1,2 in order", got)
	}
	if _, start := q.push(outgoing{statusID: 5}); start {
		t.Fatal("a second drainer started while one drains")
	}
	if got := q.next(); len(got) != 1 {
		t.Fatalf("next = %+v, want the one pushed meanwhile", got)
	}
	if q.next() != nil {
		t.Fatal("next of an empty queue is not nil")
	}
	q.drainers.Done() // the drainer ends
	if _, start := q.push(outgoing{statusID: 6}); !start {
		t.Fatal("push to an idle queue starts no drainer")
	}
	q.drainers.Done()
	q.hold()
	if _, start := q.push(outgoing{statusID: 7}); start {
		t.Fatal("push to a held queue starts a drainer")
	}
}

// Pushes from many goroutines all arrive, each once, through drainers that
// start and end as the queue fills and empties, never two at a time.
func TestQueueConcurrentPushes(t *testing.T) {
	q := newQueue(1 << 20)
	q.release()
	const writers, each = 8, 1000
	var mu sync.Mutex
	seen := map[int64]bool{}
	var running atomic.Int32
	drain := func() {
		defer q.drainers.Done()
		if running.Add(1) != 1 {
			t.Error("two drainers at once")
		}
		defer running.Add(-1)
		for items := q.next(); items != nil; items = q.next() {
			mu.Lock()
			for _, o := range items {
				if seen[o.statusID] {
					t.Errorf("status %d drained twice", o.statusID)
				}
				seen[o.statusID] = true
			}
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, start := q.push(outgoing{statusID: int64(w*each + i + 1)}); start {
					go drain()
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == writers*each {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d items drained: a push found no drainer", n, writers*each)
		}
		time.Sleep(time.Millisecond)
	}
	q.hold()
}

func TestSentIDsRemembersTheLatest(t *testing.T) {
	var s sentIDs
	for id := int64(1); id <= sentMemory+100; id++ {
		if s.has(id) {
			t.Fatalf("%d remembered before it was sent", id)
		}
		s.add(id)
	}
	for id := int64(101); id <= sentMemory+100; id++ {
		if !s.has(id) {
			t.Fatalf("%d, among the last %d sent, forgotten", id, sentMemory)
		}
	}
	if s.has(100) || s.has(1) {
		t.Fatal("ids older than the memory still remembered")
	}
	if len(s.ids) != sentMemory {
		t.Fatalf("holds %d ids, want %d", len(s.ids), sentMemory)
	}
	// Out of order: an older id sent after newer ones is remembered, and
	// one between them that was never sent is not.
	var o sentIDs
	for _, id := range []int64{10, 30, 20} {
		o.add(id)
	}
	for id, want := range map[int64]bool{10: true, 20: true, 30: true, 15: false, 25: false, 31: false} {
		if o.has(id) != want {
			t.Errorf("out of order: has(%d) = %v, want %v", id, !want, want)
		}
	}
}

// BenchmarkSentIDsLive checks a full memory for a status newer than all it
// holds, as live delivery does for each frame.
func BenchmarkSentIDsLive(b *testing.B) {
	var s sentIDs
	id := int64(0)
	for range sentMemory {
		id++
		s.add(id)
	}
	for b.Loop() {
		id++
		if s.has(id) {
			b.Fatal("a new id remembered")
		}
		s.add(id)
	}
}
