package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/social"
)

// While the hub drains, /readyz answers 503 "draining", so that a load
// balancer sends no new client here, and a new stream is refused with 503
// shutting_down, which nginx retries on another instance; the API still
// answers meanwhile.
func TestReadyzSaysDraining(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	mover := in.signUp(t, "mover")
	if res := in.anon(t).do("GET", "/readyz", nil); res.Status != http.StatusOK {
		t.Fatalf("readyz before the drain: %d", res.Status)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := in.hub.Drain(ctx, time.Second); err != nil {
		t.Fatalf("drain: %v", err)
	}
	res := in.anon(t).do("GET", "/readyz", nil)
	if res.Status != http.StatusServiceUnavailable || !strings.Contains(string(res.Body), "draining") {
		t.Fatalf("readyz while draining: %d %s, want 503 draining", res.Status, res.Body)
	}
	streamRefused(t, mover, http.StatusServiceUnavailable, "shutting_down", "")
	if res := mover.do("GET", "/api/v1/me", nil); res.Status != http.StatusOK {
		t.Fatalf("GET /me while draining: %d %s", res.Status, res.Body)
	}
}

// A drained event stream is told as a WebSocket is: a reconnect event,
// then the close event with 1001, then the response ends.
func TestDrainEndsEventStreams(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	mover := in.signUp(t, "mover")
	s := mover.openEvents("")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := in.hub.Drain(ctx, time.Second); err != nil {
		t.Fatalf("drain: %v", err)
	}
	all := s.ended(30 * time.Second)
	n := len(all)
	if n < 2 || all[n-2].name != "reconnect" || all[n-1].name != "close" || all[n-1].code != 1001 {
		var names []string
		for _, ev := range all {
			names = append(names, ev.name)
		}
		t.Fatalf("events %v (last code %d), want reconnect then close 1001", names, all[n-1].code)
	}
}
