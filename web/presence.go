package web

import (
	"context"
	"net/http"
	"time"

	"chorus/realtime"
	"chorus/social"
)

func (s *Server) onlineFriends(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	friends, err := realtime.OnlineFriends(r.Context(), s.social, s.presence, viewer.UID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"friends": friends})
}

func (s *Server) sitePresence(w http.ResponseWriter, r *http.Request) {
	counts, err := s.presence.Counts(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, counts)
}

// serveStream hands a request whose session and limits admit it
// (streamAdmission), from an allowed origin, to the live stream, which
// upgrades it, or sends it as Server-Sent Events (serveEvents). The stream
// outlives the HTTP timeouts: its own heartbeats and write deadlines bound
// it.
func (s *Server) serveStream(admission *streamAdmission) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, byCookie, ok := s.requireCredentials(w, r)
		if !ok {
			return
		}
		if r.Method == http.MethodHead {
			s.streamHead(w, r) // opens nothing: admitted nowhere
			return
		}
		uid, ok := admission.admit(w, r, token, byCookie)
		if !ok {
			return
		}
		viewer := Viewer{UID: uid, Token: token, ByCookie: byCookie}
		s.openStream(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, viewer)), viewer)
	}
}

// openStream opens the stream of viewer, admitted.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request, viewer Viewer) {
	if !s.originAllowed(r) {
		s.writeError(w, r, errBadStreamOrigin)
		return
	}
	if wantsEvents(r) {
		s.serveEvents(w, r)
		return
	}
	rc := http.NewResponseController(w)
	// A writer without deadlines (a test recorder) has none to lift.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	if err := s.stream.Serve(w, r, viewer.UID, social.SessionID(viewer.Token)); err != nil {
		s.writeError(w, r, err)
	}
}
