package realtime

import "sync"

// queue is a connection's bounded FIFO of outgoing items. Pushing never
// blocks, and an empty queue holds no buffer, so that an idle connection
// costs little: a channel of the same bound would hold its whole buffer
// for the connection's life.
type queue struct {
	mu    sync.Mutex
	items []outgoing
	limit int
	ready chan struct{} // holds a token while items wait
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, ready: make(chan struct{}, 1)}
}

// push adds o unless limit items already wait, and reports whether it did.
func (q *queue) push(o outgoing) bool {
	q.mu.Lock()
	if len(q.items) >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, o)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default: // a token is there already
	}
	return true
}

// take removes and returns every waiting item, oldest first.
func (q *queue) take() []outgoing {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// sentIDs remembers the last sentMemory status ids a connection sent. It
// grows with use: a connection that was sent few statuses holds few ids.
type sentIDs struct {
	ids  []int64
	next int // where the next id goes once ids is full
}

// sentMemory is how many status ids a connection remembers having sent, so
// that resume, catch-up and live delivery never send one twice. The
// duplicates it catches are recent statuses (those posted around a resume),
// so a short memory, scanned in a few hundred nanoseconds, is enough.
const sentMemory = 512

func (s *sentIDs) has(id int64) bool {
	for _, x := range s.ids {
		if x == id {
			return true
		}
	}
	return false
}

func (s *sentIDs) add(id int64) {
	if len(s.ids) < sentMemory {
		s.ids = append(s.ids, id)
		return
	}
	s.ids[s.next] = id
	s.next = (s.next + 1) % sentMemory
}
