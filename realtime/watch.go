package realtime

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Streams that watch the global timeline get its new statuses and their
// deletions (global_status, global_status_deleted), which social publishes
// once each on the global channel. The instance subscribes to that channel
// only while at least one of its streams watches, and forwards each message
// as it came, marshalled once by its publisher, to every watcher: a slow
// one is closed as any slow stream is (conn.enqueue).
//
// A watch is answered with a watching frame once the channel's subscription
// is live (at once when it is live already): frames from then on reach the
// stream, and the client reads what came before from the timeline itself,
// after the newest status it holds. The frame comes again whenever Redis
// confirms the subscription anew after it was lost, since the stream may
// have missed frames meanwhile.

// A stream may watch one thread too (thread_status, thread_status_deleted):
// the replies of one conversation and its deletions, which social publishes
// on the thread's own channel. The instance subscribes to a thread's channel
// while any of its streams watches the thread, as to the global channel,
// and a watch of another thread replaces the stream's last one: what an
// instance subscribes to for watches is bounded by its streams, one thread
// each, whatever a client asks.

// watch adds c to the global timeline's watchers (on), or takes it out. The
// first watcher subscribes the instance to the global channel, and the last
// one gone unsubscribes it. Called by c's reader, which leave follows, or
// for a frame posted by REST (Send), which may come after leave: only a
// stream still among its user's connections is added, so a stream's watch
// never outlives it.
func (h *Hub) watch(c *conn, on bool) {
	h.mu.Lock()
	u := h.users[h.bus.UserChannel(c.uid)]
	if on && (u == nil || !hasConn(u, c)) {
		h.mu.Unlock()
		return
	}
	_, was := h.watchers[c]
	switch {
	case on:
		h.watchers[c] = u
		if h.watchLive(h.global) {
			c.enqueue(outgoing{frame: watchingGlobalFrame})
		}
	case was:
		delete(h.watchers, c)
	}
	first := on && !was && len(h.watchers) == 1
	last := !on && was && len(h.watchers) == 0
	h.mu.Unlock()
	if first || last {
		h.resync(h.global)
	}
}

// threadWatch is a stream's watch of a thread: the thread's channel, and
// the watching frame that tells the stream its watch is live.
type threadWatch struct {
	channel  string
	watching []byte
}

// watchThread makes c watch thread (on), in place of the thread it watched
// before, or stop watching it (thread 0: whichever it watches); an unwatch
// of a thread c does not watch (one sent before a watch of another, and
// overtaken) leaves c's watch alone. A thread's first watcher here
// subscribes the instance to its channel, and its last one gone
// unsubscribes it. Called as watch is, with the same guard: a stream's
// watch never outlives it.
func (h *Hub) watchThread(c *conn, thread int64, on bool) {
	channel := ""
	if thread != 0 {
		channel = h.bus.ThreadChannel(thread)
	}
	h.mu.Lock()
	u := h.users[h.bus.UserChannel(c.uid)]
	if on && (u == nil || !hasConn(u, c)) {
		h.mu.Unlock()
		return
	}
	var changed []string
	w := h.threadOf[c]
	replaced := w != nil && on && w.channel != channel
	stopped := w != nil && !on && (channel == "" || w.channel == channel)
	if replaced || stopped {
		if ch, last := h.unwatchThread(c, w); last {
			changed = append(changed, ch)
		}
		w = nil
	}
	if on {
		if w == nil {
			w = &threadWatch{channel: channel, watching: watchingThreadFrame(thread)}
			h.threadOf[c] = w
			watchers := h.threads[channel]
			if watchers == nil {
				watchers = map[*conn]*local{}
				h.threads[channel] = watchers
				changed = append(changed, channel)
			}
			watchers[c] = u
		}
		if h.watchLive(channel) {
			c.enqueue(outgoing{frame: w.watching})
		}
	}
	h.mu.Unlock()
	for _, ch := range changed {
		h.resync(ch)
	}
}

// unwatchThread takes c's watch w away; it returns w's channel and whether
// that was its last watcher here. Called with h.mu held.
func (h *Hub) unwatchThread(c *conn, w *threadWatch) (string, bool) {
	delete(h.threadOf, c)
	watchers := h.threads[w.channel]
	delete(watchers, c)
	if len(watchers) > 0 {
		return w.channel, false
	}
	delete(h.threads, w.channel)
	return w.channel, true
}

// watchConfirmed tells every watcher of channel, the global one or a
// thread's, that its watch is live: the channel's subscription was
// confirmed, for the first time or again. It reports whether channel is
// one streams watch. Called with h.mu held.
func (h *Hub) watchConfirmed(channel string) bool {
	var told func(*conn) []byte
	var watchers map[*conn]*local
	switch {
	case channel == h.global:
		watchers, told = h.watchers, func(*conn) []byte { return watchingGlobalFrame }
	case h.threads[channel] != nil:
		watchers, told = h.threads[channel], func(c *conn) []byte { return h.threadOf[c].watching }
	default:
		return false
	}
	if h.live[channel] {
		h.Stats.PubSubRestarts.Add(1)
		delete(h.lost, channel)
	}
	h.live[channel] = true
	for c := range watchers {
		c.enqueue(outgoing{frame: told(c)})
	}
	return true
}

// forwardWatched sends a message of a watched channel, the global one or a
// thread's, to each of its watchers; each watcher's writer leaves out a
// status whose author its user may not see (a block either way, a mute:
// conn.hidden). A status is not sent to the watchers of a user whose
// frames are held back after a pub/sub gap (local.checking): a block or a
// mute told during the gap may not be in their hidden sets yet. Those
// streams get a watching frame once the check has read the sets again
// (recheckChannels), the client's cue to read what it watches again, which
// the server filters. A deletion goes to every watcher, as it names no
// author.
func (h *Hub) forwardWatched(channel string, payload []byte) {
	var msg struct {
		Status *struct {
			UID int64 `json:"uid"`
		} `json:"status"`
	}
	// A message that does not parse goes as it came, as it did before
	// authors were read: it names none.
	if json.Unmarshal(payload, &msg) != nil || msg.Status == nil {
		msg.Status = &struct {
			UID int64 `json:"uid"`
		}{}
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	watchers := h.watchers
	if channel != h.global {
		watchers = h.threads[channel]
	}
	for c, u := range watchers {
		if u.checking && msg.Status.UID != 0 {
			u.watchHeld = true
			continue
		}
		c.enqueue(outgoing{frame: payload, author: msg.Status.UID})
	}
}

// watchesTold queues, on each of u's streams, a watching frame for what it
// watches, if its channel is live: the cue to read it again, after
// statuses were held back from it (forwardWatched). A channel not live
// yet tells its watchers once it is (watchConfirmed). Called with h.mu
// held.
func (h *Hub) watchesTold(u *local) {
	for c := range u.conns {
		if _, watching := h.watchers[c]; watching && h.watchLive(h.global) {
			c.enqueue(outgoing{frame: watchingGlobalFrame})
		}
		if w := h.threadOf[c]; w != nil && h.watchLive(w.channel) {
			c.enqueue(outgoing{frame: w.watching})
		}
	}
}

// watchLive reports whether a watched channel's subscription is live now:
// confirmed, and not lost since. Called with h.mu held.
func (h *Hub) watchLive(channel string) bool {
	_, lost := h.lost[channel]
	return h.live[channel] && !lost
}

// hiddenUpdate is a change of whom a stream's user may not see, queued as
// an outgoing item: the set read for the user (shared by their streams,
// and read only), or, with read, a read to make where the item stands in
// each stream's queue (hiddenRead).
type hiddenUpdate struct {
	set  map[int64]bool
	read *hiddenRead
}

// reloadHidden has the stream read its hidden set on its own (loadHidden);
// retryHidden too, queued by the retry after a read that failed.
var reloadHidden, retryHidden = &hiddenUpdate{}, &hiddenUpdate{}

// hiddenRead is one read of a user's hidden set shared by the user's
// streams: the first to reach it in its queue reads, for all, and the
// others take what it read. A change told while no stream has reached the
// read yet is seen by it (its read begins after), so it queues no other:
// a burst of changes (one account blocking and unblocking another over
// and over) makes each instance read a user's set about once for all the
// user's streams, not once a change for each stream.
type hiddenRead struct {
	begun atomic.Bool
	done  chan struct{} // closed once the read is over
	set   map[int64]bool
	err   error
}

// hiddenChanged has each of u's streams read again whom the user may not
// see (a hidden_changed message), where the message stands in each one's
// queue: by the read not yet begun, if one is queued, else a new one.
// Called with h.mu held (read-locked).
func (h *Hub) hiddenChanged(u *local) {
	u.hiddenChanges.Add(1)
	r := u.hiddenRead.Load()
	if r == nil || r.begun.Load() {
		r = &hiddenRead{done: make(chan struct{})}
		u.hiddenRead.Store(r)
	}
	// Queued again though it was: a stream opened since takes it too, and
	// a stream that reaches it twice reads once.
	update := &hiddenUpdate{read: r}
	for c := range u.conns {
		c.enqueue(outgoing{hidden: update})
	}
}

// hiddenReadTimeout bounds a read of a user's hidden set.
const hiddenReadTimeout = 10 * time.Second

// loadShared sets c.hidden from the shared read r, reading it when c is
// the first of its user's streams to reach it, to its end though c closes
// meanwhile: the others wait for it. A read that failed leaves each stream
// to read on its own (loadHidden); a stream closing while it waits reports
// false.
func (c *conn) loadShared(r *hiddenRead) bool {
	if c.isClosed() {
		return false // not to begin a read for the others
	}
	if r.begun.CompareAndSwap(false, true) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.life), hiddenReadTimeout)
		ids, err := c.hub.feed.HiddenAuthors(ctx, c.uid)
		cancel()
		r.set, r.err = hiddenSet(ids), err
		close(r.done)
	} else {
		select {
		case <-r.done:
		case <-c.life.Done():
			return false
		}
	}
	if r.err != nil {
		return c.loadHidden()
	}
	c.hidden = r.set
	return true
}

// loadHidden reads the authors c's user may not see into c.hidden. Run by
// c's writer, in queue order. A failed read keeps what was read before,
// the stream staying up, and is tried again (hiddenRetryAfter) until one
// succeeds or the stream closes: the change it was to see (a block, a
// mute) is told once, and until a read sees it the stream would send the
// statuses it hides.
func (c *conn) loadHidden() bool {
	ctx, cancel := context.WithTimeout(c.life, hiddenReadTimeout)
	ids, err := c.hub.feed.HiddenAuthors(ctx, c.uid)
	cancel()
	if err != nil {
		if c.life.Err() != nil {
			return false
		}
		if c.hiddenRetry {
			return true // the retry planned reads again
		}
		wait := hiddenRetryAfter(c.hiddenFails)
		c.hiddenFails = min(c.hiddenFails+1, 8)
		c.hiddenRetry = true
		c.hub.log.Warn("could not read whom a stream's user may not see; trying again", "uid", c.uid, "in", wait, "err", err)
		time.AfterFunc(wait, func() { c.enqueue(outgoing{hidden: retryHidden}) })
		return true
	}
	c.hiddenFails = 0
	c.hidden = hiddenSet(ids)
	return true
}

// hiddenRetryAfter is how long a stream waits before it reads its hidden
// set again after fails reads failed in a row: a second, doubled each time
// up to half a minute, with a quarter of it at random, so that the
// streams of an instance whose reads failed together (Redis away) do not
// all come back at once.
func hiddenRetryAfter(fails uint8) time.Duration {
	d := min(time.Second<<fails, 30*time.Second)
	return d - rand.N(d/4)
}

// hiddenSet is the set of ids, nil for none: most users hide no one, and
// their streams hold no map.
func hiddenSet(ids []int64) map[int64]bool {
	if len(ids) == 0 {
		return nil
	}
	hidden := make(map[int64]bool, len(ids))
	for _, id := range ids {
		hidden[id] = true
	}
	return hidden
}

// hasConn reports whether c is among u's connections. Called with h.mu held.
func hasConn(u *local, c *conn) bool {
	_, ok := u.conns[c]
	return ok
}
