package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"chorus/protocol"
	"chorus/realtime"
	"chorus/social"

	"github.com/go-chi/chi/v5"
)

// The stream as Server-Sent Events (realtime/events.go), for clients whose
// WebSockets are blocked: GET /api/v1/stream with Accept:
// text/event-stream, and POST /api/v1/stream/{stream} for the frames such a
// client would send on a WebSocket.

// Errors of the event stream and of the frames posted for a stream.
var (
	errBadLastEventID = newError(http.StatusBadRequest, "invalid_last_event_id",
		"Last-Event-ID must be a status id, a whole number from 0.")
	errBadStreamAfter = newError(http.StatusBadRequest, "invalid_after",
		"The after must be a status id, a whole number from 0.")
	errUnknownStream = newError(http.StatusNotFound, "unknown_stream",
		"No stream of yours has this id; open the stream again.")
	errEventsHTTP1 = newError(http.StatusHTTPVersionNotSupported, "http1_required",
		"Server-Sent Events are served over HTTP/1.1 here; use it, or the WebSocket.")
)

// wantsEvents reports whether a request of the stream asks for Server-Sent
// Events rather than a WebSocket: a WebSocket handshake is one whatever it
// accepts.
func wantsEvents(r *http.Request) bool {
	return !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/event-stream")
}

// serveEvents runs the stream as Server-Sent Events for an authenticated
// request from an allowed origin. Last-Event-ID, or the query's after when
// there is none (a new EventSource cannot set headers), resumes it.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	after, resume, err := eventsResume(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if r.ProtoMajor != 1 {
		// The stream takes the connection over, which HTTP/2 does not allow.
		s.writeError(w, r, errEventsHTTP1)
		return
	}
	rc := http.NewResponseController(w)
	// A writer without deadlines (a test recorder) has none to lift; the
	// stream puts its own on each write.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	err = s.stream.ServeEvents(w, r, viewer.UID, social.SessionID(viewer.Token), after, resume)
	if err != nil {
		s.writeError(w, r, err)
	}
}

// streamHead answers a HEAD of the stream with the status and headers a GET
// would begin with, opening nothing: before the stream's admission, so that
// it costs Redis nothing and counts toward no limit, and without checking
// the session, which only opening would.
func (s *Server) streamHead(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r) {
		s.writeError(w, r, errBadStreamOrigin)
		return
	}
	if !wantsEvents(r) {
		s.writeError(w, r, errNotWebSocket)
		return
	}
	if _, _, err := eventsResume(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	realtime.EventStreamHeader(w.Header())
	w.WriteHeader(http.StatusOK)
}

// eventsResume reads where an event stream resumes: after the status id in
// Last-Event-ID, else in the query's after; resume is false with neither.
func eventsResume(r *http.Request) (after int64, resume bool, err error) {
	raw, bad := r.Header.Get("Last-Event-ID"), errBadLastEventID
	if raw == "" {
		raw, bad = r.URL.Query().Get("after"), errBadStreamAfter
		if raw == "" {
			return 0, false, nil
		}
	}
	n, err := strconv.ParseUint(raw, 10, 63)
	if err != nil {
		return 0, false, bad
	}
	return int64(n), true, nil
}

// sendStreamFrame hands one of the viewer's streams a frame its client
// would send on a WebSocket (heartbeat, resume, watch, unwatch), as the
// body: 202 once it is on its way; what the frame asks then fails, if it
// does, on the stream as an error frame.
func (s *Server) sendStreamFrame(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	var f protocol.ClientFrame
	if err := decode(r, &f); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.stream.Send(r.Context(), viewer.UID, chi.URLParam(r, "stream"), f); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
