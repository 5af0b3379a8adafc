package web

import (
	"context"
	"net/http"
	"strconv"

	"chorus/social"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// fileReport files the viewer's report of an account: POST /reports
// {login, status_ids?, reason}.
func (s *Server) fileReport(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	var body struct {
		Login     *string `json:"login"`
		StatusIDs []int64 `json:"status_ids"`
		Reason    *string `json:"reason"`
	}
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case body.Login == nil:
		s.writeError(w, r, &social.InvalidError{Field: "login", Message: "is required"})
		return
	case body.Reason == nil:
		s.writeError(w, r, &social.InvalidError{Field: "reason", Message: "is required"})
		return
	}
	id, err := s.social.FileReport(r.Context(), viewer.UID, *body.Login, body.StatusIDs, *body.Reason)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "account reported", "report", id, "reporter", viewer.UID, "login", *body.Login)
	writeJSON(w, http.StatusCreated, map[string]any{"report": map[string]int64{"id": id}})
}

// adminReports answers the reports, open ones first: GET /admin/reports
// (?limit 1..20, default 20; ?offset), admins only.
func (s *Server) adminReports(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	limit, err := intParam(r, "limit", social.MaxReportsPage, 1, social.MaxReportsPage)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	offset, err := intParam(r, "offset", 0, 0, maxOffset)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reports, err := s.social.AdminReports(r.Context(), viewer.UID, int(offset), int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"reports": reports})
}

// resolveReport closes a report: POST /admin/reports/{id}/resolve, admins
// only.
func (s *Server) resolveReport(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		id = 0 // names no report: the admin check comes first, then 404
	}
	if err := s.social.AdminResolveReport(r.Context(), viewer.UID, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "report resolved", "request_id", middleware.GetReqID(r.Context()), "admin", viewer.UID, "report", id)
	w.WriteHeader(http.StatusNoContent)
}

// suspend and unsuspend: PUT and DELETE /admin/suspensions/{login}, admins
// only.
func (s *Server) suspend(w http.ResponseWriter, r *http.Request) {
	s.changeSuspension(w, r, s.social.AdminSuspend, "account suspended")
}

func (s *Server) unsuspend(w http.ResponseWriter, r *http.Request) {
	s.changeSuspension(w, r, s.social.AdminUnsuspend, "suspension lifted")
}

func (s *Server) changeSuspension(w http.ResponseWriter, r *http.Request,
	change func(ctx context.Context, uid int64, login string) error, what string) {
	viewer, _ := viewerFrom(r.Context())
	login := chi.URLParam(r, "login")
	if err := change(r.Context(), viewer.UID, login); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), what, "request_id", middleware.GetReqID(r.Context()), "admin", viewer.UID, "login", login)
	w.WriteHeader(http.StatusNoContent)
}

// suspendedUsers lists the suspended accounts, most recent first: GET
// /admin/suspensions, admins only. Each is shown as every list of users
// shows one (writeUsers, as /admin/approvals), its "suspended" kept.
func (s *Server) suspendedUsers(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	users, err := s.social.AdminSuspended(r.Context(), viewer.UID, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUsers(w, r, users)
}
