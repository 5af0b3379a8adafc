package web

import (
	"net/http"

	"chorus/protocol"
	"chorus/social"
)

// Limits of the finding-people endpoints.
const (
	defaultSearchLimit      = 10
	defaultSuggestionsLimit = 10
)

var errMissingQuery = newError(http.StatusBadRequest, "invalid_q", "Give the start of a login or name to search for, as ?q=.")

// searchUsers finds users by the start of their login or name.
func (s *Server) searchUsers(w http.ResponseWriter, r *http.Request) {
	if !r.URL.Query().Has("q") {
		s.writeError(w, r, errMissingQuery)
		return
	}
	limit, err := intParam(r, "limit", defaultSearchLimit, 1, social.MaxSearchLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	viewer, _ := viewerFrom(r.Context())
	users, err := s.social.SearchUsers(r.Context(), viewer.UID, r.URL.Query().Get("q"), int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUsers(w, r, users)
}

// suggestionView is a user to follow, and why.
type suggestionView struct {
	protocol.UserView
	Reason     string             `json:"reason"`
	FollowedBy []protocol.UserRef `json:"followed_by"`
}

// suggestions lists users for the viewer to follow.
func (s *Server) suggestions(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	limit, err := intParam(r, "limit", defaultSuggestionsLimit, 1, social.MaxSuggestions)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sugs, err := s.social.Suggestions(r.Context(), viewer.UID, int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	users := make([]social.User, len(sugs))
	for i, sg := range sugs {
		users[i] = sg.User
	}
	views, err := s.views(r, users)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]suggestionView, len(sugs))
	for i, sg := range sugs {
		out[i] = suggestionView{UserView: views[i], Reason: sg.Reason, FollowedBy: []protocol.UserRef{}}
		for _, f := range sg.FollowedBy {
			out[i].FollowedBy = append(out[i].FollowedBy, f.Ref())
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": out})
}
