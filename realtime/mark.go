package realtime

// raiseStatusMark raises h.statusMark to id, a status id given already.
func (h *Hub) raiseStatusMark(id int64) {
	for {
		old := h.statusMark.Load()
		if id <= old || h.statusMark.CompareAndSwap(old, id) {
			return
		}
	}
}
