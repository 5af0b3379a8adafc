package web

import (
	"context"
	"net/http"

	"chorus/social"

	"github.com/go-chi/chi/v5"
)

// block, unblock, mute and unmute answer 204 however often they are asked:
// each is idempotent (social/block.go).
func (s *Server) block(w http.ResponseWriter, r *http.Request) {
	s.changeRelation(w, r, s.social.Block)
}

func (s *Server) unblock(w http.ResponseWriter, r *http.Request) {
	s.changeRelation(w, r, s.social.Unblock)
}

func (s *Server) mute(w http.ResponseWriter, r *http.Request) {
	s.changeRelation(w, r, s.social.Mute)
}

func (s *Server) unmute(w http.ResponseWriter, r *http.Request) {
	s.changeRelation(w, r, s.social.Unmute)
}

func (s *Server) changeRelation(w http.ResponseWriter, r *http.Request, change func(ctx context.Context, uid int64, login string) error) {
	viewer, _ := viewerFrom(r.Context())
	if err := change(r.Context(), viewer.UID, chi.URLParam(r, "login")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) blocks(w http.ResponseWriter, r *http.Request) {
	s.relationList(w, r, s.social.Blocks)
}

func (s *Server) mutes(w http.ResponseWriter, r *http.Request) {
	s.relationList(w, r, s.social.Mutes)
}

func (s *Server) relationList(w http.ResponseWriter, r *http.Request, list func(ctx context.Context, uid int64, p social.Page) ([]social.User, error)) {
	viewer, _ := viewerFrom(r.Context())
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	users, err := list(r.Context(), viewer.UID, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUsers(w, r, users)
}
