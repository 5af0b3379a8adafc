package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"

	"github.com/redis/go-redis/v9"
)

// A request whose client goes away before anything is written logs 499,
// as nginx does; one whose handler writes nothing but is answered logs
// the 200 net/http sends.
func TestRequestLogClientGone(t *testing.T) {
	t.Parallel()
	var out testio.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&out, nil))}
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(s.logRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			started <- struct{}{}
			<-r.Context().Done() // answers nothing: the client went away
		}
	})))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/wait", nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-started
		cancel()
	}()
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("GET /wait: %v, want it cancelled", err)
	}
	res, err := http.Get(srv.URL + "/quiet")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /quiet: %d", res.StatusCode)
	}

	testio.Eventually(t, 10*time.Second, func() string {
		log := out.String()
		for _, want := range []string{"path=/wait status=499 ", "path=/quiet status=200 "} {
			if !strings.Contains(log, want) {
				return "no " + want + " in\n" + log
			}
		}
		return ""
	})
}

// The Redis hook counts each command or pipeline of a request of its own
// instance once, with its time: not a new connection's setup (sent within
// the call that dialed), not a request of another instance sharing the
// client, not a call made outside any request.
func TestRedisHookCountsARequestsRoundTrips(t *testing.T) {
	t.Parallel()
	mine, other := NewMetrics(), NewMetrics()
	l := &requestLog{metrics: mine}
	ctx := context.WithValue(t.Context(), requestLogKey{}, l)
	slow := func(context.Context, redis.Cmder) error { time.Sleep(2 * time.Millisecond); return nil }
	slowPipe := func(context.Context, []redis.Cmder) error { time.Sleep(2 * time.Millisecond); return nil }
	call := func(h redis.Hook, ctx context.Context, name string) {
		_ = h.ProcessHook(slow)(ctx, redis.NewStatusCmd(ctx, name))
	}
	h := mine.RedisHook()
	call(h, ctx, "get")
	_ = h.ProcessPipelineHook(slowPipe)(ctx, []redis.Cmder{redis.NewStatusCmd(ctx, "multi"), redis.NewStatusCmd(ctx, "zadd"), redis.NewStatusCmd(ctx, "exec")})
	for _, setup := range []string{"hello", "auth", "select", "client", "readonly"} {
		call(h, ctx, setup)
	}
	_ = h.ProcessPipelineHook(slowPipe)(ctx, []redis.Cmder{redis.NewStatusCmd(ctx, "select"), redis.NewStatusCmd(ctx, "client")})
	call(other.RedisHook(), ctx, "get")
	call(h, t.Context(), "get")
	if n := l.redis.trips.Load(); n != 2 {
		t.Errorf("round trips = %d, want 2: a command and a transaction", n)
	}
	if d := time.Duration(l.redis.wait.Load()); d < 4*time.Millisecond {
		t.Errorf("wait = %v, want at least the two calls' 4 ms", d)
	}
}
