package realtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/presence"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

// Tests of the hub's pub/sub through the faults of a network: a connection
// killed, one whose write fails, one whose peer vanished without a word.
// Each starts a Redis of its own on one of the ports 27804-27809.

// gapEnv is newEnv on its own redis-server at port, but the hub talks to
// Redis through a client of its own, made from hubOpts (its address is
// the server's, unless set), so that the test can break its connections.
func gapEnv(t *testing.T, port int, hubOpts *redis.Options, sopts social.Options, hopts Options) *env {
	t.Helper()
	srv := redistest.StartOnPort(t, port)
	rdb := redistest.ClientOf(t, srv.URL)
	if hubOpts.Addr == "" {
		hubOpts.Addr = srv.Addr
	}
	hubRDB := redis.NewClient(hubOpts)
	t.Cleanup(func() { _ = hubRDB.Close() })
	prefix := redistest.Prefix()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sopts.Prefix, sopts.BcryptCost, sopts.Logger = prefix, 4, log
	soc := social.New(rdb, sopts)
	pres := presence.New(rdb, presence.Options{Prefix: prefix, FriendsKey: soc.FriendsKey, Profile: soc.Profile, Logger: log})
	hopts.Prefix, hopts.Logger, hopts.Instance = prefix, log, pres.ID()
	hub := New(hubRDB, soc, pres, hopts)
	handler := func(w http.ResponseWriter, r *http.Request) {
		uid, err := soc.Authenticate(r.Context(), r.Header.Get(tokenHeader))
		if err != nil {
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		if err := hub.Serve(w, r, uid, social.SessionID(r.Header.Get(tokenHeader))); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}
	e := &env{tb: t, rdb: rdb, prefix: prefix, social: soc, presence: pres, hub: hub,
		refusals: make(chan error, 16), url: serveOn(t, hub, handler, false)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go soc.NewWorker("gap", log).Run(ctx)
	return e
}

// pulledAuthor signs up an author with followers enough to be pulled
// (PullThreshold 2), and waits until they are.
func (e *env) pulledAuthor(t *testing.T) user {
	t.Helper()
	author, f1, f2 := e.signUp("author"), e.signUp("fol1"), e.signUp("fol2")
	e.follow(f1, author)
	e.follow(f2, author)
	testio.Eventually(t, 20*time.Second, func() string {
		if p, err := e.social.PulledAuthors(t.Context(), f2.id); err != nil || len(p) != 1 {
			return fmt.Sprintf("fol2's pulled authors: %v %v", p, err)
		}
		return ""
	})
	return author
}

// numSub is how many connections Redis has subscribed to channel.
func (e *env) numSub(t *testing.T, channel string) int64 {
	t.Helper()
	return e.rdb.PubSubNumSub(t.Context(), channel).Val()[channel]
}

// nextStatus is the id of the next status frame s is sent, other frames
// let go.
func nextStatus(t *testing.T, s *stream, within time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		f := s.next(time.Until(deadline))
		if f.Type == "status" {
			return f.Status.ID
		}
	}
}

// failingConn fails the first write that holds *failOn, as a socket whose
// peer reset it does, and closes itself.
type failingConn struct {
	net.Conn
	failOn *atomic.Value // string; "" for none
}

func (c *failingConn) Write(b []byte) (int, error) {
	if s, _ := c.failOn.Load().(string); s != "" && strings.Contains(string(b), s) {
		c.failOn.Store("")
		_ = c.Conn.Close()
		return 0, errors.New("write: connection reset by peer (test)")
	}
	return c.Conn.Write(b)
}

// A SUBSCRIBE whose write fails is made all the same: go-redis makes the
// connection again inside that call, subscribing the channels it had
// before, and the subscriber sends the new ones again. A follow of a pulled
// author made then reaches the open stream, and a later stream of the user
// opens.
func TestGapSubscribeWriteFails(t *testing.T) {
	var failOn atomic.Value
	failOn.Store("")
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &failingConn{Conn: c, failOn: &failOn}, nil
	}
	e := gapEnv(t, 27805, &redis.Options{Dialer: dialer}, social.Options{PullThreshold: 2}, Options{})
	author := e.pulledAuthor(t)
	ann := e.signUp("ann")
	s := e.connect(ann)
	achan := e.social.AuthorChannel(author.id)
	failOn.Store(achan) // the SUBSCRIBE of the author's channel meets a reset
	e.follow(ann, author)
	testio.Eventually(t, 20*time.Second, func() string {
		if failOn.Load().(string) != "" {
			return "the SUBSCRIBE was not written yet"
		}
		if n := e.numSub(t, achan); n != 1 {
			return fmt.Sprintf("the author's channel has %d subscribers, want the hub", n)
		}
		return ""
	})
	if _, res, err := e.dial(ann, nil); err != nil {
		t.Fatalf("a second stream of ann is refused: %v (%v)", err, res.Status)
	}
	st := e.post(author, "after the follow")
	if got := nextStatus(t, s, 10*time.Second); got != st.ID {
		t.Fatalf("ann's open stream got status %d, want the pulled author's %d", got, st.ID)
	}
}

// blackholeProxy forwards TCP to target; blackhole() stops forwarding on
// every connection open then, leaving them open (a peer gone without a
// reset: a failed-over host, a dropped NAT entry); new connections go
// through.
type blackholeProxy struct {
	mu    sync.Mutex
	holes []*atomic.Bool
}

func newBlackholeProxy(t *testing.T, listen, target string) *blackholeProxy {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	p := &blackholeProxy{}
	t.Cleanup(func() { _ = ln.Close() })
	pipe := func(dst, src net.Conn, hole *atomic.Bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				_ = dst.Close()
				_ = src.Close()
				return
			}
			if hole.Load() {
				continue // swallowed
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			hole := &atomic.Bool{}
			p.mu.Lock()
			p.holes = append(p.holes, hole)
			p.mu.Unlock()
			go pipe(s, c, hole)
			go pipe(c, s, hole)
		}
	}()
	return p
}

func (p *blackholeProxy) blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.holes {
		h.Store(true)
	}
}

// On one Redis, a pub/sub connection whose peer vanished without a reset
// is given up once it stays silent after a ping, and made anew: the
// statuses missed meanwhile reach the stream by its catch-up.
func TestGapSinglePubSubBlackholed(t *testing.T) {
	proxy := newBlackholeProxy(t, "127.0.0.1:27807", "127.0.0.1:27806")
	e := gapEnv(t, 27806, &redis.Options{Addr: "127.0.0.1:27807", ContextTimeoutEnabled: true}, social.Options{}, Options{})
	ann, bob := e.signUp("ann"), e.signUp("bob")
	e.follow(ann, bob)
	s := e.connect(ann)
	first := e.post(bob, "before")
	if got := nextStatus(t, s, 10*time.Second); got != first.ID {
		t.Fatalf("got status %d, want %d", got, first.ID)
	}
	before := e.hub.Stats.PubSubRestarts.Load()
	proxy.blackhole()
	st := e.post(bob, "after the pub/sub connection's peer vanished")
	if got := nextStatus(t, s, 60*time.Second); got != st.ID {
		t.Fatalf("got status %d, want %d", got, st.ID)
	}
	if e.hub.Stats.PubSubRestarts.Load() == before {
		t.Errorf("the status came without the subscription being made again")
	}
}
