package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"chorus/internal/version"
	"chorus/realtime"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// Metrics are the Prometheus metrics of one instance, served at /metrics.
// Counters the other packages keep (the hub's, the job stream's, presence)
// are read when Prometheus scrapes.
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	redisWait   *prometheus.HistogramVec
	redisTrips  *prometheus.HistogramVec
	redisErrors prometheus.Counter
	posted      prometheus.Counter
}

// NewMetrics returns a fresh set of metrics with the Go runtime's and the
// process's own.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chorus_http_requests_total", Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "chorus_http_request_duration_seconds", Help: "Time to answer HTTP requests, by route pattern and method (streams excluded).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
		redisWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chorus_http_request_redis_seconds",
			Help:    "Time a request waited on Redis, summed over its round trips, by route pattern and method (streams excluded): each from the call to its answer read, which holds a wait for a pooled connection and for a core once the answer came; the rest of the request's time is the server's own.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route", "method"}),
		redisTrips: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chorus_http_request_redis_round_trips",
			Help:    "Round trips to Redis a request made (a command, a pipeline or a transaction: one each), by route pattern and method (streams excluded).",
			Buckets: []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 50},
		}, []string{"route", "method"}),
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chorus_redis_errors_total", Help: "Redis commands and dials that failed (not counting empty replies).",
		}),
		posted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chorus_statuses_posted_total", Help: "Statuses posted through this instance.",
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.redisWait, m.redisTrips, m.redisErrors, m.posted, buildInfo(version.Current()),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// buildInfo is the chorus_build_info gauge: always 1, its labels naming the
// build, so that a dashboard can tell which instances run which.
func buildInfo(v version.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "chorus_build_info",
		Help: "Always 1; the labels name the build: module version, VCS revision (empty when not recorded) and Go version.",
		ConstLabels: prometheus.Labels{
			"version": v.Version, "revision": v.Revision, "goversion": v.GoVersion,
		},
	})
	g.Set(1)
	return g
}

// RedisHook counts failed Redis commands, and the round trips of each
// request and the time it waited on them; add it to the Redis client.
func (m *Metrics) RedisHook() redis.Hook { return redisHook{m} }

// register adds the metrics read from the server's parts at scrape time.
func (m *Metrics) register(s *Server) {
	st := s.stream.Counters()
	counter := func(name, help string, v interface{ Load() int64 }) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chorus_connections_open", Help: "Streams open on this instance, WebSockets and Server-Sent Events."},
			func() float64 { return float64(st.Open.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chorus_event_streams_open", Help: "Streams open on this instance as Server-Sent Events, counted in chorus_connections_open too."},
			func() float64 { return float64(st.EventStreams.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chorus_stream_readers", Help: "Goroutines reading streams' clients now: one per stream whose client's bytes are being read. An idle stream has none, unless its socket cannot be watched (then one each)."},
			func() float64 { return float64(st.Readers.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chorus_stream_readers_idle", Help: "Goroutines the process keeps idle for the next streams' reads (at most 64, whatever the streams held), so that a read starts on a grown stack."},
			func() float64 { return float64(realtime.IdleReaders()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chorus_stream_writers_idle", Help: "Goroutines the process keeps idle for the next streams' writes (at most 64, whatever the streams held), so that a write starts on a grown stack."},
			func() float64 { return float64(realtime.IdleWriters()) }),
		counter("chorus_frames_sent_total", "Frames written to streams.", &st.FramesSent),
		counter("chorus_frames_dropped_total", "Frames not written: the stream was closing, too slow, or its write failed.", &st.FramesDropped),
		counter("chorus_slow_clients_closed_total", "Streams closed with 1013 because their queue overflowed.", &st.SlowClosed),
		counter("chorus_heartbeats_total", "Heartbeat frames received.", &st.Heartbeats),
		counter("chorus_pubsub_resubscribes_total", "Channels subscribed again after the pub/sub connection to Redis was lost (on a cluster, a master's connection, or their slot moved).", &st.PubSubRestarts),
		counter("chorus_heartbeats_recorded_total", "Activity written to presence (at most once per stream per heartbeat interval).", &st.HeartbeatsRecorded),
		counter("chorus_presence_frames_coalesced_total", "Presence frames held back and then not sent: replaced by a newer one about the same user within a second, telling what the last one sent told, or dropped by a friend_removed.", &st.PresenceCoalesced),
		counter("chorus_pubsub_subscribe_commands_total", "SUBSCRIBE and UNSUBSCRIBE commands sent, each for a batch of up to 500 channels (on a cluster SSUBSCRIBE and SUNSUBSCRIBE, each for one slot's).", &st.SubscribeCommands),
		counter("chorus_presence_flushes_total", "Script calls that wrote the activity of this instance's streams to presence, all of a tick's in one.", &st.BeatFlushes),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "chorus_presence_flush_seconds_total",
			Help: "Time spent writing the activity of this instance's streams to presence, every tick: its rate is the share of the time the flusher is busy; near 1, presence writes fall behind.",
		}, func() float64 { return time.Duration(st.BeatFlushTime.Load()).Seconds() }),
		counter("chorus_stream_pongs_total", "Pongs to the server's pings of streams, each counted as activity.", &st.Pongs),
		counter("chorus_streams_protocol_closed_total", "Streams failed for a frame the protocol refuses: unmasked (1002), or a text frame not UTF-8 (1007).", &st.ProtocolClosed),
		counter("chorus_streams_idle_closed_total", "Streams closed with 4000: no frame and no pong for three heartbeat intervals.", &st.IdleClosed),
		counter("chorus_stream_sessions_closed_total", "Streams closed with 1008 because their session ended (sign-out, expiry, or lost by Redis).", &st.SessionClosed),
		counter("chorus_stream_sessions_refused_total", "Streams refused with 401 because their session ended while they were being opened.", &st.SessionRefused),
		counter("chorus_streams_drained_total", "Streams closed by a drain (SIGTERM, 1001 after a reconnect frame), each told to reconnect elsewhere.", &st.Drained),
		&scrapeCollector{s: s},
	)
	sc := s.social.Counters()
	m.reg.MustRegister(
		counter("chorus_password_checks_total", "Passwords compared with their bcrypt hash (unknown logins included).", &sc.PasswordChecks),
		counter("chorus_password_hashes_total", "Passwords hashed with bcrypt at sign-up.", &sc.PasswordHashes),
	)
	for name, n := range map[string]*atomic.Int64{
		"signup": &s.limitStats.signUp, "signin": &s.limitStats.signIn,
		"post": &s.limitStats.posts, "follow": &s.limitStats.follows, "list": &s.limitStats.lists, "search": &s.limitStats.searches,
		"signin_failures": &sc.SignInsThrottled, "password_hashers": &sc.HashesRefused,
		"request_timeout": &s.limitStats.deadlines, "address_connections": &s.connStats.Refused,
		"user_streams": &st.UserStreamsRefused, "stream_frames": &st.FloodClosed, "resume": &st.ResumesLimited,
		"stream_opens": &s.limitStats.streamOpens, "stream_opens_address": &s.limitStats.streamOpensAddress,
		"signin_account_failures": &sc.SignInsCeiling,
		"read":                    &s.limitStats.reads,
		"react":                   &s.limitStats.reactions,
		"block":                   &s.limitStats.blocks,
		"profile":                 &s.limitStats.profiles,
		"report":                  &s.limitStats.reports,
		"export":                  &s.limitStats.exports,
		"user_sessions":           &sc.SessionsEvicted,
		"stream_sends":            &s.limitStats.streamSends,
		"password":                &s.limitStats.passwords,
		"action":                  &s.limitStats.actions,
	} {
		m.reg.MustRegister(refusals(name, n))
	}
	m.reg.MustRegister(counter("chorus_keepalives_off_total",
		"Times keep-alives were turned off (idle connections closed) because over three quarters of -max-connections were open.", &s.connStats.KeepAlivesOff))
	m.reg.MustRegister(counter("chorus_rate_limited_in_process_total",
		"Requests refused by the in-process gate in front of their limit, without asking Redis (counted in chorus_rate_limited_total too).", &s.gates.refused))
}

// refusals counts the requests (or frames, or streams) one limit refused,
// as one series of chorus_rate_limited_total.
func refusals(limit string, n interface{ Load() int64 }) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name:        "chorus_rate_limited_total",
		Help:        "Requests, frames and streams refused by a limit, by limit.",
		ConstLabels: prometheus.Labels{"limit": limit},
	}, func() float64 { return float64(n.Load()) })
}

// scrapeCollector reads Redis-held figures when Prometheus scrapes: users
// online site-wide, and the fan-out job backlog and its lag.
type scrapeCollector struct{ s *Server }

var (
	onlineDesc  = prometheus.NewDesc("chorus_users_online", "Users online site-wide (seen within the online window and connected).", nil, nil)
	activeDesc  = prometheus.NewDesc("chorus_users_active_10m", "Users active site-wide in the last ten minutes.", nil, nil)
	backlogDesc = prometheus.NewDesc("chorus_fanout_jobs_backlog", "Fan-out jobs (post, delete, refill) queued or under way, site-wide, those whose makers are still writing their inputs too.", nil, nil)
	lagDesc     = prometheus.NewDesc("chorus_fanout_oldest_job_age_seconds", "Age of the oldest unfinished fan-out job; 0 when there is none.", nil, nil)
)

func (c *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- onlineDesc
	ch <- activeDesc
	ch <- backlogDesc
	ch <- lagDesc
}

func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if counts, err := c.s.presence.Counts(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(onlineDesc, prometheus.GaugeValue, float64(counts.Online))
		ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(counts.ActiveLast10m))
	}
	if jobs, oldest, err := c.s.social.JobBacklog(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(jobs))
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, oldest.Seconds())
	}
}

// instrument counts and times every request under its route pattern, and
// notes what it asked of Redis (the requestLog logRequests gives it).
func (m *Metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		method := methodLabel(r.Method)
		m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		// Streams are left out, the event stream as the WebSocket upgrade.
		if status != http.StatusSwitchingProtocols && ww.Header().Get("Content-Type") != "text/event-stream" {
			m.latency.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
			if l := requestLogOf(r.Context()); l != nil {
				m.redisWait.WithLabelValues(route, method).Observe(time.Duration(l.redis.wait.Load()).Seconds())
				m.redisTrips.WithLabelValues(route, method).Observe(float64(l.redis.trips.Load()))
			}
		}
	})
}

// methodLabel is a request's method as the metrics name it: one of HTTP's
// usual, else OTHER, so that no client makes series of methods it makes up.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}

func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

type redisHook struct{ m *Metrics }

// failed tells real failures from what the client reports as errors but
// is not one: an empty reply, a script not cached yet (retried with EVAL),
// a caller that went away.
func failed(err error) bool {
	return err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, context.Canceled) &&
		!redis.HasErrorPrefix(err, "NOSCRIPT")
}

// setup tells the commands a new connection starts with, whose errors the
// client ignores (CLIENT SETINFO is unknown before Redis 7.2).
func setup(cmd redis.Cmder) bool { return cmd.Name() == "client" }

// connSetup names the commands a new connection may start with (HELLO or
// AUTH, SELECT, CLIENT SETINFO, READONLY on a cluster's replica): the
// client sends them within the call that dialed, whose time holds theirs.
var connSetup = map[string]bool{"hello": true, "auth": true, "select": true, "client": true, "readonly": true}

// timed starts timing a round trip of the request ctx belongs to, one of
// this instance's (see requestLog.metrics), unless it is a new
// connection's setup: done, when not nil, notes it once answered.
func (h redisHook) timed(ctx context.Context, first redis.Cmder) (done func()) {
	l := requestLogOf(ctx)
	if l == nil || l.metrics != h.m || connSetup[first.Name()] {
		return nil
	}
	start := time.Now()
	return func() { l.redis.add(time.Since(start)) }
}

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if failed(err) {
			h.m.redisErrors.Inc()
		}
		return c, err
	}
}

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		done := h.timed(ctx, cmd)
		err := next(ctx, cmd)
		if done != nil {
			done()
		}
		if failed(err) && !setup(cmd) {
			h.m.redisErrors.Inc()
		}
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var done func()
		if len(cmds) > 0 {
			done = h.timed(ctx, cmds[0])
		}
		err := next(ctx, cmds)
		if done != nil {
			done()
		}
		for _, c := range cmds {
			if failed(c.Err()) && !setup(c) {
				h.m.redisErrors.Inc()
			}
		}
		return err
	}
}
