package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"chorus/social"

	"github.com/go-chi/chi/v5/middleware"
)

var (
	errWrongPassword        = newError(http.StatusUnauthorized, "invalid_credentials", "The current password is wrong.")
	errWrongAccountPassword = newError(http.StatusUnauthorized, "invalid_credentials", "The password is wrong.")
)

// editProfile changes the viewer's name, bio or both: PATCH /me {name?,
// bio?}, answered with the user as /me shows it.
func (s *Server) editProfile(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	var body struct {
		Name *string `json:"name"`
		Bio  *string `json:"bio"`
	}
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Name == nil && body.Bio == nil {
		s.writeError(w, r, &social.InvalidError{Field: "profile", Message: "edit needs a name, a bio or both"})
		return
	}
	u, err := s.social.EditProfile(r.Context(), viewer.UID, social.ProfileEdit{Name: body.Name, Bio: body.Bio})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeOwnUser(w, r, http.StatusOK, u)
}

// changePassword sets a new password: PUT /me/password {current, new}.
// Every other session of the viewer ends; this one stays.
func (s *Server) changePassword(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	var body struct {
		Current string `json:"current"`
		New     string `json:"new"`
	}
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	err := s.social.ChangePassword(r.Context(), viewer.UID, viewer.Token, body.Current, body.New, s.clientAddr(r))
	if errors.Is(err, social.ErrInvalidCredentials) {
		err = errWrongPassword
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "password changed", "request_id", middleware.GetReqID(r.Context()), "uid", viewer.UID)
	w.WriteHeader(http.StatusNoContent)
}

// exportTimeout bounds the writing of one export: it is not bound by the
// request timeout, which is sized for one page of anything, but by this,
// under the HTTP write timeout's 30 s. A client gone ends it sooner: its
// writes fail.
const exportTimeout = 25 * time.Second

// exportAccount answers GET /me/export: everything of the viewer's, as one
// JSON download, written as it is read.
func (s *Server) exportAccount(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	u, err := s.social.UserByID(r.Context(), viewer.UID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), exportTimeout)
	defer cancel()
	exportHeaders(w, u.Login)
	out := &startedWriter{w: w}
	if err := s.social.Export(ctx, viewer.UID, out); err != nil {
		if !out.started {
			// Nothing sent yet (the first 32 KiB are buffered): the
			// answer is an error, not an empty download.
			w.Header().Del("Content-Disposition")
			s.writeError(w, r, err)
			return
		}
		// The answer has begun: nothing but the log can tell of it, and
		// the client gets a document cut short, which no JSON reader
		// takes for whole.
		s.log.WarnContext(r.Context(), "export cut short", "request_id", middleware.GetReqID(r.Context()), "uid", viewer.UID, "err", err)
		return
	}
	s.log.InfoContext(r.Context(), "exported", "request_id", middleware.GetReqID(r.Context()), "uid", viewer.UID)
}

// exportHead answers HEAD /me/export with the download's headers, reading
// nothing and spending no export.
func (s *Server) exportHead(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	u, err := s.social.UserByID(r.Context(), viewer.UID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	exportHeaders(w, u.Login)
	w.WriteHeader(http.StatusOK)
}

// exportHeaders sets the headers of login's export download.
func exportHeaders(w http.ResponseWriter, login string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="chorus-`+login+`.json"`)
	w.Header().Set("Cache-Control", "no-store")
}

// startedWriter notes whether anything was written through it.
type startedWriter struct {
	w       io.Writer
	started bool
}

func (sw *startedWriter) Write(p []byte) (int, error) {
	sw.started = sw.started || len(p) > 0
	return sw.w.Write(p)
}

// deleteAccount deletes the viewer's account: DELETE /me {password}.
// Every session of it ends, this one included, so the cookie goes too.
func (s *Server) deleteAccount(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	var body struct {
		Password string `json:"password"`
	}
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	err := s.social.DeleteAccount(r.Context(), viewer.UID, body.Password, s.clientAddr(r))
	if errors.Is(err, social.ErrInvalidCredentials) {
		err = errWrongAccountPassword
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "account deleted", "request_id", middleware.GetReqID(r.Context()), "uid", viewer.UID)
	s.clearSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}
