package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The gates remember a bounded number of clients: past it, the least
// recently seen is forgotten, and starts afresh when it comes back.
func TestClientLimitersForgetTheLeastRecentlySeen(t *testing.T) {
	t.Parallel()
	c := newClientLimiters(3)
	now := time.Now()
	take := func(key string) bool {
		_, ok := c.take(key, rate.Every(time.Hour), 1, now)
		return ok
	}
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"a", true}, {"b", true}, {"c", true},
		{"a", false}, // its one unit is spent; a is the most recently seen
		{"d", true},  // b, the least recently seen, is forgotten
		{"b", true},  // afresh; c is forgotten
		{"a", false}, // still remembered
		{"d", false},
	} {
		if got := take(tc.key); got != tc.want {
			t.Fatalf("take %s: %v, want %v", tc.key, got, tc.want)
		}
		if n := len(c.byKey); n > 3 || c.order.Len() != n {
			t.Fatalf("%d clients held (%d in order), want at most 3", n, c.order.Len())
		}
	}
}

// An IPv6 client's gate takes a unit from its /64 and its /48 together, or
// from neither: a /64 refused by its site's gate (the site flooded by its
// other /64s) keeps its own unit, and a /64 over its own gate spends none
// of its site's.
func TestGateTakesAddressAndSiteTogether(t *testing.T) {
	t.Parallel()
	s := &Server{sites: 2}
	s.gates.init(1)
	g := &gate{name: "g", every: rate.Every(time.Hour), burst: 1}
	from := func(n int) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = fmt.Sprintf("[2001:db8:1:%x::1]:4000", n)
		return r
	}
	pass := func(n int) bool {
		_, ok := s.passGate(g, from(n))
		return ok
	}
	tokens := func(key string) float64 {
		e, ok := s.gates.clients.byKey[key]
		if !ok {
			return -1
		}
		return e.Value.(*clientLimiter).lim.Tokens()
	}
	// /64 number 1 spends its unit and one of the site's two; again, it is
	// refused by its own gate and spends none of the site's.
	if !pass(1) || pass(1) {
		t.Fatal("the first /64: want its one unit, then a refusal")
	}
	if got := tokens("g:s2001:db8:1::/48"); got < 0.99 || got > 1.01 {
		t.Fatalf("the site holds %v units after one /64's refusal, want 1", got)
	}
	if !pass(2) {
		t.Fatal("a second /64: want the site's last unit")
	}
	// A third /64 is refused by the site, and keeps its own unit.
	if pass(3) {
		t.Fatal("a third /64: want the site's refusal")
	}
	if got := tokens("g:a2001:db8:1:3::/64"); got < 0.99 || got > 1.01 {
		t.Fatalf("the third /64 holds %v units after its site refused it, want 1", got)
	}
}
