package web_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/internal/version"
	"chorus/social"
)

// metric reads one sample from /metrics: the line of name with exactly the
// given labels, in name order (`method="GET",route="/x"`, or "" for none).
// Missing is -1.
func (in *instance) metric(tb testing.TB, name, labels string) float64 {
	tb.Helper()
	res := in.anon(tb).do("GET", "/metrics", nil)
	if res.Status != http.StatusOK {
		tb.Fatalf("GET /metrics: %d", res.Status)
	}
	want := name
	if labels != "" {
		want += "{" + labels + "}"
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if key, val, ok := strings.Cut(line, " "); ok && key == want {
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				tb.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return -1
}

func TestMetricsHTTP(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	a := in.signUp(t, "metered")
	const me = `method="GET",route="/api/v1/me",status="200"`
	before := max(0, in.metric(t, "chorus_http_requests_total", me))
	for range 3 {
		a.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
	}
	if got := in.metric(t, "chorus_http_requests_total", me); got != before+3 {
		t.Fatalf("requests to /me = %v, want %v", got, before+3)
	}
	in.anon(t).do("GET", "/api/v1/users/nobody", nil)
	if got := in.metric(t, "chorus_http_requests_total", `method="GET",route="/api/v1/users/{login}",status="404"`); got != 1 {
		t.Fatalf("404s by route pattern = %v, want 1", got)
	}
	if got := in.metric(t, "chorus_http_request_duration_seconds_count", `method="GET",route="/api/v1/me"`); got < 3 {
		t.Fatalf("latency observations of /me = %v, want at least 3", got)
	}
	res := a.do("GET", "/api/v1/me", nil)
	if res.Header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id on the answer")
	}
	// A method made up is counted as OTHER: no client makes series.
	for _, method := range []string{"BREW", "WHEN"} {
		a.do(method, "/api/v1/me", nil)
	}
	if got := in.metric(t, "chorus_http_requests_total", `method="OTHER",route="unmatched",status="405"`); got != 2 {
		t.Fatalf("requests of made-up methods = %v, want 2 as OTHER", got)
	}
	if got := in.metric(t, "chorus_http_requests_total", `method="BREW",route="unmatched",status="405"`); got != -1 {
		t.Fatalf("a made-up method has a series of its own: %v", got)
	}
}

func TestMetricsStreamsAndPosts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{FanoutPassSize: 1}).start()
	author, fan := in.signUp(t, "author"), in.signUp(t, "fan")
	fan.follow("author")
	if got := in.metric(t, "chorus_connections_open", ""); got != 0 {
		t.Fatalf("connections before = %v", got)
	}
	s := fan.connect()
	if got := in.metric(t, "chorus_connections_open", ""); got != 1 {
		t.Fatalf("connections open = %v, want 1", got)
	}
	if got := in.metric(t, "chorus_users_online", ""); got != 1 {
		t.Fatalf("users online = %v, want 1", got)
	}
	sentBefore := in.metric(t, "chorus_frames_sent_total", "")
	author.post("counted")
	s.nextOf("status", 2*time.Second)
	if got := in.metric(t, "chorus_statuses_posted_total", ""); got != 1 {
		t.Fatalf("statuses posted = %v, want 1", got)
	}
	if got := in.metric(t, "chorus_frames_sent_total", ""); got < sentBefore+1 {
		t.Fatalf("frames sent = %v, want more than %v", got, sentBefore)
	}
	s.send(map[string]string{"type": "heartbeat"})
	testio.Eventually(t, 2*time.Second, func() string {
		if got := in.metric(t, "chorus_heartbeats_total", ""); got != 1 {
			return fmt.Sprintf("heartbeats = %v, want 1", got)
		}
		return ""
	})
	// Every tick's flush takes some time, with beats or without.
	testio.Eventually(t, 2*time.Second, func() string {
		if got := in.metric(t, "chorus_presence_flush_seconds_total", ""); got <= 0 {
			return fmt.Sprintf("presence flush seconds = %v, want more than 0", got)
		}
		return ""
	})
	s.close()
	testio.Eventually(t, 2*time.Second, func() string {
		if got := in.metric(t, "chorus_connections_open", ""); got != 0 {
			return fmt.Sprintf("connections open after close = %v", got)
		}
		return ""
	})
}

func TestMetricsSlowClientAndDrops(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.realtime.QueueSize = 2
	in := e.start()
	slow := in.signUp(t, "slowpoke")
	ws, _, err := slow.dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	big := fmt.Sprintf(`{"type":"status","status":{"id":%%d,"message":"%s"}}`, strings.Repeat("y", 60<<10))
	testio.Eventually(t, 10*time.Second, func() string {
		for i := range 20 {
			in.publish(t, in.social.UserChannel(slow.id), fmt.Sprintf(big, i+1))
		}
		if got := in.metric(t, "chorus_slow_clients_closed_total", ""); got != 1 {
			return fmt.Sprintf("slow clients closed = %v, want 1", got)
		}
		return ""
	})
	if got := in.metric(t, "chorus_frames_dropped_total", ""); got < 1 {
		t.Fatalf("frames dropped = %v, want some", got)
	}
}

func TestMetricsFanoutBacklog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{FanoutPassSize: 1})
	e.noWorker = true
	in := e.start()
	author := in.signUp(t, "author")
	for i := range 3 {
		in.signUp(t, fmt.Sprintf("fan%d", i)).follow("author")
	}
	if got := in.metric(t, "chorus_fanout_jobs_backlog", ""); got != 0 {
		t.Fatalf("backlog at rest = %v", got)
	}
	author.post("through the job") // one pass inline, the rest waits for a worker
	time.Sleep(1100 * time.Millisecond)
	if got := in.metric(t, "chorus_fanout_jobs_backlog", ""); got != 1 {
		t.Fatalf("backlog = %v, want 1", got)
	}
	if got := in.metric(t, "chorus_fanout_oldest_job_age_seconds", ""); got < 1 || got > 30 {
		t.Fatalf("oldest job age = %v, want about a second", got)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go in.social.NewWorker("late", slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)
	testio.Eventually(t, 10*time.Second, func() string {
		if got := in.metric(t, "chorus_fanout_jobs_backlog", ""); got != 0 {
			return fmt.Sprintf("backlog = %v, want 0 once done", got)
		}
		if got := in.metric(t, "chorus_fanout_oldest_job_age_seconds", ""); got != 0 {
			return fmt.Sprintf("oldest job age = %v, want 0 when none", got)
		}
		return ""
	})
}

func TestMetricsRedisErrorsAndResubscribes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := newEnv(t, social.Options{})
	in := e.startOn(redistest.ClientOf(t, srv.URL))
	a := in.signUp(t, "restarter")
	a.connect()
	if got := in.metric(t, "chorus_redis_errors_total", ""); got != 0 {
		t.Fatalf("redis errors at rest = %v", got)
	}
	srv.Stop()
	in.anon(t).do("GET", "/api/v1/users/restarter", nil)
	if got := in.metric(t, "chorus_redis_errors_total", ""); got < 1 {
		t.Fatalf("redis errors with Redis down = %v, want some", got)
	}
	redistest.StartOnPort(t, srv.Port)
	testio.Eventually(t, 15*time.Second, func() string {
		if got := in.metric(t, "chorus_pubsub_resubscribes_total", ""); got < 1 {
			return fmt.Sprintf("resubscribes = %v, want at least 1", got)
		}
		return ""
	})
}

// chorus_build_info names the running build in its labels.
func TestMetricsBuildInfo(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	v := version.Current()
	labels := fmt.Sprintf(`goversion=%q,revision=%q,version=%q`, v.GoVersion, v.Revision, v.Version)
	if got := in.metric(t, "chorus_build_info", labels); got != 1 {
		t.Fatalf("chorus_build_info{%s} = %v, want 1", labels, got)
	}
	if v.GoVersion != runtime.Version() {
		t.Fatalf("goversion %q, want %q", v.GoVersion, runtime.Version())
	}
}
