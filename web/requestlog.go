package web

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// requestLog is what the middleware and handlers inside logRequests tell
// its line about a request: the signed-in user, once authenticate knows
// them, and what the request asked of Redis (the Metrics' Redis hook
// counts it). One goroutine serves a request, so uid needs no lock; a
// request's Redis calls may come from others.
type requestLog struct {
	uid   int64 // 0: not signed in
	redis redisUse
	// metrics are the instance's whose Redis hook counts into redis: an
	// instance sharing its Redis client with another (tests do) has the
	// other's hook called too, which leaves this log alone.
	metrics *Metrics
}

// redisUse is what a request asked of Redis: its round trips (a command, a
// pipeline or a transaction: one each, a pipeline split over a cluster's
// masters too) and the time it waited on them, summed.
type redisUse struct {
	trips atomic.Int64
	wait  atomic.Int64 // nanoseconds
}

// add notes a round trip that took d.
func (u *redisUse) add(d time.Duration) {
	u.trips.Add(1)
	u.wait.Add(int64(d))
}

// requestLogOf is the requestLog of the request ctx belongs to, or nil.
func requestLogOf(ctx context.Context) *requestLog {
	l, _ := ctx.Value(requestLogKey{}).(*requestLog)
	return l
}

type requestLogKey struct{}

// statusClientClosed is what the log says of a request whose client went
// away before an answer was written: nginx's 499, which no answer carries.
const statusClientClosed = 499

// loggedStatus is the status the log gives a request whose handler wrote
// status (0: nothing). Nothing written is the 200 net/http then sends, or,
// when the client is gone (its context ended before the handler
// returned), no answer at all: 499.
func loggedStatus(r *http.Request, status int) int {
	if status != 0 {
		return status
	}
	if r.Context().Err() != nil {
		return statusClientClosed
	}
	return http.StatusOK
}

// noteUser puts uid in the log line of the request ctx belongs to.
func noteUser(ctx context.Context, uid int64) {
	if l := requestLogOf(ctx); l != nil {
		l.uid = uid
	}
}

// logRequests writes one line per request, with its request id, which the
// answer carries too (X-Request-Id), the client's address (as the limits
// count it, through trusted proxies), the user when signed in, and the
// round trips to Redis it made and the time it waited on them, when any.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(middleware.RequestIDHeader, middleware.GetReqID(r.Context()))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		l := &requestLog{metrics: s.metrics}
		start := time.Now()
		next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), requestLogKey{}, l)))
		client := "unknown"
		if ip := s.clientIP(r); ip.IsValid() {
			client = ip.String()
		}
		attrs := []slog.Attr{
			slog.String("request_id", middleware.GetReqID(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", loggedStatus(r, ww.Status())),
			slog.Int("bytes", ww.BytesWritten()),
			slog.Duration("duration", time.Since(start)),
			slog.String("client", client),
		}
		if l.uid != 0 {
			attrs = append(attrs, slog.Int64("uid", l.uid))
		}
		if n := l.redis.trips.Load(); n > 0 {
			attrs = append(attrs, slog.Int64("redis_round_trips", n), slog.Duration("redis_wait", time.Duration(l.redis.wait.Load())))
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	})
}
