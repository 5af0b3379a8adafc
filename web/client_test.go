package web_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"chorus/social"
)

// The client's pages answer with the client, so a shared link opens it;
// other paths stay 404 in the API's error shape.
func TestClientPagesServeTheClient(t *testing.T) {
	in := newEnv(t, social.Options{}).start()
	c := in.anon(t)
	for _, path := range []string{"/", "/global", "/u/ada", "/u/ada/followers", "/u/ada/following", "/s/42"} {
		res := c.do(http.MethodGet, path, nil)
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `<main id="main"`) {
			t.Errorf("GET %s: %d, want the client page", path, res.Status)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
	}
	for _, path := range []string{"/u", "/u/ada/likes", "/s", "/settings"} {
		res := c.do(http.MethodGet, path, nil)
		if res.Status != http.StatusNotFound || res.errorCode(t) != "not_found" {
			t.Errorf("GET %s: %d %s, want 404 not_found", path, res.Status, res.Body)
		}
	}
}

// HEAD is answered wherever GET is, with the GET's status and no body.
func TestHeadWhereverGet(t *testing.T) {
	in := newEnv(t, social.Options{}).start()
	ada := in.signUp(t, "ada")
	anon := in.anon(t)
	for _, tc := range []struct {
		c    *client
		path string
		want int
	}{
		{anon, "/", http.StatusOK},
		{anon, "/u/ada", http.StatusOK},
		{anon, "/static/app.js", http.StatusOK},
		{anon, "/healthz", http.StatusOK},
		{anon, "/readyz", http.StatusOK},
		{anon, "/metrics", http.StatusOK},
		{anon, "/api/v1/users/ada", http.StatusOK},
		{anon, "/api/v1/users/nobody", http.StatusNotFound},
		{anon, "/api/v1/timelines/global", http.StatusOK},
		{anon, "/api/v1/me", http.StatusUnauthorized},
		{ada, "/api/v1/me", http.StatusOK},
		{ada, "/api/v1/timelines/home", http.StatusOK},
	} {
		res := tc.c.do(http.MethodHead, tc.path, nil)
		if res.Status != tc.want || len(res.Body) != 0 {
			t.Errorf("HEAD %s: %d with %d bytes, want %d and none", tc.path, res.Status, len(res.Body), tc.want)
		}
	}
	// A method no route has is still refused.
	if res := anon.do(http.MethodPatch, "/api/v1/users/ada", nil); res.Status != http.StatusMethodNotAllowed {
		t.Errorf("PATCH: %d, want 405", res.Status)
	}
}

// index.html names every module of the client in a modulepreload, so the
// browser fetches them at once rather than import by import; the worker
// (ticker.js) is no module of the page.
func TestIndexPreloadsEveryModule(t *testing.T) {
	page, err := os.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".js") || name == "ticker.js" {
			continue
		}
		if !strings.Contains(string(page), `<link rel="modulepreload" href="/static/`+name+`">`) {
			t.Errorf("index.html does not preload %s", name)
		}
	}
}
