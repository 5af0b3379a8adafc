package web_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"chorus/social"
)

// The client's pages answer with the client, so a shared link opens it;
// other paths answer with the client too, under 404, so the browser shows
// its not-found page; under /api/ a 404 stays in the API's error shape.
func TestClientPagesServeTheClient(t *testing.T) {
	in := newEnv(t, social.Options{}).start()
	c := in.anon(t)
	for _, path := range []string{"/", "/global", "/u/ada", "/u/ada/followers", "/u/ada/following", "/s/42", "/s/123", "/search", "/lists", "/lists/7", "/notifications", "/settings", "/admin"} {
		res := c.do(http.MethodGet, path, nil)
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `<main id="main"`) {
			t.Errorf("GET %s: %d, want the client page", path, res.Status)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
	}
	for _, path := range []string{"/u", "/u/ada/likes", "/s", "/s/abc", "/s/0", "/s/12x", "/lists/abc", "/nothing/here/", "//example.com/"} {
		res := c.do(http.MethodGet, path, nil)
		if res.Status != http.StatusNotFound || !strings.Contains(string(res.Body), `<main id="main"`) {
			t.Errorf("GET %s: %d %.80s, want 404 with the client page", path, res.Status, res.Body)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		if csp := res.Header.Get("Content-Security-Policy"); csp == "" {
			t.Errorf("GET %s: no Content-Security-Policy", path)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/nothing"},
		{http.MethodGet, "/api/v1/users/ada/"},
		{http.MethodGet, "/api/nothing"},
		{http.MethodPost, "/nothing"},
	} {
		res := c.do(tc.method, tc.path, nil)
		if res.Status != http.StatusNotFound || res.errorCode(t) != "not_found" {
			t.Errorf("%s %s: %d %s, want 404 not_found", tc.method, tc.path, res.Status, res.Body)
		}
	}
}

// A client page's address with a slash after it redirects, for good, to
// the address without it, keeping the query.
func TestClientPagesTrailingSlashRedirects(t *testing.T) {
	in := newEnv(t, social.Options{}).start()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ path, want string }{
		{"/u/alice/", "/u/alice"},
		{"/u/alice//", "/u/alice"},
		{"/u/alice/followers/", "/u/alice/followers"},
		{"/global/", "/global"},
		{"/s/123/", "/s/123"},
		{"/search/?q=ada", "/search?q=ada"},
		{"/u/a%20b/", "/u/a%20b"},
	} {
		res, err := hc.Get(in.srv.URL + tc.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != tc.want {
			t.Errorf("GET %s: %d to %q, want 301 to %q", tc.path, res.StatusCode, res.Header.Get("Location"), tc.want)
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

// Every file of the client has a strong ETag made from its content, a 304
// for a client that holds it, and a gzip encoding, with a tag of its own,
// for a client that accepts it; the pages share index.html's.
func TestClientFilesRevalidateAndCompress(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	c := in.anon(t)
	index := readStatic(t, "index.html")
	cases := []struct {
		path string
		body []byte
	}{
		{"/", index},
		{"/global", index},
		{"/u/ada", index},
		{"/u/ada/followers", index},
		{"/s/42", index},
		{"/static/app.js", readStatic(t, "app.js")},
		{"/static/style.css", readStatic(t, "style.css")},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			sum := sha256.Sum256(tc.body)
			tag := `"` + hex.EncodeToString(sum[:16]) + `"`
			gzipTag := strings.TrimSuffix(tag, `"`) + `-gzip"`

			plain := c.do("GET", tc.path, nil, "Accept-Encoding", "identity")
			if plain.Status != http.StatusOK || !bytes.Equal(plain.Body, tc.body) {
				t.Fatalf("GET: %d, %d bytes; want 200 and the file's %d", plain.Status, len(plain.Body), len(tc.body))
			}
			if got := plain.Header.Get("ETag"); got != tag {
				t.Errorf("ETag %s, want %s (a hash of the content)", got, tag)
			}
			checkClientHeaders(t, "GET", plain)

			for _, held := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
				res := c.do("GET", tc.path, nil, "Accept-Encoding", "identity", "If-None-Match", held)
				if res.Status != http.StatusNotModified || len(res.Body) != 0 || res.Header.Get("ETag") != tag {
					t.Errorf("If-None-Match %s: %d, %d bytes, ETag %s; want 304, none, %s",
						held, res.Status, len(res.Body), res.Header.Get("ETag"), tag)
				}
				checkClientHeaders(t, "304", res)
			}
			if res := c.do("GET", tc.path, nil, "If-None-Match", `"an-older-build"`); res.Status != http.StatusOK {
				t.Errorf("If-None-Match of another version: %d, want 200", res.Status)
			}
			if res := c.do("HEAD", tc.path, nil, "If-None-Match", tag); res.Status != http.StatusNotModified {
				t.Errorf("HEAD with If-None-Match: %d, want 304", res.Status)
			}

			zipped := c.do("GET", tc.path, nil, "Accept-Encoding", "gzip, deflate")
			if zipped.Status != http.StatusOK {
				t.Fatalf("GET accepting gzip: %d", zipped.Status)
			}
			checkClientHeaders(t, "gzip", zipped)
			if ce := zipped.Header.Get("Content-Encoding"); ce != "gzip" {
				t.Fatalf("Content-Encoding %q, want gzip", ce)
			}
			if got := gunzip(t, zipped.Body); !bytes.Equal(got, tc.body) {
				t.Errorf("the gzip answer unzips to %d bytes, not the file's %d", len(got), len(tc.body))
			}
			if len(zipped.Body) >= len(tc.body) {
				t.Errorf("gzip answer of %d bytes for a file of %d", len(zipped.Body), len(tc.body))
			}
			if got := zipped.Header.Get("ETag"); got != gzipTag {
				t.Errorf("ETag of the gzip answer %s, want %s: another representation, another tag", got, gzipTag)
			}
			res := c.do("GET", tc.path, nil, "Accept-Encoding", "gzip", "If-None-Match", gzipTag)
			if res.Status != http.StatusNotModified || res.Header.Get("ETag") != gzipTag {
				t.Errorf("If-None-Match of the gzip tag: %d, ETag %s; want 304 and %s", res.Status, res.Header.Get("ETag"), gzipTag)
			}
		})
	}
	if res := c.do("GET", "/static/nope.js", nil); res.Status != http.StatusNotFound {
		t.Errorf("GET /static/nope.js: %d, want 404", res.Status)
	}
}

// checkClientHeaders checks what every answer of the client carries: the
// security headers, revalidation each time, and Vary for the caches.
func checkClientHeaders(t *testing.T, what string, res response) {
	t.Helper()
	for name, want := range map[string]string{
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
		"X-Frame-Options":        "DENY",
		"Referrer-Policy":        "same-origin",
		"Vary":                   "Accept-Encoding",
	} {
		if got := res.Header.Get(name); got != want {
			t.Errorf("%s: %s %q, want %q", what, name, got, want)
		}
	}
	if !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("%s: Content-Security-Policy %q", what, res.Header.Get("Content-Security-Policy"))
	}
}

func readStatic(t *testing.T, name string) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("static", name))
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("bad gzip: %v", err)
	}
	return out
}

// index.html names every module of the client in a modulepreload, so the
// browser fetches them at once rather than import by import.
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
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		if !strings.Contains(string(page), `<link rel="modulepreload" href="/static/`+name+`">`) {
			t.Errorf("index.html does not preload %s", name)
		}
	}
}

// The client is whole and holds nothing dead: every module it imports and
// every /static/ file it names exists, and every module is reached by the
// imports from app.js, the one the page runs.
func TestClientModulesResolve(t *testing.T) {
	entries, err := os.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, e := range entries {
		files[e.Name()] = true
	}
	named := regexp.MustCompile(`/static/([\w.-]+)`)
	imported := regexp.MustCompile(`(?m)^(?:import|export)\b[^;]*?['"]\./([\w.-]+)['"]`)
	for name := range files {
		if !strings.HasSuffix(name, ".js") && name != "index.html" {
			continue
		}
		for _, m := range named.FindAllStringSubmatch(string(readStatic(t, name)), -1) {
			if !files[m[1]] {
				t.Errorf("%s names /static/%s, which does not exist", name, m[1])
			}
		}
	}
	reached := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if reached[name] {
			return
		}
		reached[name] = true
		for _, m := range imported.FindAllStringSubmatch(string(readStatic(t, name)), -1) {
			if !files[m[1]] {
				t.Errorf("%s imports ./%s, which does not exist", name, m[1])
				continue
			}
			visit(m[1])
		}
	}
	visit("app.js")
	for name := range files {
		if strings.HasSuffix(name, ".js") && !reached[name] {
			t.Errorf("no import from app.js reaches %s", name)
		}
	}
}

// The event stream's client listens for every frame type the server
// sends (protocol/frames.go's first block), each an event of that name:
// one it leaves out never reaches a client on events, though it reaches
// one on a WebSocket.
func TestEventClientListensForEveryFrame(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "protocol", "frames.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST || gen.Doc == nil || !strings.HasPrefix(gen.Doc.Text(), "Frames the server sends") {
			continue
		}
		for _, spec := range gen.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					typ, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					sent = append(sent, typ)
				}
			}
		}
	}
	if len(sent) < 10 {
		t.Fatalf("found %d frame types in protocol/frames.go: %q", len(sent), sent)
	}
	list := regexp.MustCompile(`(?s)const FRAME_TYPES = \[(.*?)\];`).FindSubmatch(readStatic(t, "events.js"))
	if list == nil {
		t.Fatal("no FRAME_TYPES in events.js")
	}
	listened := map[string]bool{}
	for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllSubmatch(list[1], -1) {
		listened[string(m[1])] = true
	}
	for _, typ := range sent {
		if !listened[typ] {
			t.Errorf("events.js's FRAME_TYPES leaves out %q", typ)
		}
	}
}
