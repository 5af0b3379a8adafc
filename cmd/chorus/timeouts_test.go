package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"

	"github.com/coder/websocket"
)

// closedByServer reads c until the server closes it, failing if it is
// still open after a generous deadline.
func closedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the connection is still open", what)
	}
}

func TestIdleKeepAliveIsClosed(t *testing.T) {
	base, _ := start(t, nil, "-idle-timeout", "300ms")
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: chorus\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusOK || res.Close {
		t.Fatalf("keep-alive request: %v %v", res, err)
	}
	res.Body.Close()
	closedByServer(t, c, "an idle keep-alive")
}

func TestTrickledBodyIsCut(t *testing.T) {
	base, _ := start(t, nil, "-read-timeout", "300ms")
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /api/v1/users HTTP/1.1\r\nHost: chorus\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"login\":")
	closedByServer(t, c, "a request whose body never ends")
}

func TestSlowHeadersAreCut(t *testing.T) {
	base, _ := start(t, nil, "-read-header-timeout", "300ms")
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: chorus\r\n")
	closedByServer(t, c, "a request whose headers never end")
}

func TestStreamOutlivesHTTPTimeouts(t *testing.T) {
	// The sign-up hashes a password, which on a busy machine may take
	// longer than 1 s: it goes through an instance with the usual timeouts,
	// beside the one under test, on the same Redis.
	env := map[string]string{"REDIS_URL": redistest.URL(t), "CHORUS_KEY_PREFIX": redistest.Prefix()}
	signUpBase, _ := start(t, env)
	base, _ := start(t, env, "-read-timeout", "1s", "-write-timeout", "1s", "-idle-timeout", "1s", "-request-timeout", "500ms")
	status, out := post(t, signUpBase+"/api/v1/users", `{"login":"streamer","name":"S","password":"kettle-drum-41"}`)
	if status != http.StatusCreated {
		t.Fatalf("sign up: %d %v", status, out)
	}
	token, _ := out["token"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/v1/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, ready, err := ws.Read(ctx); err != nil || !strings.Contains(string(ready), `"ready"`) {
		t.Fatalf("ready: %s %v", ready, err)
	}
	time.Sleep(3 * time.Second) // three times every HTTP timeout
	// A post is a plain request, under the 1 s timeouts: on a busy machine
	// one may be cut, and is sent again. The stream must see one.
	posted := false
	for try := 0; try < 5 && !posted; try++ {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/statuses", strings.NewReader(`{"message":"still here"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Logf("post, try %d: %v", try, err)
			continue
		}
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("post: %d", res.StatusCode)
		}
		posted = true
	}
	if !posted {
		t.Fatal("no post got through")
	}
	for {
		_, frame, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("after the HTTP timeouts the stream ended: %v", err)
		}
		if strings.Contains(string(frame), "still here") {
			return
		}
	}
}

func TestReadyzAnswersWithinItsBoundWhileRedisStalls(t *testing.T) {
	srv := redistest.Start(t)
	base, _ := start(t, map[string]string{"REDIS_URL": srv.URL, "CHORUS_KEY_PREFIX": redistest.Prefix()})
	srv.Pause(t)
	defer srv.Resume()
	// /readyz gives Redis 2 s; the client's own timeouts are longer.
	client := &http.Client{Timeout: 4 * time.Second}
	res, err := client.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("readyz while Redis stalls: %v (it should answer 503 after 2 s)", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz while Redis stalls: %d, want 503", res.StatusCode)
	}
}

// Every API request has a deadline that its Redis calls honour: while Redis
// stalls, a read answers 503 timeout past -request-timeout, not after the
// stall or the Redis client's retries, and the metric counts it.
func TestRequestsAnswerPastTheirDeadlineWhileRedisStalls(t *testing.T) {
	srv := redistest.Start(t)
	base, _ := start(t, map[string]string{"REDIS_URL": srv.URL, "CHORUS_KEY_PREFIX": redistest.Prefix()}, "-request-timeout", "1s")
	token := "a-token-whose-check-waits-on-redis"
	srv.Pause(t)
	defer srv.Resume()
	// The client's bound is generous: without the deadline, the Redis
	// client's read timeout (3 s) and retries take 12 s and more.
	client := &http.Client{Timeout: 8 * time.Second}
	for _, req := range []struct{ path, token string }{
		{"/api/v1/users/stalled", ""},
		{"/api/v1/timelines/global", ""},
		{"/api/v1/me", token},
	} {
		r, err := http.NewRequest("GET", base+req.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if req.token != "" {
			r.Header.Set("Authorization", "Bearer "+req.token)
		}
		res, err := client.Do(r)
		if err != nil {
			t.Fatalf("GET %s while Redis stalls: %v (it should answer 503 after 1 s)", req.path, err)
		}
		var body struct{ Error struct{ Code string } }
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || body.Error.Code != "timeout" {
			t.Errorf("GET %s while Redis stalls: %d %q, want 503 timeout", req.path, res.StatusCode, body.Error.Code)
		}
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if want := `chorus_rate_limited_total{limit="request_timeout"} 3`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics does not say %s", want)
	}
}

func TestUnworkableRedisFailsStart(t *testing.T) {
	srv := redistest.Start(t)
	addr := strings.TrimPrefix(srv.URL, "redis://")
	rdb := redistest.ClientOf(t, srv.URL)
	if err := rdb.ConfigSet(context.Background(), "requirepass", "right-password").Err(); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, url, want string }{
		{"wrong password", "redis://:wrong-password@" + addr, "credentials"},
		{"no password", "redis://" + addr, "credentials"},
		{"no such database", "redis://:right-password@" + addr + "/99", "no such database"},
		{"TLS against plain Redis", "rediss://:right-password@" + addr, "does not speak TLS"},
	}
	if _, err := net.LookupHost("no-such-host.invalid"); isNotFound(err) {
		cases = append(cases, struct{ name, url, want string }{"unknown host", "redis://no-such-host.invalid:6379", "does not exist"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			logs := &testio.Buffer{}
			err := run(ctx, []string{"-addr", "127.0.0.1:0", "-redis-url", c.url}, func(string) string { return "" }, io.Discard, logs, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("run = %v, want an error saying %q", err, c.want)
			}
			if ctx.Err() != nil {
				t.Fatal("run waited for a Redis that can never answer")
			}
		})
	}
	// A Redis that is merely down is waited for, not refused.
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	done := make(chan error, 1)
	down := redistest.Start(t)
	down.Stop()
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-redis-url", down.URL}, func(string) string { return "" }, io.Discard, &testio.Buffer{}, listening)
	}()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("a Redis that is down stopped the start: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("server did not start while Redis is down")
	}
	cancel()
	<-done
}

// isNotFound reports whether this machine's resolver says plainly that a
// host does not exist (rather than failing to ask).
func isNotFound(err error) bool {
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

func TestConnectionsCappedBelowFileLimit(t *testing.T) {
	base, _ := start(t, nil, "-max-connections", "2")
	addr := strings.TrimPrefix(base, "http://")
	// Two connections whose requests are under way (their headers not
	// all sent): unlike idle keep-alives, which give way while connections
	// run short, they hold their slots.
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /healthz HTTP/1.1\r\n")
		held = append(held, c)
	}
	third, err := net.Dial("tcp", addr) // the kernel's backlog takes it
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	io.WriteString(third, "GET /healthz HTTP/1.1\r\nHost: chorus\r\n\r\n")
	third.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	br := bufio.NewReader(third)
	if _, err := br.Peek(1); err == nil {
		t.Fatal("a third connection was served while two are held and the cap is 2")
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the third connection once a slot was free: %v %v", res, err)
	}
}

// keepAlive opens a connection to addr and makes one request on it,
// leaving it open and idle, as a keep-alive; it returns the answer, nil
// when there was none.
func keepAlive(t *testing.T, addr string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: chorus\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, nil
	}
	res.Body.Close()
	return c, res
}

// metricsOf reads base's /metrics, on a connection of its own, once it is
// let in, and says how many tries were refused first.
func metricsOf(t *testing.T, base string) (metrics string, refused int) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	testio.Eventually(t, 10*time.Second, func() string {
		res, err := client.Get(base + "/metrics")
		if err != nil {
			refused++
			return "GET /metrics: " + err.Error()
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		metrics = string(raw)
		return ""
	})
	return metrics, refused
}

// One client address holds at most -max-connections-per-address: a
// connection past it is closed at once, unanswered. A trusted proxy, which
// carries many clients, is exempt.
func TestConnectionsPerAddressCapped(t *testing.T) {
	base, _ := start(t, nil, "-max-connections-per-address", "3")
	addr := strings.TrimPrefix(base, "http://")
	var held []net.Conn
	for i := range 3 {
		c, res := keepAlive(t, addr)
		if res == nil {
			t.Fatalf("connection %d of 3 was not answered", i+1)
		}
		held = append(held, c)
	}
	if _, res := keepAlive(t, addr); res != nil {
		t.Fatal("a fourth connection from one address was answered; the cap is 3")
	}
	// Once the server has seen a connection close, /metrics gets in.
	held[0].Close()
	m, refused := metricsOf(t, base)
	if want := fmt.Sprintf(`chorus_rate_limited_total{limit="address_connections"} %d`, 1+refused); !strings.Contains(m, want) {
		t.Errorf("/metrics does not say %s:\n%s", want, grepLines(m, "address_connections"))
	}

	proxied, _ := start(t, nil, "-max-connections-per-address", "3", "-trusted-proxies", "127.0.0.0/8")
	for i := range 5 {
		if _, res := keepAlive(t, strings.TrimPrefix(proxied, "http://")); res == nil {
			t.Fatalf("connection %d from a trusted proxy was not answered", i+1)
		}
	}
}

// While connections run short, idle keep-alives give way: a client that
// holds every slot with idle connections, under a long -idle-timeout,
// keeps a new client waiting no longer than it takes to close them. Once
// connections are free again, keep-alives come back.
func TestIdleKeepAlivesGiveWayWhenConnectionsRunShort(t *testing.T) {
	const slots = 8
	base, _ := start(t, nil, "-max-connections", strconv.Itoa(slots), "-idle-timeout", "10m", "-max-connections-per-address", "0")
	addr := strings.TrimPrefix(base, "http://")
	var held []net.Conn
	for range slots {
		c, _ := keepAlive(t, addr)
		held = append(held, c)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("a new client while one holds %d idle keep-alives: %v", slots, err)
	}
	res.Body.Close()
	// Which of them were idle when keep-alives went off depends on the
	// scheduling; some were, and the server closed them.
	testio.Eventually(t, 10*time.Second, func() string {
		for _, c := range held {
			c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); err == io.EOF {
				return ""
			}
		}
		return "the server closed none of the idle keep-alives"
	})
	for _, c := range held {
		c.Close()
	}
	testio.Eventually(t, 10*time.Second, func() string {
		c, res := keepAlive(t, addr)
		defer c.Close()
		switch {
		case res == nil:
			return "a request was not answered"
		case res.Close:
			return "keep-alives are still off: the answer says Connection: close"
		}
		return ""
	})
	if m, _ := metricsOf(t, base); strings.Contains(m, "chorus_keepalives_off_total 0") || !strings.Contains(m, "chorus_keepalives_off_total") {
		t.Errorf("/metrics does not count keep-alives turned off:\n%s", grepLines(m, "keepalives"))
	}
}

// grepLines is the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
