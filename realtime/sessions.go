package realtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

const (
	// sessionCheckBatch is how many sessions one SessionOwners call reads,
	// in one pipelined round trip.
	sessionCheckBatch = 500
	// sessionCheckTimeout bounds one batch.
	sessionCheckTimeout = 5 * time.Second
	// recheckRetry is how long channels whose frames are held back wait
	// before a failed check of their sessions is tried again.
	recheckRetry = time.Second
)

// checkSessions closes, with 1008, the local connections whose session has
// ended without the hub being told: a sign-out whose publish came before the
// stream's subscription, a session lost with Redis's data, one that expired.
// Every SessionCheckInterval it checks them all; at once, those of the
// channels confirmed again after the pub/sub connection was lost, whose
// frames are held back until then.
func (h *Hub) checkSessions(ctx context.Context) {
	defer h.routerWG.Done()
	tick := time.NewTicker(h.opts.SessionCheckInterval)
	defer tick.Stop()
	var due <-chan time.Time // the check of the channels confirmed again
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := h.closeEnded(ctx, h.allConns()); err != nil && ctx.Err() == nil {
				h.log.Warn("session check failed; it runs again later", "err", err)
			}
			continue
		case <-h.recheck:
			if due == nil {
				due = time.After(catchUpSettle)
			}
			continue
		case <-due:
		}
		due = nil
		if err := h.recheckChannels(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("session check after a pub/sub reconnect failed; trying again", "err", err)
			due = time.After(recheckRetry)
		}
	}
}

// catchUpSettle is how long after a channel is confirmed again its streams
// wait before they catch up. A frame lost with the subscription may be of
// a status not yet in the home timeline: a post publishes its frames a
// round trip before its pushes (social's post path), and a catch-up read
// in between would miss the status for good. The frames that come
// meanwhile are held, and sent after the catch-up.
const catchUpSettle = time.Second

// recheckChannels checks the sessions of the channels confirmed again, and
// reads again whom their users may not see and which pulled authors they
// follow (a change may have been told while a channel was lost), then lets
// their frames through and has their remaining connections catch up, once
// the channels of the authors they follow now are live too. On failure the
// channels stay held back, to be checked again.
func (h *Hub) recheckChannels(ctx context.Context) error {
	type round struct {
		u           *local
		round       uint64
		changes     uint64 // u.hiddenChanges before hidden was read
		pullChanges uint64 // u.pullChanges before pulled was read
		hidden      *hiddenUpdate
		pulled      []int64
	}
	h.mu.Lock()
	rounds := map[string]*round{}
	var conns []*conn
	for channel := range h.unchecked {
		u := h.users[channel]
		if u == nil || !u.checking {
			continue
		}
		rounds[channel] = &round{u: u, round: u.checkRound, changes: u.hiddenChanges.Load(), pullChanges: u.pullChanges}
		conns = slices.AppendSeq(conns, maps.Keys(u.conns))
	}
	clear(h.unchecked)
	h.mu.Unlock()

	err := h.closeEnded(ctx, conns)
	for batch := range slices.Chunk(slices.Collect(maps.Values(rounds)), sessionCheckBatch) {
		if err != nil {
			break
		}
		uids := make([]int64, len(batch))
		for i, r := range batch {
			uids[i] = r.u.uid
		}
		var hidden, pulled [][]int64
		hidden, err = readEach(ctx, uids, "hidden sets", h.feed.HiddenAuthorsOf)
		if err == nil {
			pulled, err = readEach(ctx, uids, "pulled authors", h.feed.PulledAuthorsOf)
		}
		for i, r := range batch {
			if err == nil {
				r.hidden = &hiddenUpdate{set: hiddenSet(hidden[i])}
				r.pulled = pulled[i]
			}
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	for channel, r := range rounds {
		switch {
		case err != nil:
			h.unchecked[channel] = struct{}{}
			continue
		case h.users[channel] != r.u || r.u.checkRound != r.round:
			continue // another reconnect came meanwhile: its own check is to come
		case r.u.pullChanges != r.pullChanges:
			// A pulled author followed or unfollowed since the read, which
			// may not have seen it: read again.
			h.restart(r.u)
			continue
		}
		h.setPulls(r.u, r.pulled)
		if r.u.checkRound != r.round || h.holdsLost(r.u) || !h.pullsLive(r.u) {
			// Another check is to come: asked for by setPulls, or by the
			// confirmation of one of the user's channels still lost or not
			// yet live.
			continue
		}
		r.u.checking = false
		if r.u.hiddenChanges.Load() != r.changes {
			// A change told since the read, which may not have seen it:
			// each stream reads its own, after the change's.
			r.hidden = reloadHidden
		}
		for c := range r.u.conns {
			// Whom the user may not see first, then what they missed.
			c.enqueue(outgoing{hidden: r.hidden})
			c.enqueue(outgoing{catchUp: true})
		}
		// After the catch-up, which sends the statuses among them once
		// (each stream leaves out what it sent).
		for _, f := range r.u.held {
			h.deliver(r.u, f.ev, f.payload)
		}
		r.u.held = nil
		if r.u.watchHeld {
			// The statuses not sent meanwhile (forwardWatched): the
			// watching streams read what they watch again, after the
			// hidden sets queued above.
			r.u.watchHeld = false
			h.watchesTold(r.u)
		}
	}
	return err
}

// readEach reads, with read, what of each of uids (what names it), under
// sessionCheckTimeout.
func readEach(ctx context.Context, uids []int64, what string, read func(context.Context, []int64) ([][]int64, error)) ([][]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, sessionCheckTimeout)
	defer cancel()
	got, err := read(ctx, uids)
	if err == nil && len(got) != len(uids) {
		err = fmt.Errorf("%s of %d users for %d", what, len(got), len(uids))
	}
	return got, err
}

// closeEnded checks the sessions of conns, in batches, and closes with 1008
// those that ended or belong to another user.
func (h *Hub) closeEnded(ctx context.Context, conns []*conn) error {
	for batch := range slices.Chunk(conns, sessionCheckBatch) {
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = c.session
		}
		bctx, cancel := context.WithTimeout(ctx, sessionCheckTimeout)
		owners, err := h.feed.SessionOwners(bctx, ids)
		cancel()
		if err == nil && len(owners) != len(ids) {
			err = fmt.Errorf("%d owners for %d sessions", len(owners), len(ids))
		}
		if err != nil {
			return fmt.Errorf("check %d sessions: %w", len(ids), err)
		}
		for i, c := range batch {
			if owners[i] != c.uid {
				h.endSession(c, closeSessionEnded)
			}
		}
	}
	return nil
}

// endSession closes c, whose session has ended, with 1008, without waiting
// for the closing handshake.
func (h *Hub) endSession(c *conn, why closeReason) {
	c.closeSoon(why)
}

// allConns lists every local connection.
func (h *Hub) allConns() []*conn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var all []*conn
	for _, u := range h.users {
		all = slices.AppendSeq(all, maps.Keys(u.conns))
	}
	return all
}
