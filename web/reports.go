package web

import (
	"net/http"

	"chorus/social"
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
