package web_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/app"
	"chorus/internal/redistest"
	"chorus/internal/slots"
	"chorus/presence"
	"chorus/protocol"
	"chorus/realtime"
	"chorus/social"
	"chorus/web"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// instance is one Chorus HTTP server on a test's Redis, with its fan-out
// worker running.
type instance struct {
	srv      *httptest.Server
	social   *social.Service
	presence *presence.Tracker
	hub      *realtime.Hub
	rdb      redis.UniversalClient
	prefix   string
	log      *serverLog // its last logKept bytes of log, warnings and errors (or all: env.logAll)
}

type env struct {
	tb       testing.TB
	rdb      redis.UniversalClient
	prefix   string
	opts     social.Options
	presence presence.Options
	realtime realtime.Options
	limits   web.Limits     // none unless a test sets them
	proxies  []netip.Prefix // trusted proxies
	origins  []string       // allowed origins besides the server's own
	noWorker bool           // run no fan-out worker: jobs wait past their first pass
	sites    int            // web.Config.SiteLimitFactor
	logAll   bool           // instances log every line (requests included), not warnings and errors alone
	// requestTimeout is each request's deadline; zero: a minute, which no
	// request of a test takes however busy the machine, where the server's
	// default would.
	requestTimeout time.Duration
	// connContext, when set, is the instances' http.Server ConnContext:
	// what a test puts in the context of every request.
	connContext func(context.Context, net.Conn) context.Context
}

func newEnv(tb testing.TB, opts social.Options) *env {
	tb.Helper()
	rdb, prefix := redistest.Backend(tb)
	opts.Prefix = prefix
	opts.BcryptCost = 4
	if opts.HashWait == 0 {
		// A busy test machine must not turn sign-ups into 429s.
		opts.HashWait = time.Minute
	}
	return &env{tb: tb, rdb: rdb, prefix: prefix, opts: opts}
}

// start runs one more instance on the env's Redis and key prefix.
func (e *env) start() *instance {
	e.tb.Helper()
	return e.startOn(e.rdb)
}

// startOn runs one more instance whose Redis client is rdb.
func (e *env) startOn(rdb redis.UniversalClient) *instance {
	e.tb.Helper()
	name, log := "test-"+uuid.NewString(), &serverLog{}
	popts := e.presence
	if popts.CountsTTL == 0 {
		popts.CountsTTL = -1 // tests read counts right after changing them
	}
	chorus := app.New(rdb, app.Options{
		Prefix: e.prefix, Social: e.opts, Presence: popts, Realtime: e.realtime,
		Web:    web.Config{Limits: e.limits, TrustedProxies: e.proxies, AllowedOrigins: e.origins, RequestTimeout: cmp.Or(e.requestTimeout, time.Minute), SiteLimitFactor: e.sites},
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: map[bool]slog.Level{true: slog.LevelInfo, false: slog.LevelWarn}[e.logAll]})),
		Name:   name, NoFanoutWorker: e.noWorker,
	})
	srv := httptest.NewUnstartedServer(chorus.Server)
	srv.Config.ConnContext = e.connContext
	srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	var work sync.WaitGroup
	work.Go(func() { chorus.Run(ctx) })
	e.tb.Cleanup(func() {
		shut, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		chorus.Hub.Shutdown(shut)
		cancel()
		work.Wait()
		srv.Close()
		if e.tb.Failed() {
			e.tb.Logf("instance %s, its warnings and errors:\n%s", name, log.String())
		}
	})
	return &instance{srv: srv, social: chorus.Social, presence: chorus.Presence, hub: chorus.Hub, rdb: rdb, prefix: e.prefix, log: log}
}

// serverLog keeps the last logKept bytes of an instance's log, for a test
// that failed to show: a client told only "Something went wrong" (a 500)
// learns why there.
type serverLog struct {
	mu  sync.Mutex
	buf []byte
}

const logKept = 32 << 10

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - logKept; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return "(none)"
	}
	return string(l.buf)
}

// client speaks to one instance as one user (or nobody).
type client struct {
	tb    testing.TB
	base  string
	token string
	login string
	id    int64
}

func (in *instance) anon(tb testing.TB) *client {
	return &client{tb: tb, base: in.srv.URL}
}

// as returns a client of this instance with c's session.
func (in *instance) as(c *client) *client {
	cc := *c
	cc.base = in.srv.URL
	return &cc
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
}

// errorCode returns the API error code of the answer, failing the test if
// it is not in the API's error shape.
func (r response) errorCode(tb testing.TB) string {
	tb.Helper()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	r.decode(tb, &e)
	if e.Error.Code == "" || e.Error.Message == "" {
		tb.Fatalf("answer %d %s is not an API error", r.Status, r.Body)
	}
	return e.Error.Code
}

func (c *client) do(method, path string, body any, header ...string) response {
	c.tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			c.tb.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		c.tb.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.tb.Fatal(err)
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// must does a request that must answer want, and decodes the answer into v.
func (c *client) must(want int, method, path string, body, v any) response {
	c.tb.Helper()
	res := c.do(method, path, body)
	if res.Status != want {
		c.tb.Fatalf("%s %s: got %d %s, want %d", method, path, res.Status, res.Body, want)
	}
	if v != nil {
		res.decode(c.tb, v)
	}
	return res
}

// userJSON is a user as the API shows it; the pointers tell a field left
// out from a zero one.
type userJSON struct {
	protocol.User
	Online     *bool      `json:"online"`
	LastSeen   *time.Time `json:"last_seen"`
	YouFollow  *bool      `json:"you_follow"`
	FollowsYou *bool      `json:"follows_you"`
	Blocking   *bool      `json:"blocking"`
	Muting     *bool      `json:"muting"`
}

type statusJSON struct {
	ID      int64     `json:"id"`
	UID     int64     `json:"uid"`
	Login   string    `json:"login"`
	Name    string    `json:"name"`
	Message string    `json:"message"`
	Posted  time.Time `json:"posted"`
	// RepostOf is a repost entry's original.
	RepostOf *statusJSON `json:"repost_of"`
	Replies  int64       `json:"replies"`
	Likes    int64       `json:"likes"`
	Reposts  int64       `json:"reposts"`
}

type pageJSON struct {
	Statuses   []statusJSON `json:"statuses"`
	NextBefore *int64       `json:"next_before"`
	NextAfter  *int64       `json:"next_after"`
}

// signUp creates a user and returns a client signed in as them.
func (in *instance) signUp(tb testing.TB, login string) *client {
	tb.Helper()
	c := in.anon(tb)
	var out struct {
		User  userJSON `json:"user"`
		Token string   `json:"token"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/users",
		map[string]string{"login": login, "name": "Name " + login, "password": "password-" + login}, &out)
	c.token, c.login, c.id = out.Token, out.User.Login, out.User.ID
	return c
}

func (c *client) user(login string) userJSON {
	c.tb.Helper()
	var out struct{ User userJSON }
	c.must(http.StatusOK, "GET", "/api/v1/users/"+login, nil, &out)
	return out.User
}

func (c *client) follow(login string) {
	c.tb.Helper()
	c.must(http.StatusOK, "PUT", "/api/v1/following/"+login, nil, nil)
}

func (c *client) unfollow(login string) {
	c.tb.Helper()
	c.must(http.StatusNoContent, "DELETE", "/api/v1/following/"+login, nil, nil)
}

func (c *client) post(message string) statusJSON {
	c.tb.Helper()
	var out struct{ Status statusJSON }
	c.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": message}, &out)
	return out.Status
}

// deleteStatus deletes status id, which must be c's.
func (c *client) deleteStatus(id int64) {
	c.tb.Helper()
	c.must(http.StatusNoContent, "DELETE", "/api/v1/statuses/"+strconv.FormatInt(id, 10), nil, nil)
}

func (c *client) timeline(path string) pageJSON {
	c.tb.Helper()
	var out pageJSON
	c.must(http.StatusOK, "GET", path, nil, &out)
	return out
}

func ids(sts []statusJSON) []int64 {
	out := make([]int64, len(sts))
	for i, s := range sts {
		out[i] = s.ID
	}
	return out
}

type counts struct{ followers, following, posts int64 }

func (c *client) counts(login string) counts {
	c.tb.Helper()
	u := c.user(login)
	return counts{u.Followers, u.Following, u.Posts}
}

// onCluster reports whether the instance runs on a Redis Cluster.
func (in *instance) onCluster() bool {
	_, ok := in.rdb.(*redis.ClusterClient)
	return ok
}

// userKey names a key of uid's as social lays them out ("home", uid): on a
// cluster the uid is the key's hash tag.
func (in *instance) userKey(kind string, uid int64) string {
	return in.prefix + kind + ":" + slots.Tag(in.onCluster(), strconv.FormatInt(uid, 10))
}

// publish sends msg on channel as Chorus does: SPUBLISH on a cluster, where
// the hub's subscriptions are sharded.
func (in *instance) publish(tb testing.TB, channel, msg string) {
	tb.Helper()
	var err error
	if in.onCluster() {
		err = in.rdb.SPublish(tb.Context(), channel, msg).Err()
	} else {
		err = in.rdb.Publish(tb.Context(), channel, msg).Err()
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// keys returns the keys matching pattern, from every master on a cluster.
func (in *instance) keys(tb testing.TB, pattern string) []string {
	tb.Helper()
	return redistest.Keys(tb, in.rdb, pattern)
}
