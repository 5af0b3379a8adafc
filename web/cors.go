package web

import (
	"net/http"
	"strings"

	"github.com/rs/cors"
)

// corsMaxAge is how long a browser may keep a preflight's answer, seconds.
const corsMaxAge = 600

// cors lets pages of the allowed origins (-allowed-origins) call the API
// with the browser's credentials: it answers their preflights and marks
// their answers readable. Other origins get no CORS headers, so browsers keep
// their pages from reading answers or sending JSON writes. With no allowed
// origins it does nothing.
func (s *Server) cors() func(http.Handler) http.Handler {
	if len(s.allowedOrigins) == 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	c := cors.New(cors.Options{
		AllowOriginFunc: func(origin string) bool {
			_, ok := s.allowedOrigins[strings.ToLower(origin)]
			return ok
		},
		AllowedMethods:   []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders:   []string{"Content-Type", "Authorization", "X-Request-Id"},
		ExposedHeaders:   []string{"Retry-After", "X-Request-Id"},
		AllowCredentials: true,
		MaxAge:           corsMaxAge,
	})
	return c.Handler
}
