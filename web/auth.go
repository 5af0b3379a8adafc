package web

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"chorus/social"
)

// SessionCookie is the name of the session cookie.
const SessionCookie = "chorus_session"

// Viewer is the signed-in user of a request.
type Viewer struct {
	UID      int64
	Token    string
	ByCookie bool // authenticated by the cookie rather than a header
}

type viewerKey struct{}

func viewerFrom(ctx context.Context) (Viewer, bool) {
	v, ok := ctx.Value(viewerKey{}).(Viewer)
	return v, ok
}

// credentials returns the token a request carries: the Authorization header
// first, else the session cookie. A malformed header counts as a bad token.
func credentials(r *http.Request) (token string, byCookie, present bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", false, true
		}
		return strings.TrimSpace(tok), false, true
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		return c.Value, true, true
	}
	return "", false, false
}

// requireCredentials returns the credentials a request carries, as
// credentials does, or answers it 401 when it carries none.
func (s *Server) requireCredentials(w http.ResponseWriter, r *http.Request) (token string, byCookie, ok bool) {
	token, byCookie, ok = credentials(r)
	if !ok {
		s.writeError(w, r, errNotSignedIn)
	}
	return token, byCookie, ok
}

// authenticate resolves the request's credentials, if any, into a Viewer in
// the context. With required set, a request without a valid session gets 401;
// otherwise only a request with bad credentials does. Cookie-authenticated
// writes from an origin that is not allowed get 403.
//
// The route's limit per user, once known (learnLimit), is counted in the
// session check's round trip rather than in one of its own after it: a
// request refused is answered 429 here, as its limit would.
func (s *Server) authenticate(required bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, byCookie, present := credentials(r)
			if !present {
				if required {
					s.writeError(w, r, errNotSignedIn)
					return
				}
				next.ServeHTTP(w, r)
				return
			}
			badOrigin := byCookie && isWrite(r.Method) && !s.originAllowed(r)
			// A write refused for its origin spends none of its limit.
			limit := s.sessionLimit(r)
			if badOrigin {
				limit = nil
			}
			if !limit.passGate(w, r) {
				return
			}
			uid, ok := s.authenticated(w, r, token, byCookie, limit.admit())
			if !ok {
				return
			}
			if badOrigin {
				s.writeError(w, r, errBadOrigin)
				return
			}
			ctx := context.WithValue(r.Context(), viewerKey{}, Viewer{UID: uid, Token: token, ByCookie: byCookie})
			if limit != nil {
				ctx = context.WithValue(ctx, countedKey{}, limit)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// authenticated returns the user of the session of token, or answers the
// request when there is none, when admit (nil: none) refuses it, or when
// Redis does not say.
func (s *Server) authenticated(w http.ResponseWriter, r *http.Request, token string, byCookie bool, admit social.Admit) (int64, bool) {
	if !s.passEnded(w, r) {
		return 0, false
	}
	uid, err := s.social.AuthenticateAdmit(r.Context(), token, admit)
	return s.sessionChecked(w, r, byCookie, uid, err)
}

// sessionChecked returns the user a session check found, or answers the
// request with why there is none (err).
func (s *Server) sessionChecked(w http.ResponseWriter, r *http.Request, byCookie bool, uid int64, err error) (int64, bool) {
	if uid != 0 {
		// Found, though a limit may refuse the request: its log line
		// names the user all the same.
		noteUser(r.Context(), uid)
	}
	if err != nil {
		// Only a session that is gone ends the cookie: a Redis that does
		// not answer says nothing about it.
		if errors.Is(err, social.ErrUnauthenticated) {
			s.noteEnded(r)
			if byCookie {
				s.clearSessionCookie(w, r)
			}
		}
		s.writeError(w, r, err)
		return 0, false
	}
	return uid, true
}

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// originAllowed reports whether the request comes from this server's own
// origin (scheme and host) or from an origin allowed by configuration. A
// request with no Origin header is a same-origin or non-browser one unless
// Sec-Fetch-Site says otherwise.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		site := r.Header.Get("Sec-Fetch-Site")
		return site == "" || site == "same-origin" || site == "none"
	}
	if _, ok := s.allowedOrigins[strings.ToLower(origin)]; ok {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	scheme := "http"
	if s.isTLS(r) {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme)
}

// cookieSetter guards a route that signs a browser in (sets the session
// cookie) against login CSRF: a form on another site could otherwise sign a
// victim's browser into the attacker's account. The request must come from
// an allowed origin and carry JSON, which a cross-site form cannot send
// without a preflight, which this server grants to the allowed origins only.
func (s *Server) cookieSetter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.originAllowed(r) {
			s.writeError(w, r, errBadOrigin)
			return
		}
		if !isJSON(r) {
			s.writeError(w, r, errNotJSON)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isJSON reports whether the request body is declared as JSON.
func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: token, Path: "/", MaxAge: int(s.sessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.isTLS(r),
	})
}

// DeviceCookie holds a browser's device marks (social.NewDeviceMark), one
// for each account it signed in to lately, separated by dots: a browser
// that signed in to an account lately is spared, from any address, the
// ceiling on sign-ins from unknown addresses, which strangers can fill. It
// is sent only to the sign-in route, and says nothing of who signed in.
const DeviceCookie = "chorus_device"

// deviceMarks are the device marks r's browser shows (social.SignInDevice
// takes those that count).
func deviceMarks(r *http.Request) []string {
	c, err := r.Cookie(DeviceCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	// Its newest marks' worth at most, whatever a client sends.
	v := c.Value
	if most := social.MaxDeviceMarks * 33; len(v) > most {
		v = v[len(v)-most:]
	}
	return strings.Split(v, ".")
}

// setDeviceCookie gives the browser its device marks after a sign-in: the
// account's new one, made known, last.
func (s *Server) setDeviceCookie(w http.ResponseWriter, r *http.Request, marks []string) {
	http.SetCookie(w, &http.Cookie{
		Name: DeviceCookie, Value: strings.Join(marks, "."), Path: "/api/v1/sessions", MaxAge: int(social.DeviceMarkTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.isTLS(r),
	})
}

func (s *Server) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.isTLS(r),
	})
}

// isTLS reports whether the browser reached us over TLS, directly or through
// one of the trusted proxies (-trusted-proxies) that says so in
// X-Forwarded-Proto. Nobody else's X-Forwarded-Proto is believed: a client
// could make a plain http page count as this server's https origin.
func (s *Server) isTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.trusted(peerAddr(r)) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}
