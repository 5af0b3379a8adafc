package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// pendingUsers lists the accounts that wait for approval, oldest first:
// GET /admin/approvals, admins only.
func (s *Server) pendingUsers(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	users, err := s.social.PendingUsers(r.Context(), viewer.UID, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUsers(w, r, users)
}

// approve lets a pending account sign in: PUT /admin/approvals/{login},
// admins only.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	login := chi.URLParam(r, "login")
	if err := s.social.Approve(r.Context(), viewer.UID, login); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "sign-up approved", "request_id", middleware.GetReqID(r.Context()), "admin", viewer.UID, "login", login)
	w.WriteHeader(http.StatusNoContent)
}

// auditLog pages through the admin actions, newest first: GET /admin/log,
// admins only.
func (s *Server) auditLog(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	entries, err := s.social.AuditLog(r.Context(), viewer.UID, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
}
