package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Limits on the command line, so that no typo starts a run that cannot end.
const (
	maxConns         = 1_000_000
	maxPosts         = 1_000_000
	defaultPerWorker = 8000
)

// usageError is a command line the tool cannot run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// config is one run of the tool, from its flags.
type config struct {
	URLs               []string      // base URLs of the instances, connections spread over them
	Conns              int           // WebSocket connections to hold, one user each
	Authors            int           // users who post, never connected
	FollowersPerAuthor int           // connected users following each author
	Rate               float64       // posts per second, over all authors
	Duration           time.Duration // how long to post
	Workers            int           // processes holding connections; 0 in this process, -1 automatic
	PerWorker          int           // connections per worker when automatic
	SourceIPs          []net.IP      // local addresses to dial from, in turn
	UsersFile          string        // users kept between runs
	ServerPIDs         []int         // local server processes whose RSS to read
	JSON               bool          // report as JSON
	Hold               time.Duration // idle time after connecting, before measuring memory
	Grace              time.Duration // wait for late deliveries after the last post
	SignupConcurrency  int
	FollowConcurrency  int
	DialConcurrency    int
	DialTimeout        time.Duration // one connection, until its ready frame
	MaxInFlight        int           // posts awaiting their answer
	MaxLag             time.Duration // a post sent later than this after its due time fails the run; 0: no bound
	MaxTime            time.Duration // the whole run

	SSE bool // hold the streams as Server-Sent Events (-sse)

	// WarmAuthors (-warm-authors): before the posts, each author reads
	// GET /me through every instance, as a browser's page reads before it
	// posts, so that no post is its author's first through an instance.
	WarmAuthors bool

	// The floor (-floor): posts are PUBLISHes on the deployment's Redis.
	Floor       bool
	FloorFrames string // floorChannel or floorBatch (-floor-frames)
	RedisURL    string // the deployment's Redis
	KeyPrefix   string // the deployment's -key-prefix

	// The reconnect storm (-storm): Conns are the movers, on URLs[0].
	Storm           bool
	Observers       int           // users on the other URLs, friends of movers
	FriendsPerMover int           // observers each mover is friends with
	KillPID         int           // the process of URLs[0], killed to start the storm
	Spread          time.Duration // movers reconnect at random within this
	Watch           time.Duration // presence frames are watched this long after the kill
	Signal          string        // how the first instance is stopped: "kill" (SIGKILL) or "term" (SIGTERM: a drain)
}

// listFlag is a flag that may be repeated, each value comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// parseConfig reads the command line. Errors are *usageError, or
// flag.ErrHelp when help was asked for.
func parseConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	var urls, ips, pids listFlag
	fs := flag.NewFlagSet("chorus-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "Usage: chorus-bench -url http://host:port [flags]")
		_, _ = fmt.Fprintln(fs.Output(), "Holds WebSocket connections to a Chorus deployment, posts at a rate and measures delivery.")
		fs.PrintDefaults()
	}
	fs.Var(&urls, "url", "base URL of a Chorus instance; repeat or comma-separate to spread connections and posts over several")
	fs.IntVar(&c.Conns, "conns", 100, "WebSocket connections to hold, one user each (with -storm: the movers)")
	fs.IntVar(&c.Authors, "authors", 10, "users who post (not connected)")
	fs.IntVar(&c.FollowersPerAuthor, "followers-per-author", 0, "connected users following each author; 0: -conns / -authors, so that each connection follows one author")
	fs.Float64Var(&c.Rate, "rate", 10, "posts per second, spread over the authors")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to post")
	fs.IntVar(&c.Workers, "workers", -1, "worker processes holding connections: 0 holds them in this process, -1 one per -conns-per-worker")
	fs.IntVar(&c.PerWorker, "conns-per-worker", defaultPerWorker, "connections per worker process when -workers is -1")
	fs.Var(&ips, "source-ips", "local addresses to dial WebSockets from, in turn (e.g. 127.0.0.2,127.0.0.3)")
	fs.StringVar(&c.UsersFile, "users-file", "", "JSON file of users: reused when it exists, written after signing up")
	fs.Var(&pids, "server-pid", "pid of the local server process of each -url, whose RSS to report; repeat or comma-separate, as many as -url")
	fs.BoolVar(&c.JSON, "json", false, "print the report as JSON")
	fs.DurationVar(&c.Hold, "hold", 2*time.Second, "hold the connections idle this long before measuring memory")
	fs.DurationVar(&c.Grace, "grace", 5*time.Second, "wait up to this long after the last post for deliveries")
	fs.IntVar(&c.SignupConcurrency, "signup-concurrency", 8, "sign-ups in flight (each costs the server a bcrypt hash)")
	fs.IntVar(&c.FollowConcurrency, "follow-concurrency", 16, "follow requests in flight")
	fs.IntVar(&c.DialConcurrency, "dial-concurrency", 64, "WebSocket handshakes in flight, per process")
	fs.DurationVar(&c.DialTimeout, "dial-timeout", 30*time.Second, "limit for one connection to get its ready frame")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", 256, "posts awaiting their answer before the schedule waits")
	fs.DurationVar(&c.MaxLag, "max-lag", 100*time.Millisecond, "fail the run when a post is sent later than this after its due time "+
		"(the server stalled and -max-in-flight posts were waiting): its latencies from the send leave that wait out; 0: no bound")
	fs.DurationVar(&c.MaxTime, "max-time", time.Hour, "limit of the whole run")
	fs.BoolVar(&c.Floor, "floor", false, "measure the floor: the same users, follows and streams, but each post is one pipeline of PUBLISHes "+
		"of a status frame on its author's followers' channels, straight on the deployment's Redis (-redis-url), with no social writes but the status ids it takes from the deployment's counter")
	fs.StringVar(&c.FloorFrames, "floor-frames", floorChannel, "floor: how a post's frames are published: channel, one PUBLISH on each follower's channel; "+
		"batch, one message for them all on the frames channel, as the server sends them on one Redis (push.lua), refused unless every instance reads it")
	fs.BoolVar(&c.WarmAuthors, "warm-authors", false, "before the posts, each author reads GET /me through every instance (as a browser reads before it posts): "+
		"the instances then know the authors' sessions and have noted their activity, and no post is its author's first through an instance")
	fs.BoolVar(&c.SSE, "sse", false, "hold the streams as Server-Sent Events (Accept: text/event-stream) rather than WebSockets; they send no heartbeats")
	fs.StringVar(&c.RedisURL, "redis-url", "", "the deployment's Redis, redis://[:password@]host:port/db (one Redis; a cluster is not supported): "+
		"-floor publishes on it, any run reports its CPU, and -storm its commands' time and CPU per mover back")
	fs.StringVar(&c.KeyPrefix, "key-prefix", "chorus:", "floor: the deployment's -key-prefix, which its channel names start with")
	fs.BoolVar(&c.Storm, "storm", false, "run a reconnect storm instead of posting: -conns movers on the first -url, -observers on the others; "+
		"kill the first instance (-storm-kill-pid), move its users to the others and count the presence frames their friends get")
	fs.IntVar(&c.Observers, "observers", 100, "storm: users connected to the other URLs, each a friend of some movers")
	fs.IntVar(&c.FriendsPerMover, "friends-per-mover", 3, "storm: observers each mover is friends with (mutual follows), taken round robin")
	fs.IntVar(&c.KillPID, "storm-kill-pid", 0, "storm: pid of the local server process of the first -url, sent SIGKILL to start the storm")
	fs.StringVar(&c.Signal, "storm-signal", "kill", "storm: how the first instance is stopped: kill (SIGKILL: its sockets drop at once) or term (SIGTERM: it drains its streams over its -drain-window)")
	fs.DurationVar(&c.Spread, "storm-spread", 5*time.Second, "storm: each mover reconnects at a random moment within this after its socket closes")
	fs.DurationVar(&c.Watch, "storm-watch", 45*time.Second, "storm: how long to watch presence frames after the kill; "+
		"make it longer than the server's -online-window (30s by default) and -storm-spread, so that its sweeper has acted")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return c, usagef("unexpected arguments: %q", fs.Args())
	}
	c.URLs = urls
	if c.Storm {
		// A storm posts nothing; the posting flags' defaults do not apply.
		c.Authors, c.Rate = 0, 0
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return c, usagef("-source-ips: %q is not an IP address", s)
		}
		c.SourceIPs = append(c.SourceIPs, ip)
	}
	for _, s := range pids {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 {
			return c, usagef("-server-pid: %q is not a process id", s)
		}
		c.ServerPIDs = append(c.ServerPIDs, pid)
	}
	return c, c.validate()
}

// validate checks the values together.
func (c *config) validate() error {
	if len(c.URLs) == 0 {
		return usagef("-url is required")
	}
	for i, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("-url: %q is not an http:// or https:// URL", raw)
		}
		c.URLs[i] = strings.TrimRight(raw, "/")
	}
	if c.FollowersPerAuthor == 0 && c.Authors > 0 {
		c.FollowersPerAuthor = max(1, c.Conns/c.Authors)
	}
	posts := c.Rate * c.Duration.Seconds()
	positive := []struct {
		name string
		v    int
	}{
		{"-signup-concurrency", c.SignupConcurrency}, {"-follow-concurrency", c.FollowConcurrency},
		{"-dial-concurrency", c.DialConcurrency}, {"-max-in-flight", c.MaxInFlight}, {"-conns-per-worker", c.PerWorker},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return usagef("%s must be positive, got %d", p.name, p.v)
		}
	}
	switch {
	case c.Conns < 1 || c.Conns > maxConns:
		return usagef("-conns must be 1..%d, got %d", maxConns, c.Conns)
	case c.Authors < 0 || c.Authors > maxConns:
		return usagef("-authors must be 0..%d, got %d", maxConns, c.Authors)
	case c.FollowersPerAuthor < 0 || c.FollowersPerAuthor > c.Conns:
		return usagef("-followers-per-author must be 1..-conns (%d), got %d", c.Conns, c.FollowersPerAuthor)
	case math.IsNaN(c.Rate) || c.Rate < 0 || math.IsInf(c.Rate, 0):
		return usagef("-rate must be a number of posts per second, 0 or more")
	case c.Duration < 0:
		return usagef("-duration must not be negative")
	case posts > maxPosts:
		return usagef("-rate × -duration is %.0f posts; at most %d", posts, maxPosts)
	case c.Rate > 0 && c.Duration > 0 && c.Authors == 0:
		return usagef("posting needs -authors of 1 or more (or -rate 0)")
	case c.Workers < -1 || c.Workers > c.connCount():
		return usagef("-workers must be -1 (automatic), 0 (in this process) or up to the connections (%d), got %d", c.connCount(), c.Workers)
	case c.Hold < 0 || c.Grace < 0 || c.MaxLag < 0:
		return usagef("-hold, -grace and -max-lag must not be negative")
	case c.DialTimeout <= 0 || c.MaxTime <= 0:
		return usagef("-dial-timeout and -max-time must be positive")
	}
	if c.Storm {
		if c.Floor {
			return usagef("-floor and -storm cannot go together")
		}
		return c.validateStorm()
	}
	if len(c.ServerPIDs) > 0 && len(c.ServerPIDs) != len(c.URLs) {
		// The memory per connection is the pids' growth over every
		// connection held, on all the instances.
		return usagef("-server-pid: %d pids for %d -url; memory per connection needs the pid of each instance, one a -url", len(c.ServerPIDs), len(c.URLs))
	}
	if c.Floor && c.WarmAuthors {
		return usagef("-warm-authors and -floor cannot go together: the floor posts through no instance")
	}
	if c.FloorFrames != floorChannel && c.FloorFrames != floorBatch {
		return usagef("-floor-frames must be %s or %s, got %q", floorChannel, floorBatch, c.FloorFrames)
	}
	if c.FloorFrames == floorBatch && !c.Floor {
		return usagef("-floor-frames batch needs -floor")
	}
	if c.Floor && c.RedisURL == "" {
		return usagef("-floor needs -redis-url: the deployment's Redis")
	}
	if c.RedisURL != "" {
		if _, err := parseFloorRedis(c.RedisURL); err != nil {
			return err
		}
	}
	return nil
}

// validateStorm checks the storm's flags.
func (c *config) validateStorm() error {
	switch {
	case len(c.URLs) < 2:
		return usagef("-storm needs two -url or more: the instance to kill first, then those the movers reconnect to")
	case c.KillPID <= 0:
		return usagef("-storm needs -storm-kill-pid: the pid of the server process of %s", c.URLs[0])
	case c.Observers < 1 || c.Observers > maxConns:
		return usagef("-observers must be 1..%d, got %d", maxConns, c.Observers)
	case c.FriendsPerMover < 1 || c.FriendsPerMover > c.Observers:
		return usagef("-friends-per-mover must be 1..-observers (%d), got %d", c.Observers, c.FriendsPerMover)
	case c.Signal != "kill" && c.Signal != "term":
		return usagef("-storm-signal must be kill or term, got %q", c.Signal)
	case c.Spread < 0:
		return usagef("-storm-spread must not be negative")
	case c.Watch <= c.Spread:
		return usagef("-storm-watch (%s) must be longer than -storm-spread (%s)", c.Watch, c.Spread)
	}
	return nil
}

// workerCount is how many worker processes hold the connections; 0 means
// this process holds them.
func (c *config) workerCount() int {
	if c.Workers >= 0 {
		return c.Workers
	}
	n := c.connCount()
	if n <= c.PerWorker {
		return 0
	}
	return (n + c.PerWorker - 1) / c.PerWorker
}

// connCount is how many WebSocket connections the run holds: -conns, and
// in a storm the observers too.
func (c *config) connCount() int {
	if c.Storm {
		return c.Conns + c.Observers
	}
	return c.Conns
}

// postCount is how many posts the run makes.
func (c *config) postCount() int {
	if c.Authors == 0 {
		return 0
	}
	return int(math.Round(c.Rate * c.Duration.Seconds()))
}
