package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/klauspost/compress/gzhttp"
)

// static is the browser client, served at / and /static/.
//
//go:embed static
var static embed.FS

// clientPages are the paths the client routes itself (history routing).
var clientPages = []string{
	"/",
	"/global",
	"/u/{login}",
	"/u/{login}/followers",
	"/u/{login}/following",
	"/s/{id:[1-9][0-9]*}",
	"/search",
	"/lists",
	"/lists/{id:[1-9][0-9]*}",
	"/notifications",
	"/settings",
	"/admin",
}

// gzipSuffix is what gzhttp adds inside the ETag of an answer it
// compresses: the gzip encoding is another representation of the file, so
// it needs a tag of its own.
const gzipSuffix = "-gzip"

// clientHandlers serve the client: index answers its pages with index.html,
// files answers /static/. Both give each file a strong ETag, answer a
// client that holds the file already with 304, and compress for clients
// that accept gzip. missing answers an address that is no page with
// index.html too, under 404, so the browser shows the client's not-found
// page.
func (s *Server) clientHandlers() (index, missing http.HandlerFunc, files http.Handler) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	assets := map[string]asset{}
	err = fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, path)
		if err != nil {
			return err
		}
		assets[path] = newAsset(path, body)
		return nil
	})
	if err != nil {
		panic(err) // an embedded file cannot be read: the build is broken
	}
	page, ok := assets["index.html"]
	if !ok {
		panic("web/static has no index.html")
	}
	compress, err := gzhttp.NewWrapper(gzhttp.EnableZstd(false), gzhttp.SuffixETag(gzipSuffix))
	if err != nil {
		panic(err) // the options above are valid
	}
	index = compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.setClientHeaders(w.Header(), r)
		page.serve(w, r)
	}))
	missing = compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.setClientHeaders(w.Header(), r)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(page.body) // a client gone away is no error of ours
	}))
	files = compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.setClientHeaders(w.Header(), r)
		a, ok := assets[strings.TrimPrefix(r.URL.Path, "/static/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		a.serve(w, r)
	}))
	return index, missing, files
}

// notFound answers a request that no route takes. Under /api/, and for
// any method but GET (and HEAD), it is the API's 404. Otherwise a client
// page's address with slashes after it redirects to the address without
// them, and anything else is missing: the client's page, which shows its
// not-found view, under 404.
func (s *Server) notFound(missing http.HandlerFunc) http.HandlerFunc {
	pages := chi.NewRouter()
	for _, page := range clientPages {
		pages.Get(page, func(http.ResponseWriter, *http.Request) {})
	}
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if path == "/api" || strings.HasPrefix(path, "/api/") || r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.writeError(w, r, errNotFound)
			return
		}
		// Every page but / starts with a name, so the trimmed path cannot
		// start with "//" and be taken for another host.
		if trimmed := strings.TrimRight(path, "/"); trimmed != path && trimmed != "" &&
			pages.Match(chi.NewRouteContext(), http.MethodGet, trimmed) {
			target := url.URL{Path: trimmed, RawQuery: r.URL.RawQuery}
			http.Redirect(w, r, target.String(), http.StatusMovedPermanently)
			return
		}
		missing(w, r)
	}
}

// asset is one file of the client, read and hashed once at start.
type asset struct {
	name     string // its path under static/, which gives its Content-Type
	body     []byte
	etag     string // strong: a hash of body
	gzipETag string // the tag of its gzip encoding, as gzhttp writes it
}

func newAsset(name string, body []byte) asset {
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:16])
	return asset{name: name, body: body, etag: `"` + tag + `"`, gzipETag: `"` + tag + gzipSuffix + `"`}
}

// serve answers a GET or HEAD of the asset: 304 when the request names a
// tag of it in If-None-Match, else the file, under its ETag (which gzhttp
// extends when it compresses the answer). Cache-Control: no-cache has the
// browser ask each time, so a new build is seen at once; the 304 makes
// asking cheap.
func (a asset) serve(w http.ResponseWriter, r *http.Request) {
	if tag, ok := a.heldBy(r); ok {
		w.Header().Set("ETag", tag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}

// heldBy reports whether the request's If-None-Match names this file's
// tag or its gzip encoding's (compared weakly, as If-None-Match is), and
// which: the 304 confirms the representation the client holds, since both
// encodings are of the same file. A list of tags is split at commas, which
// none of ours holds.
func (a asset) heldBy(r *http.Request) (string, bool) {
	for _, field := range r.Header.Values("If-None-Match") {
		for _, tag := range strings.Split(field, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			switch tag {
			case "*":
				return a.etag, true
			case a.etag, a.gzipETag:
				return tag, true
			}
		}
	}
	return "", false
}

// setClientHeaders sets the security headers of every file of the client:
// the page and what it loads alike, since any of them may be opened alone.
func (s *Server) setClientHeaders(h http.Header, r *http.Request) {
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", s.contentSecurityPolicy(r))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

// contentSecurityPolicy lets the client load from its own origin only,
// connect to its own origin, its stream (ws: or wss:, whichever the page's
// scheme, which a proxy may hide) and the -allowed-origins only, and post
// forms to its own origin only: a script injected into a page could not
// send what it read anywhere else. It loads no plugins, and takes no
// string as markup or code (Trusted Types, with no policy: the client
// builds its DOM from nodes and text alone, so a sink such as innerHTML
// that a later change would feed throws rather than parses).
func (s *Server) contentSecurityPolicy(r *http.Request) string {
	connect := []string{"'self'"}
	if plainHost(r.Host) {
		connect = append(connect, "ws://"+r.Host, "wss://"+r.Host)
	}
	connect = append(connect, s.allowedOriginList...)
	return "default-src 'self'; connect-src " + strings.Join(connect, " ") +
		"; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'" +
		"; require-trusted-types-for 'script'; trusted-types 'none'"
}

// plainHost reports whether host is a host name or address with an
// optional port, nothing that could end a directive of the policy it is
// written into.
func plainHost(host string) bool {
	if host == "" {
		return false
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)) {
			return false
		}
	}
	return true
}
