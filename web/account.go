package web

import (
	"net/http"

	"chorus/social"
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
	s.writeUser(w, r, http.StatusOK, u)
}
