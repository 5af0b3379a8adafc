package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"chorus/internal/redistest"
	"chorus/social"
	"chorus/web"
)

func TestRedisUnavailable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.ClientOf(t, srv.URL)
	soc := social.New(rdb, social.Options{Prefix: redistest.Prefix(), BcryptCost: 4})
	h := httptest.NewServer(web.NewServer(web.Config{Social: soc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer h.Close()
	c := &client{tb: t, base: h.URL}
	c.must(http.StatusOK, "GET", "/readyz", nil, nil)
	c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]string{"login": "early", "name": "E", "password": "password1"}, nil)

	srv.Stop()
	if res := c.do("GET", "/readyz", nil); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz with Redis down: %d", res.Status)
	}
	c.must(http.StatusOK, "GET", "/healthz", nil, nil)
	for _, req := range []struct{ method, path string }{
		{"POST", "/api/v1/users"},
		{"GET", "/api/v1/users/early"},
		{"GET", "/api/v1/timelines/global"},
	} {
		res := c.do(req.method, req.path, map[string]string{"login": "late", "name": "L", "password": "password1"})
		if res.Status != http.StatusServiceUnavailable || res.errorCode(t) != "redis_unavailable" {
			t.Fatalf("%s %s with Redis down: %d %s", req.method, req.path, res.Status, res.Body)
		}
	}
	redistest.StartOnPort(t, srv.Port)
	c.must(http.StatusOK, "GET", "/readyz", nil, nil)
}
