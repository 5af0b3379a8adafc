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
