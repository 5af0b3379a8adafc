package web

import (
	"context"
	"net/http"
	"time"

	"chorus/protocol"
	"chorus/social"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// view shows u to the request's viewer: whether the viewer follows, blocks
// or mutes u, and, to u and u's friends only (never across a block), u's
// presence.
func (s *Server) view(r *http.Request, u social.User) (protocol.UserView, error) {
	views, err := s.views(r, []social.User{u})
	if err != nil {
		return protocol.UserView{}, err
	}
	return views[0], nil
}

// views shows a list of users to the request's viewer: whether the viewer
// follows, blocks or mutes each and each follows the viewer, and presence for the viewer and
// the viewer's friends, in two round trips whatever the length of the list.
func (s *Server) views(r *http.Request, users []social.User) ([]protocol.UserView, error) {
	out := make([]protocol.UserView, len(users))
	for i, u := range users {
		out[i] = protocol.UserView{User: u}
	}
	viewer, ok := viewerFrom(r.Context())
	if !ok || len(users) == 0 {
		return out, nil
	}
	ids := make([]int64, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	rels, err := s.social.Relations(r.Context(), viewer.UID, ids)
	if err != nil {
		return nil, err
	}
	var shown []int
	var shownIDs []int64
	for i, u := range users {
		if u.ID != viewer.UID {
			out[i].YouFollow = &rels[i].YouFollow
			out[i].FollowsYou = &rels[i].FollowsYou
			out[i].Blocking = &rels[i].Blocking
			out[i].Muting = &rels[i].Muting
		}
		if rels[i].Friends() || u.ID == viewer.UID {
			shown = append(shown, i)
			shownIDs = append(shownIDs, u.ID)
		}
	}
	ps, err := s.presence.Presences(r.Context(), shownIDs)
	if err != nil {
		return nil, err
	}
	for j, i := range shown {
		out[i].Presence = &ps[j]
	}
	return out, nil
}

type credentialsBody struct {
	Login    string `json:"login"`
	Name     string `json:"name"`
	Password string `json:"password"`
}

func (s *Server) signUp(w http.ResponseWriter, r *http.Request) {
	var body credentialsBody
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, token, err := s.social.SignUp(r.Context(), body.Login, body.Name, body.Password)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if token == "" {
		// Registrations need approval: the account is made, and cannot
		// sign in yet. No session, so no cookie.
		s.log.InfoContext(r.Context(), "signed up, awaiting approval", "request_id", middleware.GetReqID(r.Context()), "uid", u.ID, "login", u.Login)
		writeJSON(w, http.StatusAccepted, map[string]any{
			"user": u, "pending": true,
			"message": "Your account is made and waits for an admin's approval; you can sign in once it is approved.",
		})
		return
	}
	s.log.InfoContext(r.Context(), "signed up", "request_id", middleware.GetReqID(r.Context()), "uid", u.ID, "login", u.Login)
	s.setSessionCookie(w, r, token)
	noteUser(r.Context(), u.ID)
	// Presence would say so too: a stream makes a user online, and this
	// one has never had one. Not asking spares an account, made already,
	// an error answer when Redis stumbles now.
	never := protocol.Presence{Online: false, LastSeen: nil}
	writeJSON(w, http.StatusCreated, map[string]any{"user": s.ownView(protocol.UserView{User: u, Presence: &never}), "token": token})
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	var body credentialsBody
	if err := decode(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	// The browser's mark for this account is good for this sign-in; a new
	// one, made known by it, takes its place beside its marks for other
	// accounts. Only a browser gets one (it sends Sec-Fetch-Site): a client
	// that keeps no cookie would have a new mark made known at each
	// sign-in, and push out its owner's browsers.
	var device string
	if r.Header.Get("Sec-Fetch-Site") != "" {
		device = social.NewDeviceMark()
	}
	u, token, marks, err := s.social.SignInDevice(r.Context(), body.Login, body.Password, s.clientAddr(r), deviceMarks(r), device)
	if device != "" && marks != nil {
		// Once the password was found right, the account knows the new
		// mark (and no longer the one spent), whether or not the sign-in
		// goes on.
		s.setDeviceCookie(w, r, marks)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	noteUser(r.Context(), u.ID)
	// Their own presence, as /me shows it: online while a stream of theirs
	// is open elsewhere.
	ps, err := s.presence.Presences(r.Context(), []int64{u.ID})
	if err != nil {
		// The token is never given: its session goes, rather than hold
		// a place among the user's sessions for 30 days.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), signOutTimeout)
		defer cancel()
		if err := s.social.SignOut(ctx, token); err != nil {
			s.log.WarnContext(r.Context(), "could not end the session of a sign-in that failed", "request_id", middleware.GetReqID(r.Context()), "uid", u.ID, "err", err)
		}
		s.writeError(w, r, err)
		return
	}
	s.setSessionCookie(w, r, token)
	writeJSON(w, http.StatusOK, map[string]any{"user": s.ownView(protocol.UserView{User: u, Presence: &ps[0]}), "token": token})
}

// signOutTimeout bounds the ending of a session whose sign-in failed after
// it was made, once the request is over.
const signOutTimeout = 5 * time.Second

func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	if err := s.social.SignOut(r.Context(), viewer.Token); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.clearSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	u, err := s.social.UserByID(r.Context(), viewer.UID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if viewer.ByCookie {
		// The session was just renewed; so is the browser's cookie, which
		// the client reads /me with on every page load.
		s.setSessionCookie(w, r, viewer.Token)
	}
	s.writeOwnUser(w, r, http.StatusOK, u)
}

// ownUser is the signed-in user's own user object: their view, and
// "admin": true for an admin (left out otherwise), so that a client knows
// to offer the moderation page.
type ownUser struct {
	protocol.UserView
	Admin bool `json:"admin,omitempty"`
}

func (s *Server) ownView(v protocol.UserView) ownUser {
	return ownUser{UserView: v, Admin: s.social.AdminLogin(v.Login)}
}

// writeOwnUser answers u, the viewer, as GET /me does.
func (s *Server) writeOwnUser(w http.ResponseWriter, r *http.Request, status int, u social.User) {
	v, err := s.view(r, u)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"user": s.ownView(v)})
}

func (s *Server) profile(w http.ResponseWriter, r *http.Request) {
	u, err := s.social.UserByLogin(r.Context(), chi.URLParam(r, "login"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUser(w, r, http.StatusOK, u)
}

func (s *Server) writeUser(w http.ResponseWriter, r *http.Request, status int, u social.User) {
	v, err := s.view(r, u)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"user": v})
}

func (s *Server) follow(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	ctx := r.Context()
	u, _, err := s.social.Follow(ctx, viewer.UID, chi.URLParam(r, "login"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUser(w, r, http.StatusOK, u)
}

func (s *Server) unfollow(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	ctx := r.Context()
	if _, err := s.social.Unfollow(ctx, viewer.UID, chi.URLParam(r, "login")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) followers(w http.ResponseWriter, r *http.Request) {
	s.userList(w, r, s.social.Followers)
}

func (s *Server) following(w http.ResponseWriter, r *http.Request) {
	s.userList(w, r, s.social.Following)
}

func (s *Server) userList(w http.ResponseWriter, r *http.Request, list func(ctx context.Context, login string, p social.Page) ([]social.User, error)) {
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	users, err := list(r.Context(), chi.URLParam(r, "login"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUsers(w, r, users)
}

func (s *Server) friends(w http.ResponseWriter, r *http.Request) {
	viewer, _ := viewerFrom(r.Context())
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	users, err := s.social.Friends(r.Context(), viewer.UID, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeUsers(w, r, users)
}

func (s *Server) writeUsers(w http.ResponseWriter, r *http.Request, users []social.User) {
	views, err := s.views(r, users)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": views})
}
