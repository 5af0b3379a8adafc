package realtime

import "sync"

// queue is a connection's bounded FIFO of outgoing items, drained by a
// goroutine that runs only while items wait. Pushing never blocks. An idle
// connection holds neither a buffer nor a writer goroutine: a channel of the
// same bound would hold its whole buffer, and a standing writer its stack,
// for the connection's life. The buffers items wait in come from batches,
// shared by the instance's queues, and go back once drained.
type queue struct {
	mu       sync.Mutex
	items    *[]outgoing // nil while none wait
	draining *[]outgoing // what next gave the drainer last, back to batches at its next call
	limit    int
	state    drainState
	drainers sync.WaitGroup // the drainer running, if any
}

// batches holds the buffers of items, so that a frame queued for a stream
// allocates none.
var batches = sync.Pool{New: func() any { return new([]outgoing) }}

type drainState int

const (
	held     drainState = iota // no drainer may start: before the stream opens, and once it ends
	idle                       // no drainer runs; the next push starts one
	draining                   // a drainer runs and takes what is pushed
)

func newQueue(limit int) *queue { return &queue{limit: limit} }

// push adds o unless limit items already wait, and reports whether it did
// and whether the caller must start a drainer (counted in q.drainers).
func (q *queue) push(o outgoing) (ok, start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.items == nil {
		q.items = batches.Get().(*[]outgoing)
	}
	if len(*q.items) >= q.limit {
		return false, false
	}
	*q.items = append(*q.items, o)
	return true, q.startLocked()
}

// release lets drainers start, and reports whether the caller must start
// one for items pushed meanwhile.
func (q *queue) release() (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state != held {
		return false
	}
	q.state = idle
	return q.startLocked()
}

func (q *queue) startLocked() bool {
	if q.state != idle || q.items == nil || len(*q.items) == 0 {
		return false
	}
	q.state = draining
	q.drainers.Add(1)
	return true
}

// next removes and returns every waiting item, oldest first, and takes back
// the items it returned before, which the drainer is done with. With none
// waiting (or the queue held) it returns nil, and the drainer must end.
func (q *queue) next() []outgoing {
	q.mu.Lock()
	defer q.mu.Unlock()
	if done := q.draining; done != nil {
		clear(*done) // the frames go with the items
		*done = (*done)[:0]
		batches.Put(done)
		q.draining = nil
	}
	if q.state != draining {
		return nil
	}
	if q.items == nil || len(*q.items) == 0 {
		q.state = idle
		return nil
	}
	q.draining, q.items = q.items, nil
	return *q.draining
}

// hold stops drainers from starting and waits for the one running.
func (q *queue) hold() {
	q.mu.Lock()
	q.state = held
	q.mu.Unlock()
	q.drainers.Wait()
}
