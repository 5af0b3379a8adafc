package deploy_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/coder/websocket"
)

// nginxBinary returns the path of the local nginx, or fails the test.
func nginxBinary(tb testing.TB) string {
	tb.Helper()
	if path, err := exec.LookPath("nginx"); err == nil {
		return path
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	tb.Fatal("nginx is not installed: apt-get install nginx-light (scripts/test.sh installs it)")
	return ""
}

// localNginx is deploy/nginx.conf adapted to run here.
type localNginx struct {
	bin, dir, conf string
	port           int
}

// adaptNginx writes deploy/nginx.conf into a temporary directory, rewritten
// to listen on 127.0.0.1:port, to proxy to upstreams (host:port) instead of
// chorus1:8080 and chorus2:8080, and to keep its pid, logs and temp files in
// that directory instead of /var and /run. Every line it rewrites must be
// there exactly once, so the file cannot drift away from what is tested.
func adaptNginx(t *testing.T, port int, upstreams [2]string) *localNginx {
	t.Helper()
	n := &localNginx{bin: nginxBinary(t), dir: t.TempDir(), port: port}
	if strings.ContainsAny(n.dir, `"\$ `) {
		t.Fatalf("temporary directory %q cannot go into nginx.conf", n.dir)
	}
	in := func(name string) string { return `"` + filepath.Join(n.dir, name) + `"` }

	// The temp paths of every module built in, else nginx creates them
	// under /var.
	version, err := exec.Command(n.bin, "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -V: %v\n%s", err, version)
	}
	var temps strings.Builder
	for _, kind := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		if kind != "client_body" && strings.Contains(string(version), "--without-http_"+kind+"_module") {
			continue
		}
		fmt.Fprintf(&temps, "    %s_temp_path %s;\n", kind, in(kind+"_temp"))
	}

	conf := readRepoFile(t, "deploy/nginx.conf")
	rewrites := []struct{ pattern, with string }{
		{`(?m)^pid\s+[^;]+;`, "pid " + in("nginx.pid") + ";"},
		{`(?m)^error_log\s+[^;]+;`, "error_log " + in("error.log") + " warn;"},
		{`(?m)^[ \t]*access_log\s+\S+\s+chorus;`, "    access_log " + in("access.log") + " chorus;"},
		{`(?m)^[ \t]*listen\s+8080;`, fmt.Sprintf("        listen 127.0.0.1:%d;", port)},
		{`(?m)^[ \t]*server\s+chorus1:8080;`, "        server " + upstreams[0] + ";"},
		{`(?m)^[ \t]*server\s+chorus2:8080;`, "        server " + upstreams[1] + ";"},
		{`(?m)^http\s*\{[ \t]*$`, "http {\n" + temps.String()},
	}
	for _, rw := range rewrites {
		re := regexp.MustCompile(rw.pattern)
		if got := len(re.FindAllStringIndex(conf, -1)); got != 1 {
			t.Fatalf("deploy/nginx.conf: %d lines match %s, want exactly 1 (the test rewrites it)", got, rw.pattern)
		}
		conf = re.ReplaceAllLiteralString(conf, rw.with)
	}
	n.conf = filepath.Join(n.dir, "nginx.conf")
	if err := os.WriteFile(n.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// args are nginx's command-line arguments for this config, then extra ones.
func (n *localNginx) args(extra ...string) []string {
	return append([]string{"-p", n.dir + "/", "-c", n.conf}, extra...)
}

// start runs nginx in the foreground, as one process that dies with the
// test, and waits until it proxies /healthz.
func (n *localNginx) start(t *testing.T) string {
	t.Helper()
	p := startProcess(t, "nginx", os.Environ(), 10*time.Second, n.bin,
		n.args("-g", "daemon off; master_process off;")...)
	base := fmt.Sprintf("http://127.0.0.1:%d", n.port)
	waitHTTP(t, base+"/healthz", 10*time.Second, p)
	t.Cleanup(func() {
		if t.Failed() {
			errs, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
			t.Logf("nginx error.log:\n%s", errs)
		}
	})
	return base
}

func (n *localNginx) accessLog(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(n.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestNginxConfig(t *testing.T) {
	t.Parallel()
	n := adaptNginx(t, freePort(t), [2]string{"127.0.0.1:1", "127.0.0.1:2"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, n.bin, n.args("-t")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "test is successful") {
		t.Fatalf("nginx -t on deploy/nginx.conf: %v\n%s", err, out)
	}

	// What a long-lived stream needs, which the live test below is too
	// short to show: the stream's location must not time out in 60 s.
	conf := readRepoFile(t, "deploy/nginx.conf")
	stream := regexp.MustCompile(`(?s)location = /api/v1/stream \{(.*?)\}`).FindStringSubmatch(conf)
	if stream == nil {
		t.Fatal("deploy/nginx.conf: no location = /api/v1/stream")
	}
	m := regexp.MustCompile(`proxy_read_timeout\s+(\w+);`).FindStringSubmatch(stream[1])
	if m == nil {
		t.Fatal("deploy/nginx.conf: the stream's location sets no proxy_read_timeout")
	}
	if d, err := nginxDuration(m[1]); err != nil || d < 10*time.Minute {
		t.Fatalf("deploy/nginx.conf: stream proxy_read_timeout %s, want at least 10m (%v)", m[1], err)
	}
	// The stream as Server-Sent Events: each event passed on as it comes,
	// whatever the instance says (it says X-Accel-Buffering: no too).
	if !regexp.MustCompile(`(?m)^\s*proxy_buffering\s+off;`).MatchString(stream[1]) {
		t.Fatal("deploy/nginx.conf: the stream's location does not turn proxy_buffering off")
	}
}

// nginxDuration parses an nginx time ("3600", "60s", "1h").
func nginxDuration(s string) (time.Duration, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		s += "s"
	}
	return time.ParseDuration(s)
}

// TestComposeMatchesNginx checks that docker-compose.yml and
// deploy/nginx.conf name the same things: nginx's upstreams are compose
// services on the port Chorus listens on, and compose mounts the config.
func TestComposeMatchesNginx(t *testing.T) {
	t.Parallel()
	compose, conf := readRepoFile(t, "docker-compose.yml"), readRepoFile(t, "deploy/nginx.conf")
	service := func(name string) bool {
		return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `:`).MatchString(compose)
	}
	upstreams := regexp.MustCompile(`(?m)^\s*server\s+([\w-]+):(\d+);`).FindAllStringSubmatch(conf, -1)
	if len(upstreams) < 2 {
		t.Fatalf("deploy/nginx.conf: %d upstream servers, want at least 2", len(upstreams))
	}
	for _, u := range upstreams {
		if !service(u[1]) {
			t.Errorf("nginx upstream %s:%s is not a service of docker-compose.yml", u[1], u[2])
		}
		if u[2] != "8080" {
			t.Errorf("nginx upstream %s:%s: Chorus listens on 8080 in the image", u[1], u[2])
		}
	}
	for _, s := range []string{"redis", "nginx"} {
		if !service(s) {
			t.Errorf("docker-compose.yml has no service %s", s)
		}
	}
	for _, want := range []string{
		"./deploy/nginx.conf:/etc/nginx/nginx.conf:ro",
		`"8080:8080"`,
		"REDIS_URL: redis://redis:6379/0",
		"--appendonly",
		"condition: service_healthy",
	} {
		if !strings.Contains(compose, want) {
			t.Errorf("docker-compose.yml does not contain %s", want)
		}
	}
}

// TestTwoInstancesBehindNginx runs two Chorus instances on one Redis behind
// deploy/nginx.conf: REST goes through nginx to both, a WebSocket upgrade
// passes through it, and a status posted on one instance reaches a follower
// connected to the other and the one connected through nginx.
func TestTwoInstancesBehindNginx(t *testing.T) {
	t.Parallel()
	prefix := "deploytest:" + rand.Text()[:10] + ":"
	redisURL := redistest.URL(t)
	rdb := redistest.ClientOf(t, redisURL)
	t.Cleanup(func() { // after the instances have stopped
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})
	env := baseEnv("REDIS_URL=" + redisURL)
	inst1 := startChorus(t, "chorus1", env, "-key-prefix", prefix)
	inst2 := startChorus(t, "chorus2", env, "-key-prefix", prefix)
	n := adaptNginx(t, freePort(t), [2]string{
		strings.TrimPrefix(inst1, "http://"), strings.TrimPrefix(inst2, "http://"),
	})
	site := n.start(t)

	// Both instances answer through nginx, and both reach Redis.
	for range 4 {
		apiCall(t, "GET", site+"/readyz", nil, nil, http.StatusOK, nil)
	}
	// Metrics stay private to whoever scrapes each instance.
	res, err := http.Get(site + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /metrics through nginx: %d, want 404", res.StatusCode)
	}
	apiCall(t, "GET", inst1+"/metrics", nil, nil, http.StatusOK, nil)

	type session struct {
		User  struct{ Login string }
		Token string
	}
	var a, b session
	apiCall(t, "POST", site+"/api/v1/users", nil,
		map[string]string{"login": "alice", "name": "Alice", "password": "password-a"}, http.StatusCreated, &a)
	apiCall(t, "POST", site+"/api/v1/users", nil,
		map[string]string{"login": "bob", "name": "Bob", "password": "password-b"}, http.StatusCreated, &b)
	apiCall(t, "PUT", site+"/api/v1/following/"+a.User.Login, bearer(b.Token), nil, http.StatusOK, nil)

	// A browser's write: cookie and Origin. Chorus accepts it only if nginx
	// passed on the Host the browser used, port included.
	browser := http.Header{"Cookie": {"chorus_session=" + b.Token}, "Origin": {site}}
	apiCall(t, "POST", site+"/api/v1/statuses", browser, map[string]string{"message": "through nginx"}, http.StatusCreated, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	direct := dialStream(ctx, t, "ws"+strings.TrimPrefix(inst2, "http")+"/api/v1/stream", bearer(b.Token))
	proxied := dialStream(ctx, t, "ws"+strings.TrimPrefix(site, "http")+"/api/v1/stream",
		http.Header{"Authorization": {"Bearer " + b.Token}, "Origin": {site}})

	var posted struct{ Status struct{ ID int64 } }
	apiCall(t, "POST", inst1+"/api/v1/statuses", bearer(a.Token), map[string]string{"message": "hello from instance 1"}, http.StatusCreated, &posted)

	for name, c := range map[string]*websocket.Conn{"on instance 2": direct, "through nginx": proxied} {
		waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := awaitStatus(waitCtx, c, posted.Status.ID); err != nil {
			t.Errorf("B's stream %s: status %d: %v", name, posted.Status.ID, err)
		}
		cancel()
	}
	proxied.Close(websocket.StatusNormalClosure, "")
	direct.Close(websocket.StatusNormalClosure, "")

	// The same stream as Server-Sent Events through nginx: a post on
	// instance 1 comes as its event, at once.
	events := openEvents(ctx, t, site+"/api/v1/stream", http.Header{"Authorization": {"Bearer " + b.Token}, "Origin": {site}})
	apiCall(t, "POST", inst1+"/api/v1/statuses", bearer(a.Token), map[string]string{"message": "an event through nginx"}, http.StatusCreated, &posted)
	if err := awaitEvent(ctx, events, posted.Status.ID); err != nil {
		t.Errorf("B's event stream through nginx: status %d: %v", posted.Status.ID, err)
	}

	// nginx logs the upgrade once the stream has ended, a moment after.
	upgraded := regexp.MustCompile(`"GET /api/v1/stream HTTP/1.1" 101 `)
	deadline := time.Now().Add(5 * time.Second)
	logged := n.accessLog(t)
	for !upgraded.MatchString(logged) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		logged = n.accessLog(t)
	}
	if !upgraded.MatchString(logged) {
		t.Errorf("no WebSocket upgrade (101) in nginx's access log:\n%s", logged)
	}
	for _, inst := range []string{inst1, inst2} {
		if !strings.Contains(logged, "upstream="+strings.TrimPrefix(inst, "http://")) {
			t.Errorf("nginx sent nothing to %s; access log:\n%s", inst, logged)
		}
	}
}

// dialStream opens a stream and reads its ready frame.
func dialStream(ctx context.Context, t *testing.T, url string, header http.Header) *websocket.Conn {
	t.Helper()
	dialCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(dialCtx, url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		status := ""
		if res != nil {
			status = res.Status
		}
		t.Fatalf("dial %s: %v %s", url, err, status)
	}
	t.Cleanup(func() { c.CloseNow() })
	_, raw, err := c.Read(dialCtx)
	if err != nil {
		t.Fatalf("%s: no ready frame: %v", url, err)
	}
	var ready struct{ Type string }
	if err := json.Unmarshal(raw, &ready); err != nil || ready.Type != "ready" {
		t.Fatalf("%s: first frame %s, want ready", url, raw)
	}
	return c
}

// awaitStatus reads frames until the status with id arrives.
func awaitStatus(ctx context.Context, c *websocket.Conn, id int64) error {
	for {
		_, raw, err := c.Read(ctx)
		if err != nil {
			return err
		}
		var f struct {
			Type   string
			Status struct{ ID int64 }
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("frame is not JSON: %s", raw)
		}
		if f.Type == "status" && f.Status.ID == id {
			return nil
		}
	}
}

// openEvents opens the stream as Server-Sent Events and reads up to its
// ready frame.
func openEvents(ctx context.Context, t *testing.T, url string, header http.Header) *bufio.Scanner {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("events from %s: %v", url, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events from %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			if !strings.Contains(sc.Text(), `"type":"ready"`) {
				t.Fatalf("first event %s, want ready", sc.Text())
			}
			return sc
		}
	}
	t.Fatalf("events from %s ended before ready: %v", url, sc.Err())
	return nil
}

// awaitEvent reads events until the status with id comes, its id as the
// event's id.
func awaitEvent(ctx context.Context, sc *bufio.Scanner, id int64) error {
	want := "id: " + strconv.FormatInt(id, 10)
	for sc.Scan() {
		if sc.Text() == want {
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("the stream ended: %v", sc.Err())
}
