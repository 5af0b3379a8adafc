package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"chorus/social"
)

// corsPage is a page of another origin that signs up, reads /me and posts
// through the API of the Chorus at api, with the browser's credentials (the
// cookie sign-up sets), then reports what it got in window.corsResult.
const corsPage = `<!doctype html><meta charset="utf-8"><title>other origin</title><script>
(async () => {
  const api = %q;
  const call = async (method, path, body) => {
    const opts = { method, credentials: 'include', headers: {} };
    if (body) { opts.headers['Content-Type'] = 'application/json'; opts.body = JSON.stringify(body); }
    try {
      const res = await fetch(api + path, opts);
      return res.status + ' ' + (await res.text()).slice(0, 200);
    } catch (err) {
      return 'blocked: ' + err.name;
    }
  };
  const steps = [];
  steps.push(await call('POST', '/api/v1/users', { login: %q, name: 'Cross Origin', password: 'password-cors' }));
  steps.push(await call('GET', '/api/v1/me'));
  steps.push(await call('POST', '/api/v1/statuses', { message: 'posted from another origin' }));
  window.corsResult = steps;
})();
</script>`

// otherOrigin is a server, not yet started, of the page calling api, which
// is read when the server starts.
func otherOrigin(t *testing.T, api *string, login string) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, corsPage, *api, login)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A page of an allowed origin signs up, reads and posts with the cookie,
// in real Chromium; a page of an origin not allowed can do none of it.
func TestBrowserCORSFromAllowedOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	// Chorus must know the allowed origin before it starts, and the pages
	// Chorus's address before they are served.
	var api string
	allowed, denied := otherOrigin(t, &api, "cors_ok"), otherOrigin(t, &api, "cors_no")
	e.origins = []string{"http://" + allowed.Listener.Addr().String()}
	in := e.start()
	api = in.srv.URL
	allowed.Start()
	denied.Start()

	br := newBrowser(t)
	for _, tc := range []struct {
		name, url string
		want      []string // status of each step
	}{
		{"allowed", allowed.URL, []string{"201", "200", "201"}},
		{"denied", denied.URL, []string{"blocked", "blocked", "blocked"}},
	} {
		p := br.newTab(t, tc.name, tc.url)
		p.open("/")
		p.waitUntil("the page's calls done", 10*time.Second, `window.corsResult ? '' : 'still calling'`)
		got := eval[[]string](p, `window.corsResult`)
		for i, want := range tc.want {
			if len(got) <= i || len(got[i]) < len(want) || got[i][:len(want)] != want {
				t.Fatalf("%s origin: step %d gave %q, want %s (all: %q)", tc.name, i, got, want, got)
			}
		}
	}
	// The allowed page's post is there; the denied page changed nothing.
	var page struct{ Statuses []statusJSON }
	in.anon(t).must(http.StatusOK, "GET", "/api/v1/users/cors_ok/statuses", nil, &page)
	if len(page.Statuses) != 1 || page.Statuses[0].Message != "posted from another origin" {
		t.Fatalf("cors_ok's statuses = %+v", page.Statuses)
	}
	if res := in.anon(t).do("GET", "/api/v1/users/cors_no", nil); res.Status != http.StatusNotFound {
		t.Fatalf("a page of a denied origin signed up: %d", res.Status)
	}
}
