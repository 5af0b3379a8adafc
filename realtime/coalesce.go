package realtime

import (
	"sync"
	"time"
)

// presenceGap is the least time between two presence frames about one user
// to one connection. A user coming and going faster (a flaky network, a
// reconnect storm after an instance restart) costs their friends one frame a
// second at most, the newest state.
const presenceGap = time.Second

// presenceGate coalesces one connection's presence frames per user: a frame
// about a user told less than presenceGap ago is held back, and replaced by
// any newer one, until the gap is over.
type presenceGate struct {
	mu      sync.Mutex
	sent    map[int64]sentPresence // per user: the last frame let through
	pending map[int64]heldPresence // per user: the newest frame held back
}

type sentPresence struct {
	at     time.Time
	online bool
	// removed: a friend_removed about the user went after it, so the
	// client no longer holds what it told.
	removed bool
}

type heldPresence struct {
	frame  []byte
	online bool
}

// enqueuePresence sends, or holds back, a presence frame about uid. Each
// frame held back and then not sent is counted once, as coalesced (see
// Stats.PresenceCoalesced): here the one a newer frame replaces.
func (c *conn) enqueuePresence(uid int64, online bool, frame []byte) {
	g := &c.presence
	now := time.Now()
	g.mu.Lock()
	if _, held := g.pending[uid]; held {
		g.pending[uid] = heldPresence{frame, online}
		g.mu.Unlock()
		c.hub.Stats.PresenceCoalesced.Add(1)
		return
	}
	last, told := g.sent[uid]
	if told && now.Sub(last.at) < presenceGap {
		if g.pending == nil {
			g.pending = map[int64]heldPresence{}
		}
		g.pending[uid] = heldPresence{frame, online}
		g.mu.Unlock()
		time.AfterFunc(presenceGap-now.Sub(last.at), func() { c.flushPresence(uid) })
		return
	}
	g.remember(uid, now, online)
	g.mu.Unlock()
	c.enqueue(outgoing{frame: frame})
}

// flushPresence sends the frame held back about uid, unless it tells what
// the last frame sent told already, when it is counted as coalesced; with
// none held (drop took it) it does nothing. It is queued under the gate's
// lock: a friend_removed about uid, queued after drop takes that lock,
// comes after it, or finds it gone.
func (c *conn) flushPresence(uid int64) {
	g := &c.presence
	g.mu.Lock()
	defer g.mu.Unlock()
	held, send := g.flushLocked(uid, time.Now())
	switch {
	case send:
		c.enqueue(outgoing{frame: held.frame})
	case held.frame != nil:
		c.hub.Stats.PresenceCoalesced.Add(1)
	}
}

// flush takes the frame held back about uid, at now, and reports whether it
// is to be sent: not when there is none (drop took it; held is then the
// zero value), nor when the last frame let through told the same and no
// friend_removed came since.
func (g *presenceGate) flush(uid int64, now time.Time) (held heldPresence, send bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.flushLocked(uid, now)
}

// flushLocked is flush with g.mu held.
func (g *presenceGate) flushLocked(uid int64, now time.Time) (held heldPresence, send bool) {
	held, ok := g.pending[uid]
	if !ok {
		return held, false
	}
	delete(g.pending, uid)
	last, told := g.sent[uid]
	g.remember(uid, now, held.online)
	return held, !told || last.removed || last.online != held.online
}

// drop forgets the frame held back about uid, if any, and reports whether
// there was one, and forgets that the last one let through was told. A
// friend_removed about uid is on its way to the stream: what presence said
// of uid before it must not come after it, or the friends list would take
// uid back; and the client forgets it, so the next frame (a friendship made
// again) is sent even when it tells the same.
func (g *presenceGate) drop(uid int64) (dropped bool) {
	g.mu.Lock()
	_, dropped = g.pending[uid]
	delete(g.pending, uid)
	if last, told := g.sent[uid]; told {
		last.removed = true
		g.sent[uid] = last
	}
	g.mu.Unlock()
	return dropped
}

// remember notes a frame let through; entries older than the gap are
// dropped now and then, so the map holds only the users of the last second
// (and those with a frame held back, whose flush compares with theirs).
func (g *presenceGate) remember(uid int64, at time.Time, online bool) {
	if g.sent == nil {
		g.sent = map[int64]sentPresence{}
	}
	if len(g.sent) >= 64 {
		for id, s := range g.sent {
			if _, held := g.pending[id]; !held && at.Sub(s.at) >= presenceGap {
				delete(g.sent, id)
			}
		}
	}
	g.sent[uid] = sentPresence{at: at, online: online}
}
