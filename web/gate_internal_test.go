package web

import (
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
