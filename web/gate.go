package web

import (
	"container/list"
	"context"
	"hash/maphash"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/time/rate"
)

// Defaults of the in-process gates in front of the Redis-counted limits.
const (
	// DefaultGateFactor is how many times a limit its gate lets through
	// per client: enough that only a client far over the limit meets it.
	DefaultGateFactor = 4
	// gateClients bounds the clients whose gates an instance remembers;
	// past it the least recently seen is forgotten (and starts afresh).
	gateClients = 50_000
)

// A gate is the in-process limit in front of one Redis-counted limit: per
// client, GateFactor times the limit's rate and burst, counted in this
// instance's memory. Refusing a flood costs Redis nothing, where each
// request the Redis limit refuses costs a script call, and a signed-in one
// its authentication too: gates are checked before authentication.
//
// The client is the session token a request carries (hashed), since
// limits per user cannot know the user before authentication, and one
// address may hold many users; a request without one, or of a limit per
// address, counts for its client address.
//
// The gates of a route are checked before authentication (checkGate, in
// each group of routes, before authenticate) once the route's limits have
// said which they are (gates.learn); until then, each limit checks its own
// gate itself, so each request is counted by each of its gates once. A
// route may have several (GET /stream: one per address, one per user).
type gate struct {
	name       string // the limit's, for the key
	every      rate.Limit
	burst      int
	perAddress bool          // the limit's: count by address, token or not
	refused    *atomic.Int64 // the limit's refusals
	message    string        // the limit's
}

// gates are the in-process limits of one Server.
type gates struct {
	factor  int
	seed    maphash.Seed
	clients *clientLimiters
	routes  sync.Map   // "METHOD pattern" -> []*gate, as the limits say; never changed once stored
	learnMu sync.Mutex // one change of routes at a time
	refused atomic.Int64
}

// init readies the gates, factor times their limits (0: DefaultGateFactor;
// negative: none).
func (g *gates) init(factor int) {
	if factor == 0 {
		factor = DefaultGateFactor
	}
	g.factor, g.seed, g.clients = factor, maphash.MakeSeed(), newClientLimiters(gateClients)
}

// newGate makes the gate of limit l, or nil when there is none.
func (g *gates) newGate(l rateLimit) *gate {
	if g.factor <= 0 || l.limit.IsZero() {
		return nil
	}
	return &gate{
		name:       l.name,
		every:      rate.Limit(float64(g.factor*l.limit.Rate) / l.limit.Period.Seconds()),
		burst:      g.factor * l.limit.Burst,
		perAddress: l.perAddress,
		refused:    l.refused,
		message:    l.message,
	}
}

// gatedKey is the context key of the gates checkGate checked, a []*gate.
type gatedKey struct{}

// checkGate checks the request against its route's gates, once the route
// is known to have some, before anything that costs Redis.
func (s *Server) checkGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.gates.routes.Load(routeOf(r))
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		checked := v.([]*gate)
		for _, g := range checked {
			if wait, ok := s.passGate(g, r); !ok {
				s.refuseAtGate(w, r, g, wait)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), gatedKey{}, checked)))
	})
}

// gateInLimit checks a request against g unless checkGate did (the
// route's first requests, or a gate checkGate does not know yet), and
// tells checkGate the route has g.
func (s *Server) gateInLimit(g *gate, w http.ResponseWriter, r *http.Request) bool {
	if g == nil {
		return true
	}
	if checked, _ := r.Context().Value(gatedKey{}).([]*gate); slices.Contains(checked, g) {
		return true
	}
	s.gates.learn(routeOf(r), g)
	if wait, ok := s.passGate(g, r); !ok {
		s.refuseAtGate(w, r, g, wait)
		return false
	}
	return true
}

// learn adds g to the gates of route, unless it is among them.
func (gs *gates) learn(route string, g *gate) {
	if v, ok := gs.routes.Load(route); ok && slices.Contains(v.([]*gate), g) {
		return
	}
	gs.learnMu.Lock()
	defer gs.learnMu.Unlock()
	v, _ := gs.routes.Load(route)
	known, _ := v.([]*gate)
	if !slices.Contains(known, g) {
		// A new slice: checkGate reads the old one without a lock.
		gs.routes.Store(route, append(slices.Clip(known), g))
	}
}

// routeOf is the route a request was routed to: its method and pattern.
func routeOf(r *http.Request) string {
	return r.Method + " " + chi.RouteContext(r.Context()).RoutePattern()
}

// passGate takes one unit of g for the request's client, or says how long
// the client must wait for one. A client gated by its address is gated by
// its IPv6 site too, as the limits count it (addrClient): a /48 spreading
// a flood over its /64s meets the site's gate.
func (s *Server) passGate(g *gate, r *http.Request) (time.Duration, bool) {
	now := time.Now()
	if token, _, present := credentials(r); present && token != "" && !g.perAddress {
		return s.gates.clients.take(g.name+":t"+strconv.FormatUint(maphash.String(s.gates.seed, token), 36), g.every, g.burst, now)
	}
	c := s.addrClient(r)
	if c.site == "" {
		return s.gates.clients.take(g.name+":a"+c.who, g.every, g.burst, now)
	}
	// Both units or neither, as the limits take them: the address's first,
	// so that an address over its own gate spends none of its site's.
	own := s.gates.clients.reserve(g.name+":a"+c.who, g.every, g.burst, now)
	if wait := own.DelayFrom(now); wait > 0 {
		own.CancelAt(now)
		return wait, false
	}
	f := s.siteFactor()
	shared := s.gates.clients.reserve(g.name+":s"+c.site, g.every*rate.Limit(f), g.burst*f, now)
	if wait := shared.DelayFrom(now); wait > 0 {
		shared.CancelAt(now)
		own.CancelAt(now)
		return wait, false
	}
	return 0, true
}

// Tokens with no session, per client address: each costs Redis its
// session's look-up, and a made-up token meets no gate of the limits (it
// is a client of its own to them). Past these, an address's requests that
// carry a token wait before their sessions are looked up. A browser whose
// session ended makes a few such requests; a crowd of them behind one
// address, some tens.
const (
	endedSessionsEvery = 5 // a second
	endedSessionsBurst = 50
)

// passEnded tells whether the request, which carries a token, may have its
// session looked up: not while its address has brought more tokens with
// no session lately than the gate allows, and then it answers the request
// 429 itself.
func (s *Server) passEnded(w http.ResponseWriter, r *http.Request) bool {
	if s.gates.factor <= 0 {
		return true
	}
	wait, ok := s.gates.clients.peek(endedKey(s.clientAddr(r)), endedSessionsEvery, time.Now())
	if ok {
		return true
	}
	s.gates.refused.Add(1)
	s.writeError(w, r, &rateLimitedError{retryAfter: wait, message: "Too many requests with sessions that have ended, from your address."})
	return false
}

// noteEnded counts a token with no session against the request's address.
func (s *Server) noteEnded(r *http.Request) {
	if s.gates.factor > 0 {
		s.gates.clients.take(endedKey(s.clientAddr(r)), endedSessionsEvery, endedSessionsBurst, time.Now())
	}
}

func endedKey(addr string) string { return "ended:a" + addr }

// refuseAtGate answers a request its gate refused as its limit would,
// counting it among the limit's refusals and the gates'.
func (s *Server) refuseAtGate(w http.ResponseWriter, r *http.Request, g *gate, wait time.Duration) {
	s.gates.refused.Add(1)
	g.refused.Add(1)
	s.writeError(w, r, &rateLimitedError{retryAfter: wait, message: g.message})
}

// clientLimiters holds the in-process limiters of the clients seen last,
// forgetting the least recently seen past max, so that its memory is
// bounded whatever the number of clients.
type clientLimiters struct {
	mu    sync.Mutex
	max   int
	order list.List // of *clientLimiter, the most recently seen first
	byKey map[string]*list.Element
}

type clientLimiter struct {
	key string
	lim *rate.Limiter
}

func newClientLimiters(max int) *clientLimiters {
	return &clientLimiters{max: max, byKey: make(map[string]*list.Element)}
}

// peek says whether key's limiter (of rate every) holds a unit now,
// taking none, or how long until it does: a key not seen holds one.
func (c *clientLimiters) peek(key string, every rate.Limit, now time.Time) (time.Duration, bool) {
	c.mu.Lock()
	e, ok := c.byKey[key]
	c.mu.Unlock()
	if !ok {
		return 0, true
	}
	tokens := e.Value.(*clientLimiter).lim.TokensAt(now)
	if tokens >= 1 {
		return 0, true
	}
	return time.Duration((1 - tokens) / float64(every) * float64(time.Second)), false
}

// take takes one unit of key's limiter (every, burst), made full when key
// is new, or says how long until one is there.
func (c *clientLimiters) take(key string, every rate.Limit, burst int, now time.Time) (time.Duration, bool) {
	res := c.reserve(key, every, burst, now)
	if wait := res.DelayFrom(now); wait > 0 {
		res.CancelAt(now)
		return wait, false
	}
	return 0, true
}

// reserve reserves one unit of key's limiter, which it makes (every, burst)
// when the key is not remembered; the caller cancels a reservation it does
// not keep.
func (c *clientLimiters) reserve(key string, every rate.Limit, burst int, now time.Time) *rate.Reservation {
	c.mu.Lock()
	var lim *rate.Limiter
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		lim = e.Value.(*clientLimiter).lim
	} else {
		lim = rate.NewLimiter(every, burst)
		c.byKey[key] = c.order.PushFront(&clientLimiter{key: key, lim: lim})
		if c.order.Len() > c.max {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			delete(c.byKey, oldest.Value.(*clientLimiter).key)
		}
	}
	c.mu.Unlock()
	return lim.ReserveN(now, 1)
}
