package web

import (
	"embed"
	"io/fs"
	"net/http"
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
	"/s/{id}",
}

func clientHandlers() (index http.HandlerFunc, files http.Handler) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	page, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	index = func(w http.ResponseWriter, r *http.Request) {
		setClientHeaders(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}
	fileServer := http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
	files = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setClientHeaders(w.Header())
		fileServer.ServeHTTP(w, r)
	})
	return index, files
}

// setClientHeaders sets the security headers of every file of the client:
// the page and what it loads alike, since any of them may be opened alone.
func setClientHeaders(h http.Header) {
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}
