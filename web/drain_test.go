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
