package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// config is every setting of the server, from flags and the environment.
type config struct {
	Addr              string
	RedisURL          string
	KeyPrefix         string
	OnlineWindow      time.Duration
	HeartbeatInterval time.Duration
	AllowedOrigins    []string
	LogFormat         string
	ShutdownTimeout   time.Duration
	MaxStreams        int
}

// parseConfig reads flags, each defaulting to its environment variable, then
// to the built-in default. A flag given on the command line wins.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	var origins string
	fs := flag.NewFlagSet("chorus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.Addr, "addr", env("CHORUS_ADDR", ":8080"), "listen address (CHORUS_ADDR)")
	fs.StringVar(&c.RedisURL, "redis-url", env("REDIS_URL", ""), "Redis URL, redis://[:password@]host:port/db; empty runs the embedded store (REDIS_URL)")
	fs.StringVar(&c.KeyPrefix, "key-prefix", env("CHORUS_KEY_PREFIX", "chorus:"), "prefix of every Redis key (CHORUS_KEY_PREFIX)")
	fs.StringVar(&origins, "allowed-origins", env("CHORUS_ALLOWED_ORIGINS", ""), "comma-separated extra origins allowed for WebSockets and cookie writes (CHORUS_ALLOWED_ORIGINS)")
	fs.StringVar(&c.LogFormat, "log-format", env("CHORUS_LOG_FORMAT", "text"), "log format: text or json (CHORUS_LOG_FORMAT)")
	maxStreams, err := strconv.Atoi(env("CHORUS_MAX_STREAMS", "0"))
	if err != nil || maxStreams < 0 {
		return c, fmt.Errorf("CHORUS_MAX_STREAMS: want a whole number from 0, got %q", getenv("CHORUS_MAX_STREAMS"))
	}
	fs.IntVar(&c.MaxStreams, "max-streams", maxStreams, "most WebSocket streams this instance holds; 0: the open-file limit less 1024 (CHORUS_MAX_STREAMS)")
	durations := []struct {
		p         *time.Duration
		name, env string
		def       time.Duration
		usage     string
	}{
		{&c.OnlineWindow, "online-window", "CHORUS_ONLINE_WINDOW", 30 * time.Second, "how long after their last activity a user counts as online"},
		{&c.HeartbeatInterval, "heartbeat-interval", "CHORUS_HEARTBEAT_INTERVAL", 10 * time.Second, "how often clients send heartbeats"},
		{&c.ShutdownTimeout, "shutdown-timeout", "CHORUS_SHUTDOWN_TIMEOUT", 10 * time.Second, "how long shutdown waits for requests to finish"},
	}
	for _, d := range durations {
		def := d.def
		if raw := getenv(d.env); raw != "" {
			v, err := time.ParseDuration(raw)
			if err != nil {
				return c, fmt.Errorf("%s: %w", d.env, err)
			}
			def = v
		}
		fs.DurationVar(d.p, d.name, def, d.usage+" ("+d.env+")")
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.AllowedOrigins = append(c.AllowedOrigins, o)
		}
	}
	switch {
	case c.OnlineWindow <= 0:
		return c, fmt.Errorf("-online-window must be positive, got %s", c.OnlineWindow)
	case c.HeartbeatInterval <= 0:
		return c, fmt.Errorf("-heartbeat-interval must be positive, got %s", c.HeartbeatInterval)
	case c.HeartbeatInterval >= c.OnlineWindow:
		return c, fmt.Errorf("-heartbeat-interval (%s) must be shorter than -online-window (%s)", c.HeartbeatInterval, c.OnlineWindow)
	case c.MaxStreams < 0:
		return c, fmt.Errorf("-max-streams must be 0 or more, got %d", c.MaxStreams)
	case c.LogFormat != "text" && c.LogFormat != "json":
		return c, fmt.Errorf("-log-format must be text or json, got %q", c.LogFormat)
	}
	return c, nil
}
