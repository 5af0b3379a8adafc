package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/presence"
	"chorus/protocol"
	"chorus/social"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
	"golang.org/x/net/netutil"
)

// tokenHeader carries a test user's session token to the test server, which
// authenticates by it alone (the Origin, cookies and the rest are web's).
const tokenHeader = "X-Test-Token"

// env is a hub over a real social.Service and presence.Tracker under a key
// prefix of the test's own, served by httptest.
type env struct {
	tb       testing.TB
	rdb      *redis.Client
	prefix   string
	social   *social.Service
	presence *presence.Tracker
	hub      *Hub
	url      string     // ws://.../stream
	refusals chan error // what Serve returned, for each stream it refused
}

// envOptions shape an env; the zero value is a hub with default options on
// the shared test server.
type envOptions struct {
	rdb      *redis.Client // nil: the shared test server
	prefix   string        // "": a key prefix of the env's own
	hub      Options
	social   social.Options
	presence presence.Options
	feed     func(*social.Service) Feed       // wraps the hub's feed; nil: the service itself
	pres     func(*presence.Tracker) Presence // wraps the hub's presence; nil: the tracker itself
	// limited serves through netutil.LimitListener, as cmd/chorus does:
	// its connections cannot half-close.
	limited bool
}

func newEnv(tb testing.TB, o envOptions) *env {
	tb.Helper()
	rdb, prefix := o.rdb, o.prefix
	if rdb == nil {
		rdb = redistest.ClientOf(tb, redistest.URL(tb))
	}
	if prefix == "" {
		prefix = redistest.Prefix()
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sopts := o.social
	sopts.Prefix, sopts.BcryptCost, sopts.Logger = prefix, 4, log
	soc := social.New(rdb, sopts)
	popts := o.presence
	popts.Prefix, popts.FriendsKey, popts.Profile = prefix, soc.FriendsKey, soc.Profile
	popts.Logger = log
	pres := presence.New(rdb, popts)
	var feed Feed = soc
	if o.feed != nil {
		feed = o.feed(soc)
	}
	var hubPres Presence = pres
	if o.pres != nil {
		hubPres = o.pres(pres)
	}
	hopts := o.hub
	hopts.Prefix, hopts.Logger, hopts.Instance = prefix, log, pres.ID()
	hub := New(rdb, feed, hubPres, hopts)
	refusals := make(chan error, 16)
	handler := func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get(tokenHeader)
		uid, err := soc.Authenticate(r.Context(), token)
		if err != nil {
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		if err := hub.Serve(w, r, uid, social.SessionID(token)); err != nil {
			// The hub answers nothing when it refuses; web maps its
			// refusals to the API's answers. Here the test reads them.
			select {
			case refusals <- err:
			default: // the first 16 wait for a test to read them
			}
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}
	return &env{
		tb: tb, rdb: rdb, prefix: prefix, social: soc, presence: pres, hub: hub, refusals: refusals,
		url: serveOn(tb, hub, handler, o.limited),
	}
}

// serve serves a test's streams with handler and returns their URL; when
// the test ends it shuts hub down and closes the server.
func serve(tb testing.TB, hub *Hub, handler http.HandlerFunc) string {
	return serveOn(tb, hub, handler, false)
}

// serveOn is serve, through netutil.LimitListener when limited.
func serveOn(tb testing.TB, hub *Hub, handler http.HandlerFunc, limited bool) string {
	srv := httptest.NewUnstartedServer(handler)
	if limited {
		srv.Listener = netutil.LimitListener(srv.Listener, 1000)
	}
	srv.Start()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hub.Shutdown(ctx); err != nil {
			tb.Errorf("hub shutdown: %v", err)
		}
		srv.Close()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/stream"
}

// peer is another instance beside e: a hub of its own, shaped by o, on e's
// Redis and under e's key prefix, so that both serve the same users.
func (e *env) peer(o envOptions) *env {
	e.tb.Helper()
	o.rdb, o.prefix = e.rdb, e.prefix
	return newEnv(e.tb, o)
}

// user is a signed-up test user with a session.
type user struct {
	id    int64
	login string
	token string
}

func (e *env) signUp(login string) user {
	e.tb.Helper()
	u, token, err := e.social.SignUp(e.tb.Context(), login, login, "kettle-drum-41")
	if err != nil {
		e.tb.Fatalf("sign up %s: %v", login, err)
	}
	return user{id: u.ID, login: login, token: token}
}

// signOut ends u's session as web does: social ends it, and tells its
// streams.
func (e *env) signOut(ctx context.Context, u user) {
	e.tb.Helper()
	if err := e.social.SignOut(ctx, u.token); err != nil {
		e.tb.Fatalf("sign out %s: %v", u.login, err)
	}
}

// dropSession deletes u's session as its expiry would: nothing is
// published, and only a check of the sessions finds it gone.
func (e *env) dropSession(ctx context.Context, u user) {
	e.tb.Helper()
	if err := e.rdb.Del(ctx, e.prefix+"session:"+social.SessionID(u.token)).Err(); err != nil {
		e.tb.Fatalf("drop the session of %s: %v", u.login, err)
	}
}

func (e *env) post(u user, message string) social.Status {
	e.tb.Helper()
	st, err := e.social.Post(e.tb.Context(), u.id, message)
	if err != nil {
		e.tb.Fatalf("post as %s: %v", u.login, err)
	}
	return st
}

// follow makes a follow b.
func (e *env) follow(a, b user) {
	e.tb.Helper()
	if _, _, err := e.social.Follow(e.tb.Context(), a.id, b.login); err != nil {
		e.tb.Fatalf("%s follows %s: %v", a.login, b.login, err)
	}
}

// publish sends v, as JSON, on u's channel, as any instance would.
func (e *env) publish(u user, v any) {
	e.tb.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		e.tb.Fatal(err)
	}
	if err := e.rdb.Publish(e.tb.Context(), e.social.UserChannel(u.id), raw).Err(); err != nil {
		e.tb.Fatalf("publish to %s: %v", u.login, err)
	}
}

// serial numbers what the harness names itself (marks, users), unique in
// the test binary.
var serial atomic.Int64

// routed returns the frames s, a stream of u on any instance under e's
// prefix, is sent before a mark published on u's channel now. A hub reads
// every channel through one pub/sub connection, which Redis feeds in the
// order it publishes: whatever was published before the mark, on any
// channel, has been routed by then (a presence frame held back by
// coalescing aside).
func (e *env) routed(u user, s *stream) []frame {
	e.tb.Helper()
	mark := "mark_" + strconv.FormatInt(serial.Add(1), 10)
	e.publish(u, map[string]string{"type": "mark", "mark": mark})
	return s.upTo(func(f frame) bool { return f.Type == "mark" && f.Mark == mark }, 10*time.Second)
}

// settle returns once the hub's subscriber has sent Redis every change
// asked of it so far, and Redis has acted on them: it opens streams of two
// new users, one after the other. The first opens once Redis confirms the
// SUBSCRIBE of a batch taken after those changes, each batch's SUBSCRIBE
// going before its UNSUBSCRIBE; the second's SUBSCRIBE, in a later batch,
// follows that UNSUBSCRIBE on the pub/sub connection.
func (e *env) settle() {
	e.tb.Helper()
	for range 2 {
		e.connect(e.signUp("settle_" + strconv.FormatInt(serial.Add(1), 10)))
	}
}

// subscribers is how many pub/sub connections Redis holds subscribed to
// u's channel.
func (e *env) subscribers(u user) int64 {
	e.tb.Helper()
	channel := e.social.UserChannel(u.id)
	n, err := e.rdb.PubSubNumSub(e.tb.Context(), channel).Result()
	if err != nil {
		e.tb.Fatalf("pubsub numsub: %v", err)
	}
	return n[channel]
}

func (e *env) dial(u user, header http.Header) (*websocket.Conn, *http.Response, error) {
	return dialToken(e.tb, e.url, u.token, header)
}

// dialToken dials a test server's stream at url with a session token.
func dialToken(tb testing.TB, url, token string, header http.Header) (*websocket.Conn, *http.Response, error) {
	if header == nil {
		header = http.Header{}
	}
	header.Set(tokenHeader, token)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if ws != nil {
		ws.SetReadLimit(1 << 20)
		tb.Cleanup(func() { ws.CloseNow() })
	}
	return ws, res, err
}

// connect opens a stream as u and waits for its ready frame.
func (e *env) connect(u user) *stream {
	e.tb.Helper()
	return connectToken(e.tb, e.url, u.token)
}

// connectToken opens a stream at url with a session token and waits for
// its ready frame.
func connectToken(tb testing.TB, url, token string) *stream {
	tb.Helper()
	ws, res, err := dialToken(tb, url, token, nil)
	if err != nil {
		tb.Fatalf("dial with %s: %v (%v)", token, err, res)
	}
	s := newStream(tb, ws)
	if f := s.next(5 * time.Second); f.Type != "ready" {
		tb.Fatalf("first frame is %+v, want ready", f)
	}
	return s
}

// frame is any frame the server sends, as far as these tests read it.
type frame struct {
	Type    string         `json:"type"`
	Status  *social.Status `json:"status"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	// ID is the status_deleted and global_status_deleted frames'.
	ID int64 `json:"id"`
	// Timeline is the watching frame's; Thread a thread watch's, and the
	// thread frames'; ReplyTo the deletion frames'.
	Timeline string `json:"timeline"`
	Thread   int64  `json:"thread"`
	ReplyTo  int64  `json:"reply_to"`
	// YouFollow is the followed frame's.
	YouFollow *bool `json:"you_follow"`
	// Seq and Mark are those of the frames tests publish themselves.
	Seq  int    `json:"seq"`
	Mark string `json:"mark"`
	// Available is the service frame's.
	Available *bool `json:"available"`
	// User is a presence or followed frame's, Online a presence frame's.
	User *struct {
		ID int64 `json:"id"`
	} `json:"user"`
	Online bool `json:"online"`
	// Notification is the notification frame's.
	Notification *struct {
		Type string `json:"type"`
		From struct {
			ID int64 `json:"id"`
		} `json:"from"`
	} `json:"notification"`
}

// String is the frame in short: its type and what it is about.
func (f frame) String() string {
	switch {
	case f.Status != nil:
		return fmt.Sprintf("%s %d", f.Type, f.Status.ID)
	case f.Type == protocol.TypeThreadStatusDeleted:
		return fmt.Sprintf("%s %d in %d", f.Type, f.ID, f.Thread)
	case f.Type == protocol.TypeStatusDeleted || f.Type == protocol.TypeGlobalStatusDeleted:
		return fmt.Sprintf("%s %d", f.Type, f.ID)
	case f.User != nil && f.Type == protocol.TypePresence:
		return fmt.Sprintf("%s of %d online=%v", f.Type, f.User.ID, f.Online)
	case f.User != nil && f.YouFollow != nil:
		return fmt.Sprintf("%s by %d you_follow=%v", f.Type, f.User.ID, *f.YouFollow)
	case f.Type == protocol.TypeError:
		return fmt.Sprintf("%s %s", f.Type, f.Code)
	case f.Notification != nil:
		return fmt.Sprintf("%s %s from %d", f.Type, f.Notification.Type, f.Notification.From.ID)
	}
	return f.Type
}

// describe lists frames in short.
func describe(frames []frame) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = f.String()
	}
	return out
}

// stream is a test's client: a goroutine reads every frame into frames
// until the connection ends, then closeErr holds why.
type stream struct {
	tb       testing.TB
	ws       *websocket.Conn
	frames   chan frame
	done     chan struct{}
	closeErr error
}

func newStream(tb testing.TB, ws *websocket.Conn) *stream {
	s := &stream{tb: tb, ws: ws, frames: make(chan frame, 10000), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				s.closeErr = err
				return
			}
			var f frame
			if err := json.Unmarshal(data, &f); err != nil {
				s.closeErr = err
				return
			}
			s.frames <- f
		}
	}()
	return s
}

// next returns the next frame, failing the test after within.
func (s *stream) next(within time.Duration) frame {
	s.tb.Helper()
	select {
	case f := <-s.frames:
		return f
	case <-s.done:
		select {
		case f := <-s.frames:
			return f
		default:
		}
		s.tb.Fatalf("stream ended: %v", s.closeErr)
	case <-time.After(within):
		s.tb.Fatalf("no frame within %s", within)
	}
	return frame{}
}

// until returns the frames that come before the first error frame with
// code, failing the test when none comes within.
func (s *stream) until(code string, within time.Duration) []frame {
	s.tb.Helper()
	return s.upTo(func(f frame) bool { return f.Type == "error" && f.Code == code }, within)
}

// upTo returns the frames that come before the first one last accepts,
// failing the test when none comes within.
func (s *stream) upTo(last func(frame) bool, within time.Duration) []frame {
	s.tb.Helper()
	deadline := time.Now().Add(within)
	var got []frame
	for {
		f := s.next(time.Until(deadline))
		if last(f) {
			return got
		}
		got = append(got, f)
	}
}

// closed waits for the server to close the stream, and returns the close
// code and every frame that came before it.
func (s *stream) closed(within time.Duration) (websocket.StatusCode, []frame) {
	s.tb.Helper()
	select {
	case <-s.done:
	case <-time.After(within):
		s.tb.Fatalf("stream still open after %s", within)
	}
	var got []frame
	for {
		select {
		case f := <-s.frames:
			got = append(got, f)
		default:
			return websocket.CloseStatus(s.closeErr), got
		}
	}
}

func (s *stream) isOpen() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *stream) send(v any) {
	s.tb.Helper()
	raw, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.ws.Write(ctx, websocket.MessageText, raw); err != nil {
		s.tb.Fatalf("write: %v", err)
	}
}

// ping asks for a frame the server answers in order after everything sent
// before it: an unknown_type error.
func (s *stream) ping() { s.send(map[string]string{"type": "ping"}) }

// refusal returns why Serve refused the last stream it refused.
func (e *env) refusal() error {
	e.tb.Helper()
	select {
	case err := <-e.refusals:
		return err
	case <-time.After(5 * time.Second):
		e.tb.Fatal("no stream refused")
		return nil
	}
}

// countingFeed counts the home-timeline pages the hub reads.
type countingFeed struct {
	*social.Service
	pages atomic.Int64
}

func (f *countingFeed) HomeTimeline(ctx context.Context, uid int64, c social.Cursor) (social.TimelinePage, error) {
	f.pages.Add(1)
	return f.Service.HomeTimeline(ctx, uid, c)
}

func statusIDs(frames []frame) []int64 {
	var ids []int64
	for _, f := range frames {
		if f.Type == "status" {
			ids = append(ids, f.Status.ID)
		}
	}
	return ids
}

// eachCommand runs do before each command, alone or in a pipeline; a
// command do answers an error for is not sent, and fails with it (the
// pipeline's others are sent).
type eachCommand struct{ do func(redis.Cmder) error }

func (*eachCommand) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *eachCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if err := h.do(c); err != nil {
			c.SetErr(err)
			return err
		}
		return next(ctx, c)
	}
}

func (h *eachCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var sent []redis.Cmder
		var failed error
		for _, c := range cmds {
			if err := h.do(c); err != nil {
				c.SetErr(err)
				failed = err
			} else {
				sent = append(sent, c)
			}
		}
		if len(sent) > 0 {
			if err := next(ctx, sent); err != nil {
				failed = err
			}
		}
		return failed
	}
}

// reply posts message as u, answering status to.
func (e *env) reply(u user, to int64, message string) social.Status {
	e.tb.Helper()
	st, err := e.social.Reply(e.tb.Context(), u.id, to, message)
	if err != nil {
		e.tb.Fatalf("reply as %s to %d: %v", u.login, to, err)
	}
	return st
}
