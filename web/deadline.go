package web

import (
	"context"
	"net/http"
	"time"
)

// DefaultRequestTimeout bounds the work of one API request when
// Config.RequestTimeout says nothing: under the browser client's own 10 s,
// so that it hears 503 rather than give up.
const DefaultRequestTimeout = 5 * time.Second

// withDeadline puts the request timeout on each request's context, which
// every Redis call honours (cmd/chorus makes the client with
// ContextTimeoutEnabled): a Redis that stalls costs a request its deadline,
// answered 503 `timeout`, not the length of the stall. A stream is bound by
// it only until it is upgraded, since it then lives on a context of its
// own.
func (s *Server) withDeadline(next http.Handler) http.Handler {
	if s.requestTimeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.requestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
