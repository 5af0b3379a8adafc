package web_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/social"

	"chorus/web"
	"github.com/go-redis/redis_rate/v10"
)

// The client's policy lets it connect to its own origin, its stream and the
// allowed origins only, and post forms to its own origin only.
func TestContentSecurityPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.origins = []string{"https://app.example.com/", "https://Other.Example:8443"}
	in := e.start()
	host := strings.TrimPrefix(in.srv.URL, "http://")
	for _, path := range []string{"/", "/static/app.js", "/static/nope.js"} {
		res := in.anon(t).do("GET", path, nil)
		directives := map[string][]string{}
		for _, d := range strings.Split(res.Header.Get("Content-Security-Policy"), ";") {
			f := strings.Fields(d)
			if len(f) > 0 {
				directives[f[0]] = f[1:]
			}
		}
		connect := directives["connect-src"]
		slices.Sort(connect)
		want := []string{"'self'", "https://app.example.com", "https://other.example:8443", "ws://" + host, "wss://" + host}
		slices.Sort(want)
		if !slices.Equal(connect, want) {
			t.Errorf("GET %s: connect-src %q, want %q", path, connect, want)
		}
		if got := directives["form-action"]; !slices.Equal(got, []string{"'self'"}) {
			t.Errorf("GET %s: form-action %q, want 'self'", path, got)
		}
		for name, want := range map[string][]string{
			"default-src": {"'self'"}, "object-src": {"'none'"},
			// No string becomes markup or code (checked in Chromium by
			// TestBrowserLinksIntoTheAPIStayText).
			"require-trusted-types-for": {"'script'"}, "trusted-types": {"'none'"},
		} {
			if got := directives[name]; !slices.Equal(got, want) {
				t.Errorf("GET %s: %s %q, want %q", path, name, got, want)
			}
		}
	}

	// A Host that could end the directive is left out of it.
	req, err := http.NewRequest("GET", in.srv.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil;script-src"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); strings.Contains(csp, "evil") {
		t.Fatalf("Host %q written into the policy: %q", req.Host, csp)
	}
}

// Every answer of the API, whatever its status, tells browsers not to
// guess its type.
func TestAPIAnswersNoSniff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.origins = []string{"https://app.example.com"}
	e.limits = web.Limits{PostsPerUser: redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: 1}}
	in := e.start()
	a := in.signUp(t, "sniffer")
	anon := in.anon(t)
	a.post("first")
	for _, tc := range []struct {
		name   string
		c      *client
		method string
		path   string
		body   any
		header []string
		status int
	}{
		{"profile", anon, "GET", "/api/v1/users/sniffer", nil, nil, 200},
		{"unknown user", anon, "GET", "/api/v1/users/nobody", nil, nil, 404},
		{"not signed in", anon, "GET", "/api/v1/me", nil, nil, 401},
		{"bad json", anon, "POST", "/api/v1/users", "{", nil, 400},
		{"rate limited", a, "POST", "/api/v1/statuses", map[string]string{"message": "second"}, nil, 429},
		{"wrong method", anon, "PATCH", "/api/v1/users", nil, nil, 405},
		{"unknown route", anon, "GET", "/api/v1/nothing", nil, nil, 404},
		{"preflight", anon, "OPTIONS", "/api/v1/statuses", nil, []string{"Origin", "https://app.example.com", "Access-Control-Request-Method", "POST"}, 204},
		{"stream without upgrade", a, "GET", "/api/v1/stream", nil, nil, 426},
		{"health", anon, "GET", "/healthz", nil, nil, 200},
	} {
		res := tc.c.do(tc.method, tc.path, tc.body, tc.header...)
		if res.Status != tc.status {
			t.Errorf("%s: %s %s answered %d %s, want %d", tc.name, tc.method, tc.path, res.Status, res.Body, tc.status)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: %s %s: X-Content-Type-Options %q, want nosniff", tc.name, tc.method, tc.path, got)
		}
		// Opened as a page, an answer of the API runs and loads nothing.
		const policy = "default-src 'none'; frame-ancestors 'none'; sandbox"
		if got := res.Header.Get("Content-Security-Policy"); strings.HasPrefix(tc.path, "/api/") && got != policy {
			t.Errorf("%s: %s %s: Content-Security-Policy %q, want %q", tc.name, tc.method, tc.path, got, policy)
		}
	}
}
