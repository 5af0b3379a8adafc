package realtime

import (
	"sync"
	"testing"
)

func TestQueueBoundAndOrder(t *testing.T) {
	q := newQueue(3)
	for i := range 3 {
		if !q.push(outgoing{statusID: int64(i)}) {
			t.Fatalf("push %d refused under the bound", i)
		}
	}
	if q.push(outgoing{statusID: 99}) {
		t.Fatal("push over the bound accepted")
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no ready token with items waiting")
	}
	got := q.take()
	if len(got) != 3 || got[0].statusID != 0 || got[2].statusID != 2 {
		t.Fatalf("take = %+v, want 0,1,2 in order", got)
	}
	if len(q.take()) != 0 {
		t.Fatal("items left after take")
	}
	if !q.push(outgoing{statusID: 5}) {
		t.Fatal("push refused after take emptied the queue")
	}
}

// Pushes from many goroutines all arrive, each once, and the reader is
// woken for every batch.
func TestQueueConcurrentPushes(t *testing.T) {
	q := newQueue(1 << 20)
	const writers, each = 8, 1000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				q.push(outgoing{statusID: int64(w*each + i + 1)})
			}
		})
	}
	seen := map[int64]bool{}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for len(seen) < writers*each {
		select {
		case <-q.ready:
		case <-done:
		}
		for _, o := range q.take() {
			if seen[o.statusID] {
				t.Fatalf("status %d taken twice", o.statusID)
			}
			seen[o.statusID] = true
		}
	}
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
}
