package realtime

import "sync"

// channelChanges are the channels whose subscription may need to change,
// each held once however often it changed, until the subscriber takes them.
// Adding one never blocks: the router adds them (a pulled author followed
// or unfollowed) and must never wait for the subscriber, which may itself
// be waiting for the router (on a cluster, the sharded pub/sub hands the
// router its messages and takes the subscriber's commands on one
// goroutine). It holds at most the channels of the instance's users and
// pulled authors.
type channelChanges struct {
	mu      sync.Mutex // taken under no lock or under Hub.mu, and takes none (locks.go)
	pending map[string]struct{}
	wake    chan struct{} // one slot: channels were added since the subscriber last looked
}

func newChannelChanges() *channelChanges {
	return &channelChanges{pending: map[string]struct{}{}, wake: make(chan struct{}, 1)}
}

// add holds channel for the subscriber, and wakes it.
func (q *channelChanges) add(channel string) {
	q.mu.Lock()
	q.pending[channel] = struct{}{}
	q.mu.Unlock()
	q.signal()
}

func (q *channelChanges) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waiting is how many channels are held.
func (q *channelChanges) waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// take moves held channels into batch until it holds n; any left wake the
// subscriber again.
func (q *channelChanges) take(batch map[string]struct{}, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for channel := range q.pending {
		if len(batch) >= n {
			q.signal()
			return
		}
		batch[channel] = struct{}{}
		delete(q.pending, channel)
	}
}
