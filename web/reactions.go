package web

import (
	"cmp"
	"context"
	"net/http"

	"chorus/social"
)

// react runs one of like, unlike, repost and undo on the status of the
// path as the viewer, and answers the status acted on (a repost entry's
// original), decorated with its counts and the viewer's state.
//
// An undo (undo set) answers so even for a status hidden from the viewer
// (its author muted, or in a block, since the like or repost): the undo
// did what it asked, and a 404 would have the client retry it for ever.
// A like or a repost of such a status is refused before it writes.
func (s *Server) react(act func(ctx context.Context, uid, id int64) (social.Status, error), undo bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		viewer, _ := viewerFrom(r.Context())
		id, ok := statusID(r)
		if !ok {
			s.writeError(w, r, errUnknownStatus)
			return
		}
		st, err := act(r.Context(), viewer.UID, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !undo {
			s.writeStatus(w, r, http.StatusOK, st)
			return
		}
		// Left out now only when its original is gone meanwhile.
		sts, err := s.social.DecorateHidden(r.Context(), viewer.UID, []social.Status{st})
		s.writeDecorated(w, r, http.StatusOK, sts, err)
	}
}

// reactors answers a page of who liked or who reposted the status of the
// path, newest first.
func (s *Server) reactors(list func(ctx context.Context, id int64, p social.Page) ([]social.User, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := statusID(r)
		if !ok {
			s.writeError(w, r, errUnknownStatus)
			return
		}
		p, err := pageParams(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.readable(r, id); err != nil {
			s.writeError(w, r, err)
			return
		}
		users, err := list(r.Context(), id, p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeUsers(w, r, users)
	}
}

// readable answers social.ErrStatusNotFound unless status id is one the
// viewer may read, as GET /statuses/{id} answers it: not one hidden from
// them (a block, a mute, a suspension).
func (s *Server) readable(r *http.Request, id int64) error {
	st, err := s.social.Status(r.Context(), id)
	if err != nil {
		return err
	}
	if sts, err := s.decorate(r, []social.Status{st}); err != nil || len(sts) == 0 {
		return cmp.Or(err, social.ErrStatusNotFound)
	}
	return nil
}

func (s *Server) reactLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "react", limit: s.limits.ReactionsPerUser, refused: &s.limitStats.reactions, user: byUser,
		message: "You are liking and reposting too fast.",
	})
}
