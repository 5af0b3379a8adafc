package web

import (
	"context"
	"net/http"
	"strconv"

	"chorus/social"

	"github.com/go-chi/chi/v5"
)

// listID parses the {id} of the path; an id that is not a positive number
// names no list.
func listID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errUnknownList
	}
	return id, nil
}

// listName reads the {"name"} body of a list's creation or rename.
func listName(r *http.Request) (string, error) {
	var body struct {
		Name *string `json:"name"`
	}
	if err := decode(r, &body); err != nil {
		return "", err
	}
	if body.Name == nil {
		return "", &social.InvalidError{Field: "name", Message: "is required"}
	}
	return *body.Name, nil
}

func (s *Server) createList(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	name, err := listName(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.social.CreateList(r.Context(), viewer.UID, name)
	s.writeList(w, r, http.StatusCreated, l, err)
}

func (s *Server) myLists(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	lists, err := s.social.Lists(r.Context(), viewer.UID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lists": lists})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	id, err := listID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	viewer, _ := viewerFrom(r.Context())
	l, err := s.social.List(r.Context(), viewer.UID, id)
	s.writeList(w, r, http.StatusOK, l, err)
}

func (s *Server) renameList(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	id, err := listID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name, err := listName(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.social.RenameList(r.Context(), viewer.UID, id, name)
	s.writeList(w, r, http.StatusOK, l, err)
}

func (s *Server) deleteList(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	id, err := listID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.social.DeleteList(r.Context(), viewer.UID, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	id, err := listID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	viewer, _ := viewerFrom(r.Context())
	users, err := s.social.ListMembers(r.Context(), viewer.UID, id, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUsers(w, r, users)
}

func (s *Server) addListMember(w http.ResponseWriter, r *http.Request) {
	s.changeListMember(w, r, s.social.AddListMember)
}

func (s *Server) removeListMember(w http.ResponseWriter, r *http.Request) {
	s.changeListMember(w, r, s.social.RemoveListMember)
}

// changeListMember adds or removes the {login} of the path in list {id},
// and answers the list as it is then.
func (s *Server) changeListMember(w http.ResponseWriter, r *http.Request,
	change func(ctx context.Context, uid, id int64, login string) (social.List, error)) {
	viewer, _ := viewerFrom(r.Context())
	id, err := listID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := change(r.Context(), viewer.UID, id, chi.URLParam(r, "login"))
	s.writeList(w, r, http.StatusOK, l, err)
}

func (s *Server) listTimeline(w http.ResponseWriter, r *http.Request) {
	id, err := listID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	viewer, _ := viewerFrom(r.Context())
	s.timeline(w, r, func(c social.Cursor) (social.TimelinePage, error) {
		return s.social.ListTimeline(r.Context(), viewer.UID, id, c)
	})
}

// writeList answers {"list": l} with status, or err when there is one.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, status int, l social.List, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"list": l})
}
