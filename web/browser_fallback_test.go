package web_test

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/social"
)

// What a wsBlocker does to WebSocket handshakes.
const (
	passWebSockets   int32 = iota // forward them, as any other request
	refuseWebSockets              // close the connection: the WebSocket never opens
	// silenceWebSockets answers the handshake itself, then passes nothing
	// either way: the WebSocket opens and brings nothing, as antivirus
	// that inspects traffic does.
	silenceWebSockets
)

// wsBlocker is a proxy in front of a server that forwards every request
// but WebSocket handshakes, which it treats as mode says.
type wsBlocker struct {
	srv   *httptest.Server
	mode  atomic.Int32
	held  sync.WaitGroup
	conns sync.Map // the silenced connections, closed with the proxy
	// Handshakes counts the WebSocket handshakes that reached the proxy.
	handshakes atomic.Int64
}

func newWSBlocker(tb testing.TB, target string, mode int32) *wsBlocker {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	b := &wsBlocker{}
	b.mode.Store(mode)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			proxy.ServeHTTP(w, r)
			return
		}
		b.handshakes.Add(1)
		switch b.mode.Load() {
		case passWebSockets:
			proxy.ServeHTTP(w, r)
		case refuseWebSockets:
			if nc, _, err := http.NewResponseController(w).Hijack(); err == nil {
				nc.Close()
			}
		case silenceWebSockets:
			nc, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
			fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
				base64.StdEncoding.EncodeToString(sum[:]))
			brw.Flush()
			b.conns.Store(nc, true)
			b.held.Go(func() {
				defer b.conns.Delete(nc)
				_, _ = io.Copy(io.Discard, bufio.NewReader(nc)) // until the browser gives up
				nc.Close()
			})
		}
	}))
	tb.Cleanup(func() {
		b.conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		b.held.Wait()
		b.srv.Close()
	})
	return b
}

// signInOn signs in through the form of the page already open.
func (p *tab) signInOn(login, password string) {
	p.tb.Helper()
	form := testID("signin-form")
	p.waitVisible(form)
	p.typeInto(form+` input[name="login"]`, login)
	p.typeInto(form+` input[name="password"]`, password)
	p.click(form + ` button[type="submit"]`)
}

// waitTransport waits until the page's stream is live on transport
// ("websocket" or "events").
func (p *tab) waitTransport(transport string, within time.Duration) {
	p.tb.Helper()
	p.waitUntil("the stream live on "+transport, within, `(() => {
		const el = document.querySelector('[data-testid="conn-state"]');
		if (!el || el.dataset.state !== 'live') return 'conn-state is ' + (el && el.dataset.state);
		return document.body.dataset.transport === `+js(transport)+` ? '' : 'transport is ' + document.body.dataset.transport;
	})()`)
}

// Where WebSockets open and bring nothing, the client goes on over
// Server-Sent Events by itself: posts arrive live, the friends sidebar
// follows presence, the global page watches through frames posted by REST;
// once WebSockets pass again it goes back to one, with no friend seeing it
// go offline.
func TestBrowserStreamFallsBackToEvents(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice, bob, carol := in.signUp(t, "alice"), in.signUp(t, "bob"), in.signUp(t, "carol")
	befriend(alice, bob)
	proxy := newWSBlocker(t, in.srv.URL, silenceWebSockets)

	br := newBrowser(t)
	p := br.newTab(t, "alice", proxy.srv.URL)
	p.open("/")
	// Try a WebSocket again every 2 s while on events, rather than minutes.
	eval[bool](p, `(import('/static/events.js').then((m) => { m.setWebSocketRetry(2000); window.tuned = true; }), true)`)
	p.waitUntil("the client tuned", stepTimeout, `window.tuned ? '' : 'not yet'`)
	p.signInOn("alice", "password-alice")
	p.waitTransport("events", 30*time.Second)
	if proxy.handshakes.Load() == 0 {
		t.Fatal("the client never tried a WebSocket")
	}

	st := bob.post("Bob, heard without a WebSocket")
	p.waitUntil("bob's post arrives live", 20*time.Second, statusIn("feed", st.Message))

	// Presence: Bob coming online shows in Alice's sidebar, and going away
	// takes him out; Alice is online for Bob.
	online := `document.querySelector('[data-testid="online-friend"][data-login="bob"]') ? '' : 'bob not shown online'`
	bs := bob.connect()
	p.waitUntil("bob online in the sidebar", 20*time.Second, online)
	if !strings.Contains(string(bob.must(http.StatusOK, "GET", "/api/v1/friends/online", nil, nil).Body), `"alice"`) {
		t.Fatal("alice, on events, is not online for bob")
	}
	bs.close()
	p.waitUntil("bob away in the sidebar", 20*time.Second, `document.querySelector('[data-testid="online-friend"][data-login="bob"]') ? 'bob still shown online' : ''`)

	// The global page's watch goes by REST, and its frames come as events.
	p.goTo("/global")
	p.waitUntil("the global page fed by the stream", 20*time.Second,
		`document.querySelector('.view[data-live="true"]') ? '' : 'not live'`)
	stranger := carol.post("Carol, to everyone")
	p.waitUntil("carol's post arrives", 20*time.Second, statusIn("timeline", stranger.Message))

	// WebSockets pass again: the client goes back to one by itself, and
	// Bob, watching, never sees Alice go offline.
	bs = bob.connect()
	proxy.mode.Store(passWebSockets)
	p.waitTransport("websocket", 30*time.Second)
	bs.quiet("presence", 2*time.Second)
	late := bob.post("Bob, on a WebSocket again")
	p.goTo("/")
	p.waitUntil("bob's post arrives on the WebSocket", 20*time.Second, statusIn("feed", late.Message))
}

// Where WebSocket handshakes fail outright, the client is on events at
// once.
func TestBrowserStreamEventsWhenWebSocketsFail(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice, bob := in.signUp(t, "alice"), in.signUp(t, "bob")
	alice.follow("bob")
	proxy := newWSBlocker(t, in.srv.URL, refuseWebSockets)

	br := newBrowser(t)
	p := br.signedInTab(t, proxy.srv.URL, "alice")
	p.waitTransport("events", 20*time.Second)
	st := bob.post("Bob, through a proxy that refuses WebSockets")
	p.waitUntil("bob's post arrives live", 20*time.Second, statusIn("feed", st.Message))
}

// What an outageProxy does with what comes to it.
const (
	outagePass int32 = iota // forward everything
	// outageDown closes every connection as it comes, as an instance that
	// is down (restarting) behind an address that still takes them.
	outageDown
	// outageRefuseStreams answers every stream, WebSocket, events or HEAD,
	// 503, and forwards the rest: a server up but taking no streams.
	outageRefuseStreams
)

// outageProxy is a proxy in front of a server that forwards everything
// while it passes, and whose cut drops every connection open through it,
// the live streams among them, and then treats what comes as its mode
// says. It notes each stream dial and each GET /me, in order.
type outageProxy struct {
	srv  *httptest.Server
	mode atomic.Int32
	mu   sync.Mutex
	open map[net.Conn]bool
	seen []string // "websocket", "events", "head" (stream dials and HEADs) and "me", in order
}

func newOutageProxy(tb testing.TB, target string) *outageProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	o := &outageProxy{open: map[net.Conn]bool{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, stream := "", r.URL.Path == "/api/v1/stream"
		switch {
		case stream && r.Method == http.MethodHead:
			kind = "head"
		case stream && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
			kind = "websocket"
		case stream:
			kind = "events"
		case r.URL.Path == "/api/v1/me" && r.Method == http.MethodGet:
			kind = "me"
		}
		if kind != "" {
			o.mu.Lock()
			o.seen = append(o.seen, kind)
			o.mu.Unlock()
		}
		switch o.mode.Load() {
		case outageDown:
			if nc, _, err := http.NewResponseController(w).Hijack(); err == nil {
				nc.Close()
			}
		case outageRefuseStreams:
			if stream {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `{"error":{"code":"unavailable","message":"refused by the test"}}`)
				return
			}
			proxy.ServeHTTP(w, r)
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	// Every connection, hijacked ones (the WebSockets) too, until closed.
	o.srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		o.mu.Lock()
		defer o.mu.Unlock()
		switch st {
		case http.StateNew:
			o.open[c] = true
		case http.StateClosed:
			delete(o.open, c)
		}
	}
	o.srv.Start()
	tb.Cleanup(func() {
		o.cut(outageDown)
		o.srv.Close()
	})
	return o
}

// cut drops every connection open through the proxy, which from now on
// does as mode says.
func (o *outageProxy) cut(mode int32) {
	o.mode.Store(mode)
	o.mu.Lock()
	defer o.mu.Unlock()
	for c := range o.open {
		c.Close()
		delete(o.open, c)
	}
}

// mark is where what the proxy has seen stands now, for since.
func (o *outageProxy) mark() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

// since is what the proxy has seen after mark m.
func (o *outageProxy) since(m int) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen[m:]...)
}

// An instance restarting for a few seconds brings its clients back on
// WebSockets, as they were: a WebSocket that worked on the page and fails
// while the server is away does not send the page over to events (which
// would have every client of the restart try a WebSocket again, and resume,
// together two minutes later). Posts arrive live afterwards.
func TestBrowserStreamStaysOnWebSocketThroughRestart(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice, bob := in.signUp(t, "alice"), in.signUp(t, "bob")
	alice.follow("bob")
	proxy := newOutageProxy(t, in.srv.URL)

	br := newBrowser(t)
	p := br.signedInTab(t, proxy.srv.URL, "alice")
	p.waitTransport("websocket", 20*time.Second)

	m := proxy.mark()
	proxy.cut(outageDown)
	// Down until the client dialled three times, where it used to go over
	// to events after the second (or until it went over).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		seen := proxy.since(m)
		if slices.Contains(seen, "events") || len(slices.DeleteFunc(seen, func(k string) bool { return k != "websocket" })) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client's dials while the server was down: %s", strings.Join(seen, " "))
		}
	}
	proxy.cut(outagePass)
	p.waitTransport("websocket", 30*time.Second)
	seen := proxy.since(m)
	t.Logf("through the restart and after: %s", strings.Join(seen, " "))
	dials := 0
	for _, kind := range seen {
		switch kind {
		case "events":
			t.Fatalf("the client dialled events through a restart: %s", strings.Join(seen, " "))
		case "websocket":
			dials++
		}
	}
	if dials < 3 {
		t.Fatalf("%d WebSocket dials through the restart and after, want 2 refused at least: %s", dials, strings.Join(seen, " "))
	}
	st := bob.post("Bob, after the restart")
	p.waitUntil("bob's post arrives live", 20*time.Second, statusIn("feed", st.Message))
}

// When the connection drops and the redials are refused (the server up but
// taking no streams), the page asks GET /me whether the session is still
// there on the first refused redial, as docs/API.md says, not only on the
// fourth: someone whose session ended meanwhile (a password changed on
// another device) is told so at once, not left on "Reconnecting".
func TestBrowserStreamAsksSessionOnFirstFailedRedial(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice := in.signUp(t, "alice")
	proxy := newOutageProxy(t, in.srv.URL)

	br := newBrowser(t)
	p := br.signedInTab(t, proxy.srv.URL, "alice")
	p.waitTransport("websocket", 20*time.Second)

	m := proxy.mark()
	proxy.cut(outageRefuseStreams)
	alice.must(http.StatusNoContent, "PUT", "/api/v1/me/password", map[string]string{"current": "password-alice", "new": "password-alice-2"}, nil)
	p.waitUntil("signed out", 30*time.Second, `document.querySelector('[data-testid="me"]') ? 'still signed in' : ''`)
	seen := proxy.since(m)
	t.Logf("after the drop: %s", strings.Join(seen, " "))
	dials := 0
	for _, kind := range seen {
		switch kind {
		case "websocket", "events":
			dials++
		case "me":
			if dials != 1 {
				t.Fatalf("the page first asked /me after %d refused redials, want 1: %s", dials, strings.Join(seen, " "))
			}
			return
		}
	}
	t.Fatalf("the page never asked /me: %s", strings.Join(seen, " "))
}
