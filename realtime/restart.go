package realtime

import "chorus/bus"

// When a subscription is lost and made again, a channel's streams may have
// missed frames. On one Redis every channel goes with the one connection, so
// nothing reaches any stream until Redis confirms them all again; then each
// user's frames are held back until their sessions are checked and their
// streams have caught up on the home timeline after the newest status they
// were sent. On a cluster one master's channels can go while the others
// carry on; a user whose own channel and pulled authors' channels live on
// different masters would be sent newer statuses on the channels still
// there, and their catch-up would start after those, past what the lost one
// missed. So the hub is told at once which channels a cluster lost, and
// holds back the frames of their users until each is confirmed again.
// A status can still be published after a newer one reached the stream (it
// was given its id first, and its publish waited out a failover), so the
// catch-up also looks one page back for statuses not sent (conn.catchUp).

// lose holds back the frames of the users of channels, live channels whose
// subscription a cluster lost, until they are confirmed again.
func (h *Hub) lose(channels bus.LostChannels) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range channels {
		if !h.live[ch] {
			continue // never confirmed: streams still wait for it
		}
		h.lost[ch] = struct{}{}
		if r := h.authors[ch]; r != nil {
			for _, u := range r.users {
				u.checking = true
			}
		}
		if u := h.users[ch]; u != nil {
			u.checking = true
		}
	}
}

// restart holds back u's frames until the session checker has checked its
// sessions and, none of its channels lost any more, let its streams catch
// up: one of them was confirmed again. Called with h.mu held.
func (h *Hub) restart(u *local) {
	u.checking = true
	u.checkRound++
	h.unchecked[h.bus.UserChannel(u.uid)] = struct{}{}
	select {
	case h.recheck <- struct{}{}:
	default: // the checker is woken already
	}
}

// holdsLost reports whether u's own channel, or one of its pulled authors',
// is lost. Called with h.mu held.
func (h *Hub) holdsLost(u *local) bool {
	if len(h.lost) == 0 {
		return false
	}
	if _, lost := h.lost[h.bus.UserChannel(u.uid)]; lost {
		return true
	}
	for author := range u.pulls {
		if _, lost := h.lost[h.bus.AuthorChannel(author)]; lost {
			return true
		}
	}
	return false
}

// setPulls makes authors u's pulled authors, read again after one of u's
// channels was confirmed again: a pull_added or pull_removed may have been
// lost meanwhile. The channels that gain their first reader or lose their
// last are brought in line. Called with h.mu held.
func (h *Hub) setPulls(u *local, authors []int64) {
	read := make(map[int64]struct{}, len(authors))
	for _, author := range authors {
		read[author] = struct{}{}
		if _, ok := u.pulls[author]; ok {
			continue
		}
		if ch, first := h.addPull(u, author); first {
			h.resync(ch)
		}
	}
	for author := range u.pulls {
		if _, ok := read[author]; ok {
			continue
		}
		if ch, last := h.removePull(u, author); last {
			h.resync(ch)
		}
	}
}

// pullsLive reports whether the channels of all u's pulled authors are
// live: a stream's catch-up before one is would miss that author's
// statuses posted until it is. Called with h.mu held.
func (h *Hub) pullsLive(u *local) bool {
	for author := range u.pulls {
		if !h.live[h.bus.AuthorChannel(author)] {
			return false
		}
	}
	return true
}
