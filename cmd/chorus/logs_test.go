package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/coder/websocket"
)

// logLine is one line of the JSON log.
type logLine map[string]any

// logLines reads the JSON log written so far.
func logLines(t *testing.T, logs *testio.Buffer) []logLine {
	t.Helper()
	var lines []logLine
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		lines = append(lines, l)
	}
	return lines
}

// awaitLog waits for the first log line with message msg for which match
// holds, and returns it.
func awaitLog(t *testing.T, logs *testio.Buffer, msg string, match func(logLine) bool) logLine {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, l := range logLines(t, logs) {
			if l["msg"] == msg && match(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q line as wanted within 10 s in:\n%s", msg, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func anyLine(logLine) bool { return true }

// number is a numeric field of a JSON log line; -1 when missing.
func (l logLine) number(key string) float64 {
	if v, ok := l[key].(float64); ok {
		return v
	}
	return -1
}

// signUp creates a user through the API and returns its id and token.
func signUp(t *testing.T, base, login string) (int64, string) {
	t.Helper()
	status, out := post(t, base+"/api/v1/users", `{"login":"`+login+`","name":"N","password":"kettle-drum-41"}`)
	user, _ := out["user"].(map[string]any)
	token, _ := out["token"].(string)
	id, _ := user["id"].(float64)
	if status != http.StatusCreated || token == "" || id == 0 {
		t.Fatalf("sign up %s: %d %v", login, status, out)
	}
	return int64(id), token
}

// do sends a request with the given headers, in pairs, and returns the
// status.
func do(t *testing.T, method, url string, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// dialStream opens a stream as the holder of token, reads its ready frame,
// and goes on reading, as a browser does, so that a close from the server
// is answered at once.
func dialStream(t *testing.T, base, token string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/v1/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	if _, ready, err := ws.Read(ctx); err != nil || !strings.Contains(string(ready), `"ready"`) {
		t.Fatalf("ready: %s %v", ready, err)
	}
	go func() {
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return ws
}

func TestOpenURL(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"0.0.0.0:8080", "http://localhost:8080"},
		{"[::]:8080", "http://localhost:8080"},
		{"127.0.0.1:9000", "http://127.0.0.1:9000"},
		{"[::1]:9000", "http://[::1]:9000"},
		{"192.0.2.7:80", "http://192.0.2.7:80"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := openURL(addr); got != c.want {
			t.Errorf("openURL(%s) = %s, want %s", c.addr, got, c.want)
		}
	}
}

// The start-up line says where to open the server and which Redis it uses:
// "embedded" for the embedded store.
func TestStartupLineEmbedded(t *testing.T) {
	base, logs := start(t, nil)
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="chorus listening"`) {
			line = l
		}
	}
	for _, want := range []string{" open=" + base + " ", " redis=embedded "} {
		if !strings.Contains(line, want) {
			t.Errorf("start-up line %q does not say %q", line, want)
		}
	}
}

// On Redis, the start-up line names its address, never its password.
func TestStartupLineRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redistest.ClientOf(t, srv.URL)
	const password = "s3cret-in-the-url"
	if err := rdb.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "redis://")
	base, logs := start(t, map[string]string{"REDIS_URL": "redis://:" + password + "@" + addr + "/0"}, "-log-format", "json")
	line := awaitLog(t, logs, "chorus listening", anyLine)
	if line["redis"] != addr || line["open"] != base {
		t.Errorf("start-up line: redis=%v open=%v, want %s and %s", line["redis"], line["open"], addr, base)
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log shows the Redis password:\n%s", logs)
	}
}

// A request's line names its client (through a trusted proxy) and, when it
// is signed in, its user.
func TestRequestLogClientAndUser(t *testing.T) {
	base, logs := start(t, map[string]string{"REDIS_URL": redistest.URL(t), "CHORUS_KEY_PREFIX": redistest.Prefix()},
		"-log-format", "json", "-trusted-proxies", "127.0.0.1")
	uid, token := signUp(t, base, "logged")
	// The sign-up's own line names the user it made.
	if line := awaitLog(t, logs, "request", func(l logLine) bool { return l["path"] == "/api/v1/users" && l["method"] == "POST" }); line.number("uid") != float64(uid) {
		t.Errorf("sign-up line %v: want uid %d", line, uid)
	}
	cases := []struct {
		name, path string
		header     []string
		client     string
		uid        int64 // 0: none in the line
	}{
		{"signed in", "/api/v1/me", []string{"Authorization", "Bearer " + token}, "127.0.0.1", uid},
		{"through the proxy", "/api/v1/me", []string{"Authorization", "Bearer " + token, "X-Forwarded-For", "203.0.113.7"}, "203.0.113.7", uid},
		{"IPv6 client, whole", "/api/v1/timelines/global", []string{"X-Forwarded-For", "2001:db8::7"}, "2001:db8::7", 0},
		{"anonymous", "/api/v1/timelines/global", nil, "127.0.0.1", 0},
		{"bad token", "/api/v1/me", []string{"Authorization", "Bearer nope"}, "127.0.0.1", 0},
		{"the page", "/", nil, "127.0.0.1", 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("log-test-%d", i)
			do(t, "GET", base+c.path, append(c.header, "X-Request-Id", id)...)
			line := awaitLog(t, logs, "request", func(l logLine) bool { return l["request_id"] == id })
			if line["client"] != c.client || line["path"] != c.path {
				t.Errorf("line %v: want client %s and path %s", line, c.client, c.path)
			}
			if got := line.number("uid"); c.uid == 0 && got != -1 || c.uid != 0 && got != float64(c.uid) {
				t.Errorf("line %v: uid %v, want %d (0: none)", line, line["uid"], c.uid)
			}
		})
	}
}

// A stream's closing line says who it was, how it closed, why, and after how
// long.
func TestStreamCloseLog(t *testing.T) {
	base, logs := start(t, map[string]string{"REDIS_URL": redistest.URL(t), "CHORUS_KEY_PREFIX": redistest.Prefix()}, "-log-format", "json")
	uid, token := signUp(t, base, "closer")

	ws := dialStream(t, base, token)
	time.Sleep(50 * time.Millisecond)
	ws.Close(websocket.StatusNormalClosure, "bye")
	line := awaitLog(t, logs, "stream closed", anyLine)
	if line.number("uid") != float64(uid) || line.number("code") != 1000 || line["reason"] != "bye" || line["by"] != "client" ||
		line.number("duration") < float64(50*time.Millisecond) {
		t.Errorf("closed by the client: %v", line)
	}

	ws = dialStream(t, base, token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws.Write(ctx, websocket.MessageText, []byte(strings.Repeat("x", 70_000)))
	line = awaitLog(t, logs, "stream closed", func(l logLine) bool { return l.number("code") == 1009 })
	if line.number("uid") != float64(uid) || line["by"] != "server" || line["reason"] != "frame over the size limit" {
		t.Errorf("closed by the server for a frame over 64 KiB: %v", line)
	}

	dialStream(t, base, token) // the stream the sign-out ends
	if status := do(t, "DELETE", base+"/api/v1/sessions/current", "Authorization", "Bearer "+token); status != http.StatusNoContent {
		t.Fatalf("sign out: %d", status)
	}
	line = awaitLog(t, logs, "stream closed", func(l logLine) bool { return l.number("code") == 1008 })
	if line.number("uid") != float64(uid) || line["by"] != "server" || line["reason"] != "signed out" {
		t.Errorf("closed by the server on sign-out: %v", line)
	}
}

// Shutting down with requests done and streams open is routine: it logs no
// warning or error, and each stream's close says the server is going away.
func TestCleanShutdownLogsNoWarnings(t *testing.T) {
	base, logs, stop := startStoppable(t, map[string]string{"REDIS_URL": redistest.URL(t), "CHORUS_KEY_PREFIX": redistest.Prefix()}, "-log-format", "json")
	uid, token := signUp(t, base, "stayer")
	dialStream(t, base, token)
	// A sign-in (a bcrypt comparison) still running when shutdown begins
	// is let finish.
	signedIn := make(chan int, 1)
	go func() {
		status, _ := post(t, base+"/api/v1/sessions", `{"login":"stayer","password":"kettle-drum-41"}`)
		signedIn <- status
	}()
	time.Sleep(20 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if status := <-signedIn; status != http.StatusOK {
		t.Errorf("sign-in under way at shutdown: %d, want 200", status)
	}
	lines := logLines(t, logs)
	for _, l := range lines {
		if l["level"] != "INFO" {
			t.Errorf("a clean shutdown logged %v", l)
		}
		// A fresh start has no lease yet, which is no lease lost.
		if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "connections registered again") {
			t.Errorf("a fresh start logged %v", l)
		}
	}
	line := awaitLog(t, logs, "stream closed", anyLine)
	if line.number("uid") != float64(uid) || line.number("code") != protocol.CloseGoingAway || line["reason"] != protocol.ReasonDraining || line["by"] != "server" {
		t.Errorf("stream closed at shutdown: %v", line)
	}
	if last := lines[len(lines)-1]; last["msg"] != "stopped" {
		t.Errorf("last line %v, want stopped", last)
	}
}
