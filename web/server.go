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
	"sync"
	"time"

	"chorus/presence"
	"chorus/realtime"
	"chorus/social"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// The edge calls its parts through their concrete types, not through
// interfaces of its own: each part has one implementation, which the tests
// run for real on a real Redis, so an interface here would only mirror the
// part's method set and have to change with it. A handler that comes to
// need a second implementation (a fake, another store) declares then the
// small interface it calls.

// Config is what a Server is built from. Social, Presence and Stream are
// required.
type Config struct {
	Social         *social.Service
	Presence       *presence.Tracker
	Stream         *realtime.Hub
	Metrics        *Metrics      // nil: a fresh set
	SessionTTL     time.Duration // lifetime of the session cookie; 0: social.DefaultSessionTTL
	AllowedOrigins []string      // origins besides the server's own, e.g. "https://app.example.com"
	Logger         *slog.Logger  // nil: slog.Default()

	// Limiter and Limits rate-limit clients; with no Limiter, nothing is.
	// Limiter must count on Social's Redis, as redis_rate's limiter on its
	// client does: the limits counted with a request's other commands
	// (a session's check, a post's reads, an IPv6 client's site) are
	// counted there by the edge's own script, on the same keys.
	Limiter   Limiter
	Limits    Limits
	KeyPrefix string // prefix of the limiter's keys, as the other packages'
	// TrustedProxies are the proxies whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// GateFactor sets the in-process gates in front of the limits: each
	// lets a client through this many times its limit. Zero:
	// DefaultGateFactor; negative: no gates.
	GateFactor int
	// SiteLimitFactor sets how the limits counted per client address count
	// an IPv6 client: by its /64 and, at this many times the limit, by its
	// /48 too. Zero: DefaultSiteLimitFactor; negative: by its /64 alone.
	SiteLimitFactor int
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
	social         *social.Service
	presence       *presence.Tracker
	stream         *realtime.Hub
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
	sites          int      // SiteLimitFactor; 0: sites not counted
	sessionLimits  sync.Map // "METHOD pattern" -> the *queuedLimit authenticate counts (learnLimit)
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
	switch s.sites = cfg.SiteLimitFactor; {
	case s.sites == 0:
		s.sites = DefaultSiteLimitFactor
	case s.sites < 0:
		s.sites = 0
	}
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
	index, missing, files := s.clientHandlers()
	r.NotFound(s.notFound(missing))
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errNotAllowed) })

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
		// An answer of the API is never a page: opened as one (a JSON
		// answer a browser was tricked into rendering), it runs nothing,
		// loads nothing and cannot be framed.
		r.Use(middleware.SetHeader("Content-Security-Policy", apiPolicy), s.cors(), limitBody, s.withDeadline)
		// How a session is had: the credentials a request carries are not
		// read, so that one that ended (a cookie whose session a password
		// change ended elsewhere) does not stand in the way of a new one.
		r.Group(func(r chi.Router) {
			r.Use(s.checkGate, s.cookieSetter)
			r.With(s.signUpLimit()).Post("/users", s.signUp)
			r.With(s.signInLimit()).Post("/sessions", s.signIn)
		})
		// Open to anyone; a signed-in viewer sees more (presence of friends).
		r.Group(func(r chi.Router) {
			r.Use(s.checkGate, s.authenticate(false))
			r.With(s.searchLimit()).Get("/users", s.searchUsers)
			r.With(s.readLimit()).Get("/users/{login}", s.profile)
			r.With(s.readLimit()).Get("/users/{login}/statuses", s.profileTimeline)
			r.With(s.readLimit()).Get("/users/{login}/followers", s.followers)
			r.With(s.readLimit()).Get("/users/{login}/following", s.following)
			r.With(s.readLimit()).Get("/statuses/{id}", s.status)
			r.With(s.readLimit()).Get("/statuses/{id}/context", s.statusContext)
			r.With(s.readLimit()).Get("/statuses/{id}/likes", s.reactors(s.social.Likers))
			r.With(s.readLimit()).Get("/statuses/{id}/reposts", s.reactors(s.social.Reposters))
			r.With(s.readLimit()).Get("/timelines/global", s.globalTimeline)
			r.With(s.readLimit()).Get("/lists/{id}", s.list)
			r.With(s.readLimit()).Get("/lists/{id}/members", s.listMembers)
			r.With(s.readLimit()).Get("/lists/{id}/statuses", s.listTimeline)
		})
		// A post checks its session itself, in the round trip that reads
		// for it (see post).
		r.With(s.checkGate).Post("/statuses", s.post(s.postLimit()))
		// So does a stream's opening, with the streams opening at once
		// (streamAdmission).
		r.With(s.checkGate).Get("/stream", s.serveStream(s.newStreamAdmission()))
		r.Group(func(r chi.Router) {
			r.Use(s.checkGate, s.authenticate(true))
			r.Delete("/sessions/current", s.signOut)
			r.With(s.readLimit()).Get("/me", s.me)
			r.With(s.profileLimit()).Patch("/me", s.editProfile)
			r.With(s.passwordLimit()).Put("/me/password", s.changePassword)
			r.With(s.exportLimit()).Get("/me/export", s.exportAccount)
			// A HEAD would otherwise run the whole export (GetHead), and
			// spend one of the user's exports on it.
			r.With(s.readLimit()).Head("/me/export", s.exportHead)
			r.With(s.passwordLimit()).Delete("/me", s.deleteAccount)
			r.With(s.readLimit()).Get("/admin/approvals", s.pendingUsers)
			r.With(s.actionLimit()).Put("/admin/approvals/{login}", s.approve)
			r.With(s.readLimit()).Get("/admin/log", s.auditLog)
			r.With(s.readLimit()).Get("/admin/reports", s.adminReports)
			r.With(s.actionLimit()).Post("/admin/reports/{id}/resolve", s.resolveReport)
			r.With(s.readLimit()).Get("/admin/suspensions", s.suspendedUsers)
			r.With(s.actionLimit()).Put("/admin/suspensions/{login}", s.suspend)
			r.With(s.actionLimit()).Delete("/admin/suspensions/{login}", s.unsuspend)
			r.With(s.followLimit()).Put("/following/{login}", s.follow)
			r.With(s.followLimit()).Delete("/following/{login}", s.unfollow)
			r.With(s.searchLimit()).Get("/suggestions", s.suggestions)
			r.With(s.readLimit()).Get("/friends", s.friends)
			r.With(s.readLimit()).Get("/friends/online", s.onlineFriends)
			r.With(s.readLimit()).Get("/presence", s.sitePresence)
			r.With(s.streamSendLimit()).Post("/stream/{stream}", s.sendStreamFrame)
			r.With(s.reportLimit()).Post("/reports", s.fileReport)
			r.With(s.actionLimit()).Delete("/statuses/{id}", s.deleteStatus)
			r.With(s.reactLimit()).Put("/statuses/{id}/like", s.react(s.social.Like, false))
			r.With(s.reactLimit()).Delete("/statuses/{id}/like", s.react(s.social.Unlike, true))
			r.With(s.reactLimit()).Put("/statuses/{id}/repost", s.react(s.social.Repost, false))
			r.With(s.reactLimit()).Delete("/statuses/{id}/repost", s.react(s.social.Unrepost, true))
			r.With(s.readLimit()).Get("/timelines/home", s.homeTimeline)
			r.With(s.readLimit()).Get("/lists", s.myLists)
			r.With(s.readLimit()).Get("/notifications", s.notifications)
			r.With(s.readLimit()).Get("/notifications/unread", s.unreadNotifications)
			r.With(s.readLimit()).Put("/notifications/read", s.readNotifications)
			r.Group(func(r chi.Router) {
				r.Use(s.listLimit())
				r.Post("/lists", s.createList)
				r.Patch("/lists/{id}", s.renameList)
				r.Delete("/lists/{id}", s.deleteList)
				r.Put("/lists/{id}/members/{login}", s.addListMember)
				r.Delete("/lists/{id}/members/{login}", s.removeListMember)
			})
			r.With(s.readLimit()).Get("/blocks", s.blocks)
			r.With(s.readLimit()).Get("/mutes", s.mutes)
			r.Group(func(r chi.Router) {
				r.Use(s.blockLimit())
				r.Put("/blocks/{login}", s.block)
				r.Delete("/blocks/{login}", s.unblock)
				r.Put("/mutes/{login}", s.mute)
				r.Delete("/mutes/{login}", s.unmute)
			})
		})
	})
	return r
}

// apiPolicy is the Content-Security-Policy of every answer of the API.
const apiPolicy = "default-src 'none'; frame-ancestors 'none'; sandbox"

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.stream.Draining() {
		// The load balancer sends no new client here; streams move away.
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.social.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "redis unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
