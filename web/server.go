// Package web is Chorus's HTTP edge: the REST API under /api/v1, the
// WebSocket stream endpoint, health checks and the embedded browser client.
// It turns HTTP into calls on the social, presence and realtime packages and
// maps their errors to the API's error shape.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"chorus/presence"
	"chorus/protocol"
	"chorus/realtime"
	"chorus/social"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// Social is what the edge calls on the social core.
type Social interface {
	SignUp(ctx context.Context, login, name, password string) (social.User, string, error)
	SignIn(ctx context.Context, login, password, addr string) (social.User, string, error)
	SignOut(ctx context.Context, token string) error
	Authenticate(ctx context.Context, token string) (int64, error)
	UserByID(ctx context.Context, uid int64) (social.User, error)
	UserByLogin(ctx context.Context, login string) (social.User, error)
	Follow(ctx context.Context, uid int64, login string) (followee social.User, madeFriends bool, err error)
	Unfollow(ctx context.Context, uid int64, login string) (exFriend int64, err error)
	Followers(ctx context.Context, login string, p social.Page) ([]social.User, error)
	Following(ctx context.Context, login string, p social.Page) ([]social.User, error)
	Friends(ctx context.Context, uid int64, p social.Page) ([]social.User, error)
	Relations(ctx context.Context, uid int64, ids []int64) ([]social.Relation, error)
	Users(ctx context.Context, ids []int64) ([]social.User, error)
	SearchUsers(ctx context.Context, viewer int64, q string, limit int) ([]social.User, error)
	Suggestions(ctx context.Context, uid int64, limit int) ([]social.Suggestion, error)
	Post(ctx context.Context, uid int64, message string) (social.Status, error)
	Status(ctx context.Context, id int64) (social.Status, error)
	DeleteStatus(ctx context.Context, uid, id int64) error
	HomeTimeline(ctx context.Context, uid int64, c social.Cursor) (social.TimelinePage, error)
	ProfileTimeline(ctx context.Context, login string, c social.Cursor) (social.TimelinePage, error)
	GlobalTimeline(ctx context.Context, c social.Cursor) (social.TimelinePage, error)
	CreateList(ctx context.Context, owner int64, name string) (social.List, error)
	RenameList(ctx context.Context, uid, id int64, name string) (social.List, error)
	DeleteList(ctx context.Context, uid, id int64) error
	Lists(ctx context.Context, owner int64) ([]social.List, error)
	List(ctx context.Context, id int64) (social.List, error)
	AddListMember(ctx context.Context, uid, id int64, login string) (social.List, error)
	RemoveListMember(ctx context.Context, uid, id int64, login string) (social.List, error)
	ListMembers(ctx context.Context, id int64, p social.Page) ([]social.User, error)
	ListTimeline(ctx context.Context, id int64, c social.Cursor) (social.TimelinePage, error)
	Ping(ctx context.Context) error
	JobStats
	Counters() *social.Stats
}

// Presence is what the edge asks of presence.
type Presence interface {
	Presences(ctx context.Context, uids []int64) ([]protocol.Presence, error)
	OnlineFriends(ctx context.Context, uid int64) ([]presence.FriendSeen, error)
	Counts(ctx context.Context) (presence.Counts, error)
}

// Stream serves the live WebSocket stream.
type Stream interface {
	Serve(w http.ResponseWriter, r *http.Request, uid int64, sessionID string) error
	StreamStats
}

var (
	_ Social   = (*social.Service)(nil)
	_ Presence = (*presence.Tracker)(nil)
	_ Stream   = (*realtime.Hub)(nil)
)

// Config is what a Server is built from. Social, Presence and Stream are
// required.
type Config struct {
	Social         Social
	Presence       Presence
	Stream         Stream
	Metrics        *Metrics      // nil: a fresh set
	SessionTTL     time.Duration // lifetime of the session cookie
	AllowedOrigins []string      // origins besides the server's own, e.g. "https://app.example.com"
	Logger         *slog.Logger

	// Limiter and Limits rate-limit clients; with no Limiter, nothing is.
	Limiter   Limiter
	Limits    Limits
	KeyPrefix string // prefix of the limiter's keys, as the other packages'
	// TrustedProxies are the proxies whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// GateFactor sets the in-process gates in front of the limits: each
	// lets a client through this many times its limit. Zero:
	// DefaultGateFactor; negative: no gates.
	GateFactor int
	// ConnStats are the counts of the server's ConnGuard, for /metrics;
	// nil: none.
	ConnStats *ConnStats
	// RequestTimeout bounds each API request's work, Redis calls included:
	// past it the request is answered 503. Zero: DefaultRequestTimeout;
	// negative: no bound.
	RequestTimeout time.Duration
}

// Server serves Chorus over HTTP.
type Server struct {
	social         Social
	presence       Presence
	stream         Stream
	jobs           JobStats
	metrics        *Metrics
	sessionTTL     time.Duration
	allowedOrigins map[string]struct{}
	trustedProxies []netip.Prefix
	limiter        Limiter
	limits         Limits
	limitStats     limitCounters
	keys           keys
	log            *slog.Logger
	router         chi.Router

	requestTimeout time.Duration
	gates          gates
	connStats      *ConnStats

	// allowedOriginList holds the allowed origins as the CSP names them:
	// valid ones only, without their path.
	allowedOriginList []string
}

// NewServer builds the HTTP handler of Chorus.
func NewServer(cfg Config) *Server {
	s := &Server{
		social:         cfg.Social,
		presence:       cfg.Presence,
		stream:         cfg.Stream,
		jobs:           cfg.Social,
		metrics:        cfg.Metrics,
		sessionTTL:     cfg.SessionTTL,
		allowedOrigins: map[string]struct{}{},
		trustedProxies: cfg.TrustedProxies,
		limiter:        cfg.Limiter,
		limits:         cfg.Limits,
		keys:           keys{prefix: cfg.KeyPrefix},
		log:            cfg.Logger,
		requestTimeout: cfg.RequestTimeout,
		connStats:      cfg.ConnStats,
	}
	if s.connStats == nil {
		s.connStats = &ConnStats{}
	}
	if s.requestTimeout == 0 {
		s.requestTimeout = DefaultRequestTimeout
	}
	s.gates.init(cfg.GateFactor)
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.sessionTTL <= 0 {
		s.sessionTTL = social.DefaultSessionTTL
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	s.metrics.register(s)
	for _, o := range cfg.AllowedOrigins {
		o = strings.ToLower(strings.TrimRight(o, "/"))
		s.allowedOrigins[o] = struct{}{}
		if u, err := url.Parse(o); err == nil && (u.Scheme == "http" || u.Scheme == "https") && plainHost(u.Host) {
			s.allowedOriginList = append(s.allowedOriginList, u.Scheme+"://"+u.Host)
		}
	}
	s.router = s.routes()
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.logRequests, s.metrics.instrument, middleware.Recoverer, middleware.GetHead,
		middleware.SetHeader("X-Content-Type-Options", "nosniff"))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errNotAllowed) })

	index, files := s.clientHandlers()
	// The client's own pages: each answers with the client, which reads
	// the path, so a link to a profile or a status can be shared.
	for _, page := range clientPages {
		r.Get(page, index)
	}
	r.Get("/static/*", files.ServeHTTP)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Method(http.MethodGet, "/metrics", s.metrics.handler())

	r.Route("/api/v1", func(r chi.Router) {
		r.Use(s.cors(), limitBody, s.withDeadline)
		// Open to anyone; a signed-in viewer sees more (presence of friends).
		r.Group(func(r chi.Router) {
			r.Use(s.checkGate, s.authenticate(false))
			r.With(s.cookieSetter, s.signUpLimit()).Post("/users", s.signUp)
			r.With(s.cookieSetter, s.signInLimit()).Post("/sessions", s.signIn)
			r.With(s.searchLimit()).Get("/users", s.searchUsers)
			r.With(s.readLimit()).Get("/users/{login}", s.profile)
			r.With(s.readLimit()).Get("/users/{login}/statuses", s.profileTimeline)
			r.With(s.readLimit()).Get("/users/{login}/followers", s.followers)
			r.With(s.readLimit()).Get("/users/{login}/following", s.following)
			r.With(s.readLimit()).Get("/statuses/{id}", s.status)
			r.With(s.readLimit()).Get("/timelines/global", s.globalTimeline)
			r.With(s.readLimit()).Get("/lists/{id}", s.list)
			r.With(s.readLimit()).Get("/lists/{id}/members", s.listMembers)
			r.With(s.readLimit()).Get("/lists/{id}/statuses", s.listTimeline)
		})
		r.Group(func(r chi.Router) {
			r.Use(s.checkGate, s.authenticate(true))
			r.Delete("/sessions/current", s.signOut)
			r.With(s.readLimit()).Get("/me", s.me)
			r.With(s.followLimit()).Put("/following/{login}", s.follow)
			r.With(s.followLimit()).Delete("/following/{login}", s.unfollow)
			r.With(s.searchLimit()).Get("/suggestions", s.suggestions)
			r.With(s.readLimit()).Get("/friends", s.friends)
			r.With(s.readLimit()).Get("/friends/online", s.onlineFriends)
			r.With(s.readLimit()).Get("/presence", s.sitePresence)
			r.With(s.streamOpenLimit()).Get("/stream", s.serveStream)
			r.With(s.postLimit()).Post("/statuses", s.post)
			r.Delete("/statuses/{id}", s.deleteStatus)
			r.With(s.readLimit()).Get("/timelines/home", s.homeTimeline)
			r.With(s.readLimit()).Get("/lists", s.myLists)
			r.Group(func(r chi.Router) {
				r.Use(s.listLimit())
				r.Post("/lists", s.createList)
				r.Patch("/lists/{id}", s.renameList)
				r.Delete("/lists/{id}", s.deleteList)
				r.Put("/lists/{id}/members/{login}", s.addListMember)
				r.Delete("/lists/{id}/members/{login}", s.removeListMember)
			})
		})
	})
	return r
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.social.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "redis unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
