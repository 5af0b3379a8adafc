// Command chorus runs the Chorus server: the REST API, the WebSocket stream
// and the browser client, on Redis (or, with no Redis configured, on an
// embedded in-memory store for trying it out).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"chorus/internal/app"
	"chorus/internal/version"
	"chorus/presence"
	"chorus/realtime"
	"chorus/social"
	"chorus/web"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "chorus:", err)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// run serves until ctx ends, then shuts down gracefully; asked for help or
// the version, it prints them on stdout and returns. Logs go to stderr. When
// listening is not nil it receives the address the server listens on.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, listening chan<- string) error {
	cfg, err := parseConfig(args, getenv, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		_, _ = fmt.Fprintf(stderr, "chorus: %v\nRun chorus -h for the flags.\n", err)
		return errUsage
	case cfg.ShowVersion:
		_, _ = fmt.Fprint(stdout, version.Current())
		return nil
	}
	log := newLogger(cfg.LogFormat, stderr)
	redis.SetLogger(redisLogger{log.With("component", "redis")})

	// store names the Redis in the start-up line: its address (never the
	// URL, which may hold a password), or "embedded".
	redisURL, store := cfg.RedisURL, ""
	if redisURL == "" {
		m, err := startEmbedded()
		if err != nil {
			return err
		}
		defer m.Close()
		redisURL, store = m.url, "embedded"
		log.Warn("NO REDIS CONFIGURED: running on the embedded in-memory store. " +
			"It is for trying Chorus out: one instance only, and every user, status and session is lost on exit. " +
			"Set REDIS_URL or -redis-url for real use.")
	}
	target, err := parseRedisURL(redisURL)
	if err != nil {
		return fmt.Errorf("redis url: %w", err)
	}
	if target.cluster != nil && strings.ContainsAny(cfg.KeyPrefix, "{}") {
		// The keys' own hash tags place them in slots; a brace in the
		// prefix would take that over.
		return fmt.Errorf("key prefix %q: on a Redis Cluster it must not contain { or }", cfg.KeyPrefix)
	}
	if store == "" {
		store = target.addr()
	}
	rdb := target.client()
	defer func() { _ = rdb.Close() }()
	pingCtx, cancelPing := context.WithTimeout(ctx, 5*time.Second)
	err = rdb.Ping(pingCtx).Err()
	cancelPing()
	if err != nil {
		why := unworkable(err)
		if why == "" && target.tls() != nil && speaksPlainRedis(target.firstAddr()) {
			why = "the server at -redis-url does not speak TLS: use redis:// rather than rediss://"
		}
		if why != "" {
			return fmt.Errorf("redis at %s: %s: %w", target.addr(), why, err)
		}
		// Not fatal: /readyz says so, and the client reconnects when
		// Redis comes up.
		log.Warn("redis does not answer yet", "addr", target.addr(), "err", err)
	}
	if err == nil && target.single != nil && store != "embedded" {
		checkCtx, cancelCheck := context.WithTimeout(ctx, 5*time.Second)
		node := clusterNode(checkCtx, rdb)
		cancelCheck()
		if node {
			return fmt.Errorf("redis at %s: it is a node of a Redis Cluster: use redis+cluster:// (or rediss+cluster://) with its nodes' addresses", target.addr())
		}
	}

	instance := hostname() + "-" + uuid.NewString()[:8]
	connStats := &web.ConnStats{}
	chorus := app.New(rdb, app.Options{
		Prefix: cfg.KeyPrefix, Name: instance, Logger: log,
		Social: social.Options{
			SignInFailures:      cfg.SignInFailures.Rate,
			SignInFailureWindow: cfg.SignInFailures.Period,
			SignInAccountLimit:  cfg.SignInAccount.Rate,
			SignInAccountWindow: cfg.SignInAccount.Period,
			PasswordHashers:     cfg.PasswordHashers,
			HashWait:            cfg.PasswordHashWait,
			InactiveAfter:       orNever(cfg.InactiveAfter),
			PullThreshold:       orNever(cfg.PullThreshold),
			MaxSessionsPerUser:  cfg.SessionsPerUser,
			Registrations:       cfg.Registrations,
			Admins:              cfg.Admins,
		},
		Presence: presence.Options{
			Window: cfg.OnlineWindow, HeartbeatInterval: cfg.HeartbeatInterval,
			MaxConnsPerUser: cfg.MaxStreamsPerUser,
		},
		Realtime: realtime.Options{
			HeartbeatInterval: cfg.HeartbeatInterval, MaxStreams: maxStreams(cfg.MaxStreams),
			FrameRate: perSecond(cfg.StreamFrameLimit), FrameBurst: cfg.StreamFrameLimit.Burst,
			ResumeLimit: cfg.ResumeLimit,
		},
		Web: web.Config{
			AllowedOrigins: cfg.AllowedOrigins, TrustedProxies: cfg.TrustedProxies,
			RequestTimeout: cfg.RequestTimeout, GateFactor: orNever(cfg.InProcessLimitFactor),
			SiteLimitFactor: orNever(cfg.IPv6SiteLimitFactor),
			ConnStats:       connStats,
			Limits: web.Limits{
				SignUpPerAddress: cfg.SignUpLimit, SignInPerAddress: cfg.SignInLimit,
				PostsPerUser: cfg.PostLimit, FollowsPerUser: cfg.FollowLimit, ReactionsPerUser: cfg.LikeLimit, ListWritesPerUser: cfg.ListLimit, BlocksPerUser: cfg.BlockLimit,
				SearchesPerClient:  cfg.SearchLimit,
				StreamOpensPerUser: cfg.StreamOpenLimit, StreamOpensPerAddress: cfg.StreamOpenAddressLimit,
				ReadsPerClient:        cfg.ReadLimit,
				ProfileEditsPerUser:   cfg.ProfileLimit,
				ReportsPerUser:        cfg.ReportLimit,
				ExportsPerUser:        cfg.ExportLimit,
				StreamSendsPerUser:    cfg.StreamSendLimit,
				PasswordChecksPerUser: cfg.PasswordLimit,
				ActionsPerUser:        cfg.ActionLimit,
			},
		},
	})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if cfg.DebugAddr != "" {
		addr, stop, err := serveDebug(cfg.DebugAddr, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer stop()
		log.Info("debug listening: Go's profiles under /debug/pprof/", "addr", addr)
	}
	// Requests outlive ctx (the signal) until the server has shut down:
	// the API answers through a drain (drainStreams), and requests under
	// way when it ends finish.
	reqCtx, stopRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRequests()
	httpSrv := &http.Server{
		Handler:           chorus.Server,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
	}

	// Background work outlives ctx until the server has shut down.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var work sync.WaitGroup
	work.Go(func() { chorus.Run(workCtx) })

	// Beyond MaxConnections the rest wait in the kernel's backlog rather
	// than fail for want of a file, which would leave the instance unable
	// to reach Redis; no one client address holds every connection, and
	// idle keep-alives give way while connections run short.
	guarded := web.NewConnGuard(ln, httpSrv, web.ConnGuardOptions{
		MaxConnections: maxConnections(cfg.MaxConnections), PerAddress: orNever(cfg.MaxConnsPerAddress),
		TrustedProxies: cfg.TrustedProxies, Stats: connStats,
	})
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(guarded) }()
	log.Info("chorus listening", "addr", ln.Addr().String(), "open", openURL(ln.Addr()), "instance", instance, "redis", store,
		"key_prefix", cfg.KeyPrefix, "max_streams", maxStreams(cfg.MaxStreams),
		"max_connections", maxConnections(cfg.MaxConnections), "max_connections_per_address", cfg.MaxConnsPerAddress)
	if listening != nil {
		listening <- ln.Addr().String()
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	drainStreams(chorus.Hub, cfg.DrainWindow, log)
	shutdownStart := time.Now()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// Streams are hijacked connections, which http.Server.Shutdown does
	// not wait for: the hub closes them (1001) alongside.
	var closing sync.WaitGroup
	closing.Go(func() {
		streamCtx, cancel := context.WithTimeout(shutdownCtx, 5*time.Second)
		defer cancel()
		if err := chorus.Hub.Shutdown(streamCtx); err != nil {
			log.Warn("streams did not all close in time", "err", err)
		}
	})
	if err := httpSrv.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown did not finish in time", "err", err)
	}
	stopRequests() // those still under way past the shutdown's time
	closing.Wait()
	stopWork()
	// A worker's Redis call under way is not cut short by stopWork: a Redis
	// that does not answer would hold the exit for its read timeout, call
	// after call. What it leaves undone its jobs redo elsewhere.
	worked := make(chan struct{})
	go func() { work.Wait(); close(worked) }()
	workWait := time.NewTimer(max(time.Until(shutdownStart.Add(cfg.ShutdownTimeout)), workStopWait))
	defer workWait.Stop()
	select {
	case <-worked:
	case <-workWait.C:
		log.Warn("background work did not stop in time; it ends with the process", "waited", time.Since(shutdownStart).Round(time.Millisecond))
	}
	log.Info("stopped")
	return nil
}

// workStopWait is the least a shutdown waits for the background work (the
// fan-out worker's pass) to stop once -shutdown-timeout is spent.
const workStopWait = time.Second

// drainSlack is how long a drain may run past its window: the last
// streams' reconnect frames and closing handshakes.
const drainSlack = 5 * time.Second

// drainStreams closes the hub's streams spread over window, each told to
// reconnect elsewhere, while /readyz says the instance is draining and the
// API still answers; a second SIGTERM or interrupt cuts it short.
func drainStreams(hub *realtime.Hub, window time.Duration, log *slog.Logger) {
	hurry, stopHurry := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopHurry()
	ctx, cancel := context.WithTimeout(hurry, window+drainSlack)
	defer cancel()
	streams := hub.Counters().Open.Load()
	log.Info("draining streams", "streams", streams, "window", window)
	start := time.Now()
	if err := hub.Drain(ctx, window); err != nil {
		log.Info("drain cut short; the rest were closed at once", "err", err)
	}
	log.Info("streams drained", "streams", streams, "took", time.Since(start).Round(time.Millisecond))
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// maxStreams caps the streams an instance holds below its open-file limit,
// so that a flood of streams never leaves it unable to accept a request.
func maxStreams(configured int) int {
	if configured > 0 {
		return configured
	}
	if limit := fileLimit(); limit > 0 {
		return max(100, int(min(limit, 1<<30))-1024)
	}
	return 0
}

// maxConnections caps the client connections an instance accepts below its
// open-file limit, leaving room for Redis connections and files.
func maxConnections(configured int) int {
	if configured > 0 {
		return configured
	}
	if limit := fileLimit(); limit > 0 {
		return max(200, int(min(limit, 1<<30))-256)
	}
	return 1 << 20
}

// perSecond is a limit's sustained rate as the in-memory limiters take it;
// rate.Inf (no limit) when it is off.
func perSecond(l redis_rate.Limit) rate.Limit {
	if l.IsZero() {
		return rate.Inf
	}
	return rate.Limit(float64(l.Rate) / l.Period.Seconds())
}

// openURL is where a person on this machine opens the server: its listen
// address, with localhost for one that listens on every interface.
func openURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "chorus"
	}
	return h
}

// orNever turns a flag's 0 ("never") into the negative value options read
// as never (their 0 means the default).
func orNever[T ~int | ~int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
