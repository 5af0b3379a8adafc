package web

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// Limiter takes one unit of a rate limit under a key, in Redis, so that a
// limit holds across every instance. *redis_rate.Limiter (GCRA) is one.
type Limiter interface {
	Allow(ctx context.Context, key string, limit redis_rate.Limit) (*redis_rate.Result, error)
}

var _ Limiter = (*redis_rate.Limiter)(nil)

// Limits are the per-client rate limits the edge applies. A zero Limit
// applies no limit.
type Limits struct {
	SignUpPerAddress  redis_rate.Limit // POST /users per client address
	SignInPerAddress  redis_rate.Limit // POST /sessions per client address, any login
	PostsPerUser      redis_rate.Limit // POST /statuses per signed-in user
	FollowsPerUser    redis_rate.Limit // PUT and DELETE /following/{login} per signed-in user
	ListWritesPerUser redis_rate.Limit // changes to lists and their members, per signed-in user
	BlocksPerUser     redis_rate.Limit // PUT and DELETE /blocks/{login} and /mutes/{login}, per signed-in user
	// SearchesPerClient bounds user searches and suggestions, per signed-in
	// user, or per client address for visitors.
	SearchesPerClient redis_rate.Limit
	// StreamOpensPerUser and StreamOpensPerAddress bound how often streams
	// are opened, per signed-in user and per client address: refused
	// before the stream touches Redis.
	StreamOpensPerUser    redis_rate.Limit
	StreamOpensPerAddress redis_rate.Limit
	// ReadsPerClient bounds the reads of timelines, statuses, users and
	// lists (every GET of the API but the stream and the searches), per
	// signed-in user, or per client address for visitors.
	ReadsPerClient redis_rate.Limit

	// ReactionsPerUser bounds likes, reposts and their undoing (PUT and
	// DELETE /statuses/{id}/like and /repost), per signed-in user.
	ReactionsPerUser redis_rate.Limit
	// ProfileEditsPerUser bounds PATCH /me per signed-in user: each new
	// name is told to the user's connected friends.
	ProfileEditsPerUser redis_rate.Limit
	// ReportsPerUser bounds POST /reports per signed-in user.
	ReportsPerUser redis_rate.Limit
	// ExportsPerUser bounds GET /me/export per signed-in user: each reads
	// every status, follow and list of theirs.
	ExportsPerUser redis_rate.Limit
	// StreamSendsPerUser bounds POST /stream/{stream}, the frames a client
	// of an event stream sends by REST, per signed-in user.
	StreamSendsPerUser redis_rate.Limit
	// PasswordChecksPerUser bounds PUT /me/password and DELETE /me per
	// signed-in user: each compares a password with its bcrypt hash (a
	// change hashes the new one too), on the instance's hashers, which
	// sign-ins and sign-ups wait for.
	PasswordChecksPerUser redis_rate.Limit
	// ActionsPerUser bounds DELETE /statuses/{id} and the admins' changes
	// (approvals, reports resolved, suspensions and their lifting) per
	// signed-in user.
	ActionsPerUser redis_rate.Limit
}

// limitCounters count the requests each limit refused, for /metrics.
type limitCounters struct {
	signUp, signIn, posts, follows, lists, searches, reads atomic.Int64
	blocks                                                 atomic.Int64
	streamOpens, streamOpensAddress                        atomic.Int64
	reactions                                              atomic.Int64
	deadlines                                              atomic.Int64 // requests answered 503 past their deadline
	profiles, exports                                      atomic.Int64
	reports                                                atomic.Int64
	streamSends                                            atomic.Int64
	passwords, actions                                     atomic.Int64
}

// rateLimit is one limit of the edge: what it counts and under which key.
type rateLimit struct {
	name    string // key part and log name
	limit   redis_rate.Limit
	refused *atomic.Int64
	message string
	// user is whom a signed-in user's requests are counted for, given the
	// user; nil for a limit per client address.
	user func(uid int64) string
	// visitor is whom any other request is counted for (a visitor's, or
	// every request's when user is nil): its client address, with the
	// address's IPv6 site (addrClient).
	visitor func(r *http.Request) limitClient
	// perAddress says every request is counted for its client address
	// (visitor is addrClient): the limit's gate counts by it too,
	// whatever credentials the request carries.
	perAddress bool
}

// client is whom l counts the request for.
func (l rateLimit) client(r *http.Request) limitClient {
	if v, ok := viewerFrom(r.Context()); ok && l.user != nil {
		return limitClient{who: l.user(v.UID)}
	}
	return l.visitor(r)
}

// limit refuses, with 429 and Retry-After, requests over l. A limit that
// cannot be checked because Redis is away answers as Redis being away. Its
// gate (gate.go) refuses a client far over it without asking Redis.
//
// A limit counted per user tells the route's authenticate that it is the
// route's (learnLimit) on the route's first signed-in request: from then
// on, it is counted with the session's check, in the same round trip,
// and authenticate answers its refusals.
func (s *Server) limit(l rateLimit) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		q := s.newQueuedLimit(l)
		if q == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if counted, _ := r.Context().Value(countedKey{}).(*queuedLimit); counted == q {
				next.ServeHTTP(w, r)
				return
			}
			_, signedIn := viewerFrom(r.Context())
			if !signedIn && l.visitor == nil {
				// A limit per user counts no visitor (a route mounted
				// where no session is required).
				s.writeError(w, r, errNotSignedIn)
				return
			}
			if !q.passGate(w, r) {
				return
			}
			if signedIn && l.user != nil {
				s.learnLimit(routeOf(r), q)
			}
			if err := q.take(r.Context(), l.client(r)); err != nil {
				s.writeError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// rateLimitedError is a request refused by a limit, answered 429.
type rateLimitedError struct {
	retryAfter time.Duration
	message    string
}

func (e *rateLimitedError) Error() string { return "rate limited: " + e.message }

// retryAfter is the Retry-After value for d: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// countedKey is the context key of the limit authenticate counted with the
// session's check, a *queuedLimit.
type countedKey struct{}

// learnLimit makes q the limit authenticate counts with the sessions of
// route's requests, unless the route has one.
func (s *Server) learnLimit(route string, q *queuedLimit) {
	s.sessionLimits.LoadOrStore(route, q)
}

// sessionLimit is the limit authenticate counts with the session of r's
// route (learnLimit), nil while there is none.
func (s *Server) sessionLimit(r *http.Request) *queuedLimit {
	q, _ := s.sessionLimits.Load(routeOf(r))
	limit, _ := q.(*queuedLimit)
	return limit
}

// byUser counts a signed-in user's requests for the user.
func byUser(uid int64) string { return strconv.FormatInt(uid, 10) }

func (s *Server) signUpLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "signup", limit: s.limits.SignUpPerAddress, refused: &s.limitStats.signUp, visitor: s.addrClient, perAddress: true,
		message: "Too many sign-ups from your address.",
	})
}

func (s *Server) signInLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "signin", limit: s.limits.SignInPerAddress, refused: &s.limitStats.signIn, visitor: s.addrClient, perAddress: true,
		message: "Too many sign-in attempts from your address.",
	})
}

// postLimit is the limit of POST /statuses, counted in the post's first
// round trip (see post).
func (s *Server) postLimit() *queuedLimit {
	return s.newQueuedLimit(rateLimit{
		name: "post", limit: s.limits.PostsPerUser, refused: &s.limitStats.posts, user: byUser,
		message: "You are posting too fast.",
	})
}

func (s *Server) followLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "follow", limit: s.limits.FollowsPerUser, refused: &s.limitStats.follows, user: byUser,
		message: "You are following and unfollowing too fast.",
	})
}

func (s *Server) listLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "list", limit: s.limits.ListWritesPerUser, refused: &s.limitStats.lists, user: byUser,
		message: "You are changing lists too fast.",
	})
}

func (s *Server) blockLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "block", limit: s.limits.BlocksPerUser, refused: &s.limitStats.blocks, user: byUser,
		message: "You are blocking and muting too fast.",
	})
}

func (s *Server) profileLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "profile", limit: s.limits.ProfileEditsPerUser, refused: &s.limitStats.profiles, user: byUser,
		message: "You are editing your profile too often.",
	})
}

func (s *Server) exportLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "export", limit: s.limits.ExportsPerUser, refused: &s.limitStats.exports, user: byUser,
		message: "You have exported your account as often as one may for now.",
	})
}

func (s *Server) passwordLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "password", limit: s.limits.PasswordChecksPerUser, refused: &s.limitStats.passwords, user: byUser,
		message: "You have given your password too often lately.",
	})
}

func (s *Server) actionLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "action", limit: s.limits.ActionsPerUser, refused: &s.limitStats.actions, user: byUser,
		message: "You are deleting statuses or acting as an admin too fast.",
	})
}

// A limit per client counts a signed-in request for its user (byClientUser)
// and any other for its client address and IPv6 site (byVisitor).
func byClientUser(uid int64) string { return "u" + strconv.FormatInt(uid, 10) }

func (s *Server) byVisitor(r *http.Request) limitClient {
	c := s.addrClient(r)
	c.who = "a" + c.who
	if c.site != "" {
		c.site = "a" + c.site
	}
	return c
}

func (s *Server) searchLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "search", limit: s.limits.SearchesPerClient, refused: &s.limitStats.searches, user: byClientUser, visitor: s.byVisitor,
		message: "You are searching too fast.",
	})
}

// readLimit bounds reads per user, or per client address for visitors.
func (s *Server) readLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "read", limit: s.limits.ReadsPerClient, refused: &s.limitStats.reads, user: byClientUser, visitor: s.byVisitor,
		message: "You are reading too fast.",
	})
}

func (s *Server) reportLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "report", limit: s.limits.ReportsPerUser, refused: &s.limitStats.reports, user: byUser,
		message: "You have filed many reports lately; an admin is looking at them.",
	})
}

// streamSendLimit bounds the frames a user posts for their streams.
func (s *Server) streamSendLimit() func(http.Handler) http.Handler {
	return s.limit(rateLimit{
		name: "streamsend", limit: s.limits.StreamSendsPerUser, refused: &s.limitStats.streamSends, user: byUser,
		message: "You are sending frames to your streams too fast.",
	})
}
