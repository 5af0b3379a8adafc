package web

import (
	"encoding/json"
	"net/http"
	"strconv"

	"chorus/protocol"
	"chorus/social"
)

type notificationPage struct {
	Notifications []notificationView `json:"notifications"`
	NextBefore    *int64             `json:"next_before"`
	UpTo          *int64             `json:"up_to"`
}

// notificationView is a notification as a page shows it: its sender as
// every user object of a list, with how the viewer stands to them.
type notificationView struct {
	social.Notification
	From protocol.UserView `json:"from"`
}

// notifications answers a page of the viewer's notifications, newest first.
func (s *Server) notifications(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	limit, err := intParam(r, "limit", defaultLimit, 1, maxLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	before, err := intParam(r, "before", 0, 1, 1<<53)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.social.Notifications(r.Context(), viewer.UID, before, int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	senders := make([]social.User, len(page.Notifications))
	for i, n := range page.Notifications {
		senders[i] = n.From
	}
	views, err := s.views(r, senders)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]notificationView, len(page.Notifications))
	for i, n := range page.Notifications {
		out[i] = notificationView{Notification: n, From: views[i]}
	}
	writeJSON(w, http.StatusOK, notificationPage{Notifications: out, NextBefore: page.NextBefore, UpTo: page.UpTo})
}

// unreadNotifications answers how many of the viewer's notifications are
// past the read marker, and the marker (null before anything is read).
func (s *Server) unreadNotifications(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	count, last, err := s.social.UnreadNotifications(r.Context(), viewer.UID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var lastRead *int64
	if last > 0 {
		lastRead = &last
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": count, "last_read": lastRead})
}

// readNotifications moves the viewer's read marker up to the body's up_to.
func (s *Server) readNotifications(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	var body struct {
		UpTo json.RawMessage `json:"up_to"`
	}
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(body.UpTo) == 0 || string(body.UpTo) == "null" {
		s.writeError(w, r, &social.InvalidError{Field: "up_to", Message: "is required"})
		return
	}
	// Read as text, so that a string, a fraction or a number past int64
	// gets this field's error rather than the decoder's.
	upTo, err := strconv.ParseInt(string(body.UpTo), 10, 64)
	if err != nil || upTo < 1 {
		s.writeError(w, r, &social.InvalidError{Field: "up_to", Message: "must be a positive whole number"})
		return
	}
	if _, err := s.social.MarkNotificationsRead(r.Context(), viewer.UID, upTo); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
