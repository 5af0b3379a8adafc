package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"chorus/presence"
	"chorus/realtime"
	"chorus/social"
	"chorus/web"

	"github.com/go-redis/redis_rate/v10"
)

// config is every setting of the server, from flags and the environment.
type config struct {
	Addr              string
	DebugAddr         string // where Go's profiles are served; "": nowhere
	RedisURL          string
	KeyPrefix         string
	OnlineWindow      time.Duration
	HeartbeatInterval time.Duration
	AllowedOrigins    []string
	TrustedProxies    []netip.Prefix
	LogFormat         string
	Registrations     string   // who may sign up: social.RegistrationsOpen, Approval or Closed
	Admins            []string // logins that may act as admins
	ShutdownTimeout   time.Duration
	DrainWindow       time.Duration // how long a drain spreads its streams' closes over; 0: all at once
	MaxStreams        int
	MaxConnections    int
	ShowVersion       bool // -version: print the build and exit

	// HTTP timeouts; a stream is exempt from the read and write ones once
	// it is upgraded.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	RequestTimeout    time.Duration // bound of one API request's work, Redis calls included

	// Limits on one client.
	SignUpLimit       redis_rate.Limit // per address
	SignInLimit       redis_rate.Limit // per address
	SignInFailures    redis_rate.Limit // per login and address: Rate failures per Period
	SignInAccount     redis_rate.Limit // per login, from addresses it has not signed in from lately
	PostLimit         redis_rate.Limit // per user
	FollowLimit       redis_rate.Limit // per user
	LikeLimit         redis_rate.Limit // per user: likes, reposts and their undoing
	ListLimit         redis_rate.Limit // per user
	BlockLimit        redis_rate.Limit // blocks and mutes, and taking them back, per user
	SearchLimit       redis_rate.Limit // per user, or address for visitors
	ReadLimit         redis_rate.Limit // per user, or address for visitors
	ProfileLimit      redis_rate.Limit // per user
	ReportLimit       redis_rate.Limit // per user
	ExportLimit       redis_rate.Limit // per user
	PasswordLimit     redis_rate.Limit // per user: password changes and account deletions
	ActionLimit       redis_rate.Limit // per user: status deletions and admins' changes
	StreamSendLimit   redis_rate.Limit // frames posted for event streams, per user
	MaxStreamsPerUser int
	StreamFrameLimit  redis_rate.Limit // per stream, counted in memory
	ResumeLimit       redis_rate.Limit // per user, all their streams together
	PasswordHashers   int
	PasswordHashWait  time.Duration
	InactiveAfter     time.Duration
	PullThreshold     int
	SessionsPerUser   int

	// Stream opens: per user, and per client address.
	StreamOpenLimit        redis_rate.Limit
	StreamOpenAddressLimit redis_rate.Limit
	// InProcessLimitFactor sizes the in-process gate in front of each limit
	// counted in Redis: this many times the limit, per client; 0: none.
	InProcessLimitFactor int
	// IPv6SiteLimitFactor is how many times a limit counted per client
	// address an IPv6 client's /48 is allowed, beside its /64's; 0: the
	// /64 alone.
	IPv6SiteLimitFactor int
	// MaxConnsPerAddress caps the connections of one TCP peer address
	// (trusted proxies exempt); 0: no cap.
	MaxConnsPerAddress int
}

// Defaults of the limits a real site can run with. A limit a package
// enforces takes that package's default (social.DefaultSignInFailures,
// realtime.DefaultFrameRate); the rest are web's limits, which have none of
// their own (a zero web.Limits field is no limit), so they are set here.
var (
	defaultSignUpLimit    = redis_rate.Limit{Rate: 20, Period: time.Hour, Burst: 5}
	defaultSignInLimit    = redis_rate.Limit{Rate: 60, Period: 10 * time.Minute, Burst: 20}
	defaultSignInFailures = redis_rate.Limit{Rate: social.DefaultSignInFailures, Period: social.DefaultSignInFailureWindow, Burst: social.DefaultSignInFailures}
	defaultSignInAccount  = redis_rate.Limit{Rate: social.DefaultSignInAccountLimit, Period: social.DefaultSignInAccountWindow, Burst: social.DefaultSignInAccountLimit}
	defaultPostLimit      = redis_rate.Limit{Rate: 300, Period: 3 * time.Hour, Burst: 10}
	defaultFollowLimit    = redis_rate.Limit{Rate: 400, Period: 24 * time.Hour, Burst: 50}
	defaultListLimit      = redis_rate.Limit{Rate: 1000, Period: 24 * time.Hour, Burst: 100}
	defaultBlockLimit     = redis_rate.Limit{Rate: 1000, Period: 24 * time.Hour, Burst: 100}
	defaultSearchLimit    = redis_rate.Limit{Rate: 60, Period: time.Minute, Burst: 20}
	defaultReadLimit      = redis_rate.Limit{Rate: 300, Period: 5 * time.Minute, Burst: 100}
	defaultProfileLimit   = redis_rate.Limit{Rate: 30, Period: time.Hour, Burst: 10}
	defaultExportLimit    = redis_rate.Limit{Rate: 2, Period: time.Hour, Burst: 2}
	defaultPasswordLimit  = redis_rate.Limit{Rate: 10, Period: time.Hour, Burst: 5}
	defaultActionLimit    = redis_rate.Limit{Rate: 600, Period: time.Hour, Burst: 100}
	// A resume per page load and a watch per visit of the global page,
	// with room for a few tabs.
	defaultStreamSendLimit = redis_rate.Limit{Rate: 60, Period: time.Minute, Burst: 20}
	// Enough to report every account of a raid in a day; not a flood an
	// admin must wade through.
	defaultReportLimit      = redis_rate.Limit{Rate: 20, Period: 24 * time.Hour, Burst: 5}
	defaultStreamFrameLimit = redis_rate.Limit{Rate: int(realtime.DefaultFrameRate), Period: time.Second, Burst: realtime.DefaultFrameBurst}
	// A page sends a resume as its stream opens and once its first page of
	// the home timeline is in: two per tab, with room for ten tabs at once.
	defaultResumeLimit = redis_rate.Limit{Rate: 20, Period: time.Minute, Burst: 20}
	// Ten tabs reconnecting at once after a deploy, then their backoff.
	defaultStreamOpenLimit = redis_rate.Limit{Rate: 30, Period: time.Minute, Burst: 20}
	// Generous: many users behind one NAT reconnect together after a deploy.
	defaultStreamOpenAddressLimit = redis_rate.Limit{Rate: 1200, Period: time.Minute, Burst: 300}

	// A thousand a day, as large sites allow likes, with room to like
	// one post after another through a timeline.
	defaultLikeLimit = redis_rate.Limit{Rate: 1000, Period: 24 * time.Hour, Burst: 100}
)

// isOrigin reports whether o is an origin as a browser's Origin header
// names one: a scheme and a host, maybe a port, nothing after (a trailing
// slash aside). Not only http and https: an app's web view or an extension
// has an origin of its own scheme (capacitor://localhost).
func isOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && u.Scheme != "" && u.Host != "" && u.User == nil &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && !u.ForceQuery && u.Fragment == ""
}

// minHeartbeatInterval is the shortest -heartbeat-interval: every stream
// is pinged, and every instance writes its streams' activity, once an
// interval.
const minHeartbeatInterval = 100 * time.Millisecond

// envError is an environment variable's value that could not be read, for
// flag.
type envError struct {
	flag string
	err  error
}

// about heads the help (-h): what Chorus is and where it is described.
const about = `Chorus is a real-time presence and feed server: a REST API, a WebSocket stream and a browser client, on Redis.
Docs: README.md (running and testing), docs/API.md (the API and every flag), docs/OPERATIONS.md (deploying, limits, metrics, logs).

Usage: chorus [flags]
Each flag defaults to the environment variable named in its description, then to the default shown.

Flags:
`

// parseConfig reads flags, each defaulting to its environment variable, then
// to the built-in default. A flag given on the command line wins, and an
// environment variable whose value cannot be read is refused only when its
// flag is not given. Asked for
// help (-h, -help), it writes the help to help and returns flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, help io.Writer) (config, error) {
	c := config{
		SignUpLimit: defaultSignUpLimit, SignInLimit: defaultSignInLimit, SignInFailures: defaultSignInFailures,
		PostLimit: defaultPostLimit, FollowLimit: defaultFollowLimit, ListLimit: defaultListLimit, BlockLimit: defaultBlockLimit, SearchLimit: defaultSearchLimit,
		StreamFrameLimit: defaultStreamFrameLimit, ResumeLimit: defaultResumeLimit,
		StreamOpenLimit: defaultStreamOpenLimit, StreamOpenAddressLimit: defaultStreamOpenAddressLimit,
		SignInAccount: defaultSignInAccount, ReadLimit: defaultReadLimit,
		LikeLimit:    defaultLikeLimit,
		ProfileLimit: defaultProfileLimit, ExportLimit: defaultExportLimit,
		PasswordLimit: defaultPasswordLimit, ActionLimit: defaultActionLimit,
		ReportLimit:     defaultReportLimit,
		StreamSendLimit: defaultStreamSendLimit,
	}
	var origins, proxies, admins string
	fs := flag.NewFlagSet("chorus", flag.ContinueOnError)
	// Errors are returned, not printed; the flag list is printed when asked
	// for.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	// envOf names each flag's environment variable; envErrs holds the
	// variables whose values could not be read, each refused only when its
	// flag is not given on the command line, which wins.
	envOf := map[string]string{}
	var envErrs []envError
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	stringVar := func(p *string, name, envName, def, usage string) {
		envOf[name] = envName
		fs.StringVar(p, name, env(envName, def), usage)
	}
	stringVar(&c.Addr, "addr", "CHORUS_ADDR", ":8080", "listen address (CHORUS_ADDR)")
	stringVar(&c.DebugAddr, "debug-addr", "CHORUS_DEBUG_ADDR", "", "listen address of Go's profiles (/debug/pprof/), apart from the API's; keep it off the public network; empty: none (CHORUS_DEBUG_ADDR)")
	stringVar(&c.RedisURL, "redis-url", "REDIS_URL", "", "Redis URL, redis://[:password@]host:port/db, or a Redis Cluster's seeds, redis+cluster://[:password@]host:port,host:port; empty runs the embedded store (REDIS_URL)")
	stringVar(&c.KeyPrefix, "key-prefix", "CHORUS_KEY_PREFIX", "chorus:", "prefix of every Redis key (CHORUS_KEY_PREFIX)")
	stringVar(&origins, "allowed-origins", "CHORUS_ALLOWED_ORIGINS", "", "comma-separated extra origins allowed for WebSockets and cookie writes (CHORUS_ALLOWED_ORIGINS)")
	stringVar(&proxies, "trusted-proxies", "CHORUS_TRUSTED_PROXIES", "", "comma-separated addresses or CIDR blocks of proxies whose X-Forwarded-For names the client (CHORUS_TRUSTED_PROXIES)")
	stringVar(&c.LogFormat, "log-format", "CHORUS_LOG_FORMAT", "text", "log format: text or json (CHORUS_LOG_FORMAT)")
	stringVar(&c.Registrations, "registrations", "CHORUS_REGISTRATIONS", social.RegistrationsOpen, "who may sign up: open (anyone), approval (anyone, signing in once an admin approves) or closed (CHORUS_REGISTRATIONS)")
	stringVar(&admins, "admins", "CHORUS_ADMINS", "", "comma-separated logins of the site's admins, who approve sign-ups and read the audit log (CHORUS_ADMINS)")
	fs.BoolVar(&c.ShowVersion, "version", false, "print the version, VCS revision and Go version of this build, and exit")

	ints := []struct {
		p         *int
		name, env string
		def       int
		usage     string
	}{
		{&c.MaxStreams, "max-streams", "CHORUS_MAX_STREAMS", 0, "most streams (WebSockets and event streams) this instance holds; 0: the open-file limit less 1024"},
		{&c.MaxConnections, "max-connections", "CHORUS_MAX_CONNECTIONS", 0, "most client connections (streams included) this instance accepts at once; 0: the open-file limit less 256"},
		{&c.MaxConnsPerAddress, "max-connections-per-address", "CHORUS_MAX_CONNECTIONS_PER_ADDRESS", web.DefaultMaxConnsPerAddress, "most connections (streams included) one client address holds at once, an IPv6 one counted by its /64; the excess is closed at once; -trusted-proxies are exempt; 0: no cap"},
		{&c.MaxStreamsPerUser, "max-streams-per-user", "CHORUS_MAX_STREAMS_PER_USER", presence.DefaultMaxConnsPerUser, "most streams one user holds at once, on all instances together"},
		{&c.PullThreshold, "pull-threshold", "CHORUS_PULL_THRESHOLD", social.DefaultPullThreshold, "follower count (or count of lists holding them) from which an author's statuses are pulled by readers rather than pushed to their home timelines and lists; 0: never"},
		{&c.InProcessLimitFactor, "in-process-limit-factor", "CHORUS_IN_PROCESS_LIMIT_FACTOR", web.DefaultGateFactor, "in front of each rate limit counted in Redis, an in-process one per client (session, or address) this many times it, which refuses a flood without a Redis call; 0: none"},
		{&c.IPv6SiteLimitFactor, "ipv6-site-limit-factor", "CHORUS_IPV6_SITE_LIMIT_FACTOR", web.DefaultSiteLimitFactor, "an IPv6 client is counted by the limits per address by its /64 and by its /48 (a site, 65,536 /64s) at this many times the limit; 0: by its /64 alone"},
		{&c.SessionsPerUser, "sessions-per-user", "CHORUS_SESSIONS_PER_USER", social.DefaultMaxSessionsPerUser, "most sessions (signed-in devices) one user holds; signing in past it ends the oldest"},
		{&c.PasswordHashers, "password-hashers", "CHORUS_PASSWORD_HASHERS", 0, "passwords hashed or checked at once; 0: half the CPUs, at least 1"},
	}
	for _, n := range ints {
		def := n.def
		envOf[n.name] = n.env
		if raw := getenv(n.env); raw != "" {
			if v, err := strconv.Atoi(raw); err != nil {
				envErrs = append(envErrs, envError{n.name, fmt.Errorf("%s: want a whole number, got %q", n.env, raw)})
			} else {
				def = v
			}
		}
		fs.IntVar(n.p, n.name, def, n.usage+" ("+n.env+")")
	}

	durations := []struct {
		p         *time.Duration
		name, env string
		def       time.Duration
		usage     string
	}{
		{&c.OnlineWindow, "online-window", "CHORUS_ONLINE_WINDOW", presence.DefaultWindow, "how long after their last activity a user counts as online"},
		{&c.HeartbeatInterval, "heartbeat-interval", "CHORUS_HEARTBEAT_INTERVAL", presence.DefaultHeartbeatInterval, "how often the server pings each stream and records its activity; three intervals without a frame or a pong close it"},
		{&c.ShutdownTimeout, "shutdown-timeout", "CHORUS_SHUTDOWN_TIMEOUT", 10 * time.Second, "how long shutdown waits for requests to finish"},
		{&c.ReadHeaderTimeout, "read-header-timeout", "CHORUS_READ_HEADER_TIMEOUT", 10 * time.Second, "how long a client may take to send a request's headers"},
		{&c.ReadTimeout, "read-timeout", "CHORUS_READ_TIMEOUT", 20 * time.Second, "how long a client may take to send a whole request (streams exempt once upgraded)"},
		{&c.WriteTimeout, "write-timeout", "CHORUS_WRITE_TIMEOUT", 30 * time.Second, "how long an answer may take from the end of its request's headers (streams exempt)"},
		{&c.IdleTimeout, "idle-timeout", "CHORUS_IDLE_TIMEOUT", 60 * time.Second, "how long an idle keep-alive connection stays open"},
		{&c.RequestTimeout, "request-timeout", "CHORUS_REQUEST_TIMEOUT", web.DefaultRequestTimeout, "how long an API request may take, its Redis calls included, before 503 timeout (streams exempt once upgraded)"},
		{&c.InactiveAfter, "inactive-after", "CHORUS_INACTIVE_AFTER", social.DefaultInactiveAfter, "users without a signed-in request or a stream this long get no pushed posts until they come back (their home timeline is then rebuilt); 0: never"},
		{&c.PasswordHashWait, "password-hash-wait", "CHORUS_PASSWORD_HASH_WAIT", social.DefaultHashWait, "how long a sign-up or sign-in waits for a password hasher before 429 server_busy"},
		{&c.DrainWindow, "drain-window", "CHORUS_DRAIN_WINDOW", realtime.DefaultDrainWindow, "on SIGTERM, how long the instance spreads the closing of its streams over (each told to reconnect elsewhere at once), at least 10 a second, before it shuts down; a second SIGTERM closes the rest at once; 0: all at once"},
	}
	for _, d := range durations {
		def := d.def
		envOf[d.name] = d.env
		if raw := getenv(d.env); raw != "" {
			if v, err := time.ParseDuration(raw); err != nil {
				envErrs = append(envErrs, envError{d.name, fmt.Errorf("%s: %w", d.env, err)})
			} else {
				def = v
			}
		}
		fs.DurationVar(d.p, d.name, def, d.usage+" ("+d.env+")")
	}

	rates := []struct {
		p         *redis_rate.Limit
		name, env string
		usage     string
	}{
		{&c.SignUpLimit, "signup-limit", "CHORUS_SIGNUP_LIMIT", "sign-ups per client address"},
		{&c.SignInLimit, "signin-limit", "CHORUS_SIGNIN_LIMIT", "sign-in attempts per client address, any login"},
		{&c.SignInFailures, "signin-failures", "CHORUS_SIGNIN_FAILURES", "failed sign-ins per login and client address before 429 (N/window; burst ignored)"},
		{&c.SignInAccount, "signin-account-failures", "CHORUS_SIGNIN_ACCOUNT_FAILURES", "failed sign-ins per login from all the addresses it has not signed in from lately, before 429 for those (N/window; burst ignored)"},
		{&c.PostLimit, "post-limit", "CHORUS_POST_LIMIT", "statuses posted per user"},
		{&c.FollowLimit, "follow-limit", "CHORUS_FOLLOW_LIMIT", "follows and unfollows per user"},
		{&c.LikeLimit, "like-limit", "CHORUS_LIKE_LIMIT", "likes, reposts and their undoing per user"},
		{&c.ListLimit, "list-limit", "CHORUS_LIST_LIMIT", "changes to lists and their members per user"},
		{&c.BlockLimit, "block-limit", "CHORUS_BLOCK_LIMIT", "blocks and mutes, and taking them back, per user"},
		{&c.SearchLimit, "search-limit", "CHORUS_SEARCH_LIMIT", "user searches and suggestions per user, or per client address for visitors"},
		{&c.ReadLimit, "read-limit", "CHORUS_READ_LIMIT", "reads of timelines, statuses, users and lists per user, or per client address for visitors"},
		{&c.StreamFrameLimit, "stream-frame-limit", "CHORUS_STREAM_FRAME_LIMIT", "frames a client may send on one stream, pings and pongs included; over it the stream is closed (1008)"},
		{&c.ResumeLimit, "resume-limit", "CHORUS_RESUME_LIMIT", "resume frames per user, all their streams on every instance together; over it the client gets an error frame"},
		{&c.StreamOpenLimit, "stream-open-limit", "CHORUS_STREAM_OPEN_LIMIT", "streams opened per user; over it 429"},
		{&c.StreamOpenAddressLimit, "stream-open-address-limit", "CHORUS_STREAM_OPEN_ADDRESS_LIMIT", "streams opened per client address, any user; over it 429"},
		{&c.ProfileLimit, "profile-limit", "CHORUS_PROFILE_LIMIT", "profile edits (name, bio) per user"},
		{&c.ReportLimit, "report-limit", "CHORUS_REPORT_LIMIT", "reports of accounts per user"},
		{&c.ExportLimit, "export-limit", "CHORUS_EXPORT_LIMIT", "account exports (GET /me/export) per user"},
		{&c.StreamSendLimit, "stream-send-limit", "CHORUS_STREAM_SEND_LIMIT", "frames posted for event streams (POST /api/v1/stream/{stream}) per user"},
		{&c.PasswordLimit, "password-limit", "CHORUS_PASSWORD_LIMIT", "password changes and account deletions (each checks the password) per user"},
		{&c.ActionLimit, "action-limit", "CHORUS_ACTION_LIMIT", "status deletions and admins' changes (approvals, reports resolved, suspensions) per user"},
	}
	for _, r := range rates {
		envOf[r.name] = r.env
		if raw := getenv(r.env); raw != "" {
			if err := (rateValue{r.p}).Set(raw); err != nil {
				envErrs = append(envErrs, envError{r.name, fmt.Errorf("%s: %w", r.env, err)})
			}
		}
		fs.Var(rateValue{r.p}, r.name, r.usage+`, as N/PERIOD[,burst=B] or "off" (`+r.env+")")
	}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = io.WriteString(help, about)
			fs.SetOutput(help)
			fs.PrintDefaults()
		}
		return c, err
	}
	if c.ShowVersion {
		return c, nil
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, e := range envErrs {
		if !given[e.flag] {
			return c, e.err
		}
	}
	// bad refuses the value of the flag name, naming where it came from:
	// the flag, or its environment variable.
	bad := func(name, format string, args ...any) error {
		from := "-" + name
		if !given[name] && getenv(envOf[name]) != "" {
			from = envOf[name] + " (-" + name + ")"
		}
		return fmt.Errorf("%s %s", from, fmt.Sprintf(format, args...))
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		} else if !isOrigin(o) {
			// A browser's Origin always has a scheme and never a path: such
			// an entry would match no request, silently.
			return c, bad("allowed-origins", "names %q, which is not an origin: a scheme and a host (and port), as a browser sends it, such as https://app.example.com", o)
		}
		c.AllowedOrigins = append(c.AllowedOrigins, o)
	}
	for _, a := range strings.Split(admins, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		} else if !social.ValidLogin(a) {
			return c, bad("admins", "names %q, which is not a login", a)
		}
		c.Admins = append(c.Admins, a)
	}
	if !social.ValidRegistrations(c.Registrations) {
		return c, bad("registrations", "must be open, approval or closed, got %q", c.Registrations)
	}
	var err error
	if c.TrustedProxies, err = web.ParseProxies(proxies); err != nil {
		return c, bad("trusted-proxies", "is not a list of addresses and CIDR blocks: %v", err)
	}
	switch {
	case c.OnlineWindow <= 0:
		return c, bad("online-window", "must be positive, got %s", c.OnlineWindow)
	case c.HeartbeatInterval < minHeartbeatInterval:
		return c, bad("heartbeat-interval", "must be %s or more, got %s", minHeartbeatInterval, c.HeartbeatInterval)
	case c.HeartbeatInterval >= c.OnlineWindow:
		return c, bad("heartbeat-interval", "(%s) must be shorter than -online-window (%s)", c.HeartbeatInterval, c.OnlineWindow)
	case c.DrainWindow < 0:
		return c, bad("drain-window", "must be 0 or more, got %s", c.DrainWindow)
	case c.ShutdownTimeout <= 0:
		return c, bad("shutdown-timeout", "must be positive, got %s", c.ShutdownTimeout)
	case c.PullThreshold < 0:
		return c, bad("pull-threshold", "must be 0 (never) or more, got %d", c.PullThreshold)
	case c.InactiveAfter < 0:
		return c, bad("inactive-after", "must be 0 (never) or more, got %s", c.InactiveAfter)
	case c.MaxStreams < 0:
		return c, bad("max-streams", "must be 0 or more, got %d", c.MaxStreams)
	case c.MaxConnections < 0:
		return c, bad("max-connections", "must be 0 or more, got %d", c.MaxConnections)
	case c.MaxStreamsPerUser <= 0:
		return c, bad("max-streams-per-user", "must be positive, got %d", c.MaxStreamsPerUser)
	case c.MaxConnsPerAddress < 0:
		return c, bad("max-connections-per-address", "must be 0 or more, got %d", c.MaxConnsPerAddress)
	case c.InProcessLimitFactor < 0:
		return c, bad("in-process-limit-factor", "must be 0 or more, got %d", c.InProcessLimitFactor)
	case c.IPv6SiteLimitFactor < 0:
		return c, bad("ipv6-site-limit-factor", "must be 0 or more, got %d", c.IPv6SiteLimitFactor)
	case c.SessionsPerUser <= 0:
		return c, bad("sessions-per-user", "must be positive, got %d", c.SessionsPerUser)
	case c.PasswordHashers < 0:
		return c, bad("password-hashers", "must be 0 or more, got %d", c.PasswordHashers)
	case c.SignInFailures.IsZero():
		return c, bad("signin-failures", "cannot be off: it is what stops password guessing")
	case c.SignInAccount.IsZero():
		return c, bad("signin-account-failures", "cannot be off: it is what stops password guessing spread over addresses")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return c, bad("log-format", "must be text or json, got %q", c.LogFormat)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"read-header-timeout", c.ReadHeaderTimeout}, {"read-timeout", c.ReadTimeout}, {"write-timeout", c.WriteTimeout}, {"idle-timeout", c.IdleTimeout}, {"password-hash-wait", c.PasswordHashWait}, {"request-timeout", c.RequestTimeout}} {
		if d.v <= 0 {
			return c, bad(d.name, "must be positive, got %s", d.v)
		}
	}
	switch {
	case c.MaxStreams > 0 && c.MaxConnections > 0 && c.MaxStreams >= c.MaxConnections:
		// The streams are connections too: at the cap, no request
		// would find room beside them.
		return c, bad("max-streams", "(%d) must be under -max-connections (%d), which counts the streams too, so that requests find room beside them", c.MaxStreams, c.MaxConnections)
	case c.RequestTimeout >= c.WriteTimeout:
		// The server would cut the connection before the request's
		// 503 timeout could be written.
		return c, bad("request-timeout", "(%s) must be shorter than -write-timeout (%s), within which its answer goes out", c.RequestTimeout, c.WriteTimeout)
	}
	return c, nil
}
