package web

import (
	"errors"
	"net/http"
	"strconv"

	"chorus/social"

	"github.com/go-chi/chi/v5"
)

type statusPage struct {
	Statuses   []social.Status `json:"statuses"`
	NextBefore *int64          `json:"next_before"`
	NextAfter  *int64          `json:"next_after,omitempty"`
}

// post answers POST /statuses. Its session is checked in the post's first
// round trip to Redis, with its rate limit and the post's reads (see
// social.PostAs), rather than before, as authenticate does: a request
// refused before that (bad origin, bad body) has its session read first,
// so that a request without a valid session is always answered 401.
func (s *Server) post(limit *queuedLimit) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, byCookie, ok := s.requireCredentials(w, r)
		if !ok {
			return
		}
		// refuse answers err once the session is known to be good.
		refuse := func(err error) {
			if _, ok := s.authenticated(w, r, token, byCookie, nil); ok {
				s.writeError(w, r, err)
			}
		}
		if byCookie && !s.originAllowed(r) {
			refuse(errBadOrigin)
			return
		}
		if !limit.passGate(w, r) || !s.passEnded(w, r) {
			return
		}
		var body struct {
			Message *string `json:"message"`
			ReplyTo *int64  `json:"reply_to"`
		}
		if err := decode(r, &body); err != nil {
			refuse(err)
			return
		}
		if body.Message == nil {
			refuse(&social.InvalidError{Field: "message", Message: "is required"})
			return
		}
		var replyTo int64
		if body.ReplyTo != nil {
			if replyTo = *body.ReplyTo; replyTo <= 0 {
				refuse(&social.InvalidError{Field: "reply_to", Message: "must be a status id"})
				return
			}
		}
		st, err := s.social.PostAs(r.Context(), social.PostRequest{
			Token: token, ReplyTo: replyTo, Message: *body.Message, Admit: limit.admit(),
		})
		if errors.Is(err, social.ErrUnauthenticated) {
			s.noteEnded(r)
			if byCookie {
				s.clearSessionCookie(w, r)
			}
		}
		if replyTo != 0 && errors.Is(err, social.ErrStatusNotFound) {
			err = errUnknownParent
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		noteUser(r.Context(), st.UID)
		s.metrics.posted.Inc()
		// A new status has no replies, likes or reposts yet: nothing to read.
		no := false
		st.Liked, st.Reposted = &no, &no
		writeJSON(w, http.StatusCreated, map[string]any{"status": st})
	}
}

// statusID parses the {id} of the path; an id that is not a positive number
// names no status.
func statusID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	return id, err == nil && id > 0
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	id, ok := statusID(r)
	if !ok {
		s.writeError(w, r, errUnknownStatus)
		return
	}
	st, err := s.social.Status(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeStatus(w, r, http.StatusOK, st)
}

// writeStatus answers {"status": st}, decorated for the viewer; a repost
// whose original is gone is not found.
func (s *Server) writeStatus(w http.ResponseWriter, r *http.Request, code int, st social.Status) {
	sts, err := s.decorate(r, []social.Status{st})
	s.writeDecorated(w, r, code, sts, err)
}

// writeDecorated answers the one status of sts, decorated (err: how that
// failed), or 404 when the decoration left it out.
func (s *Server) writeDecorated(w http.ResponseWriter, r *http.Request, code int, sts []social.Status, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(sts) == 0 {
		s.writeError(w, r, social.ErrStatusNotFound)
		return
	}
	writeJSON(w, code, map[string]any{"status": sts[0]})
}

// decorate fills in the counts, reposts' originals and the viewer's own
// likes and reposts (see social.Service.Decorate).
func (s *Server) decorate(r *http.Request, sts []social.Status) ([]social.Status, error) {
	viewer, _ := viewerFrom(r.Context())
	return s.social.Decorate(r.Context(), viewer.UID, sts)
}

func (s *Server) deleteStatus(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	id, ok := statusID(r)
	if !ok {
		s.writeError(w, r, errUnknownStatus)
		return
	}
	if err := s.social.DeleteStatus(r.Context(), viewer.UID, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) homeTimeline(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	s.timeline(w, r, func(c social.Cursor) (social.TimelinePage, error) {
		return s.social.HomeTimeline(r.Context(), viewer.UID, c)
	})
}

func (s *Server) profileTimeline(w http.ResponseWriter, r *http.Request) {
	s.timeline(w, r, func(c social.Cursor) (social.TimelinePage, error) {
		return s.social.ProfileTimeline(r.Context(), chi.URLParam(r, "login"), c)
	})
}

func (s *Server) globalTimeline(w http.ResponseWriter, r *http.Request) {
	s.timeline(w, r, func(c social.Cursor) (social.TimelinePage, error) {
		return s.social.GlobalTimeline(r.Context(), c)
	})
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request, read func(social.Cursor) (social.TimelinePage, error)) {
	c, err := cursorParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := read(c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if page.Statuses, err = s.decorate(r, page.Statuses); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, statusPage{Statuses: page.Statuses, NextBefore: page.NextBefore, NextAfter: page.NextAfter})
}

// statusContext answers the thread around a status (social.Service.Context),
// decorated for the viewer, of a status the viewer may read.
func (s *Server) statusContext(w http.ResponseWriter, r *http.Request) {
	id, ok := statusID(r)
	if !ok {
		s.writeError(w, r, errUnknownStatus)
		return
	}
	if err := s.readable(r, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.social.Context(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ancestor := make(map[int64]bool, len(t.Ancestors))
	for _, a := range t.Ancestors {
		ancestor[a.ID] = true
	}
	all, err := s.decorate(r, append(t.Ancestors, t.Descendants...))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Decorate leaves statuses in order, leaving out those the viewer may
	// not see (and reposts, which a thread does not hold).
	n := 0
	for n < len(all) && ancestor[all[n].ID] {
		n++
	}
	// Of the statuses whose replies the context did not read whole, those
	// the viewer sees that have some: the status itself (a repost's
	// original) and the descendants decoration kept, with replies.
	left := make(map[int64]bool, len(t.Descendants))
	for _, d := range t.Descendants {
		left[d.ID] = true // out, unless shown with replies
	}
	for _, d := range all[n:] {
		left[d.ID] = d.Replies == 0
	}
	more := []int64{}
	for _, m := range t.More {
		if !left[m] {
			more = append(more, m)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"thread":       t.ID,
		"ancestors":    all[:n],
		"descendants":  all[n:],
		"more_replies": more,
	})
}
