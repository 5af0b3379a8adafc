// Package deploy_test proves the deployment files of Chorus on this machine,
// without Docker: the Dockerfile's build recipe (a static binary that serves
// the embedded client, and the health-check binary), and deploy/nginx.conf,
// checked by nginx and run in front of two real instances on one Redis.
//
// Nothing here skips: a missing nginx or redis-server fails the test
// (scripts/test.sh installs both).
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"chorus/internal/testio"
)

// binDir holds the binaries built once for every test of the package.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chorus-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// moduleRoot returns the directory of chorus's go.mod.
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		tb.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		tb.Fatal("go env GOMOD: not inside the chorus module")
	}
	return filepath.Dir(gomod)
}

// readRepoFile returns a file of the repository, by its path from the root.
func readRepoFile(tb testing.TB, name string) string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(moduleRoot(tb), filepath.FromSlash(name)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(raw)
}

// process is a child process that dies with the test.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *testio.Buffer
	done chan struct{} // closed once the process has exited
	err  error         // its exit, valid once done is closed
}

// startProcess starts a command with the given environment; when the test
// ends it gets SIGTERM, then SIGKILL if it has not exited within grace.
func startProcess(t *testing.T, name string, env []string, grace time.Duration, path string, args ...string) *process {
	t.Helper()
	p := &process{name: name, out: &testio.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Dies with the test binary, however that ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			t.Errorf("%s did not stop within %s of SIGTERM; killed", name, grace)
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.out)
		}
	})
	return p
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// baseEnv is the test's environment without any Chorus setting, so that a
// child sees only what the test gives it.
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CHORUS_") || strings.HasPrefix(kv, "REDIS_URL=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// startChorus runs the chorus binary on a free loopback port, configured
// like the image (through CHORUS_ADDR and CHORUS_LOG_FORMAT) plus env and
// args, and returns its base URL once it listens.
func startChorus(t *testing.T, name string, env []string, args ...string) string {
	t.Helper()
	base, _ := startChorusProcess(t, name, env, args...)
	return base
}

// startChorusProcess is startChorus, with the process.
func startChorusProcess(t *testing.T, name string, env []string, args ...string) (string, *process) {
	t.Helper()
	env = append(env[:len(env):len(env)], "CHORUS_ADDR=127.0.0.1:0", "CHORUS_LOG_FORMAT=json")
	p := startProcess(t, name, env, 15*time.Second, binary(t, "chorus"), args...)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if addr := listeningAddr(p.out.String()); addr != "" {
			return "http://" + addr, p
		}
		if p.exited() {
			t.Fatalf("%s exited: %v\n%s", name, p.err, p.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not say where it listens within 10 s:\n%s", name, p.out)
	return "", nil
}

// listeningAddr finds the address in chorus's "chorus listening" log line.
func listeningAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "chorus listening" {
			return line.Addr
		}
	}
	return ""
}

// freePort returns a loopback TCP port nobody listens on right now.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP polls url until it answers 200, for at most timeout.
func waitHTTP(t *testing.T, url string, timeout time.Duration, p *process) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		res, err := client.Get(url)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
			last = res.Status
		} else {
			last = err.Error()
		}
		if p != nil && p.exited() {
			t.Fatalf("%s exited: %v\n%s", p.name, p.err, p.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("GET %s: no 200 within %s (last: %s)", url, timeout, last)
}

// apiCall sends a JSON request and decodes the JSON answer into out (when
// not nil); it fails the test unless the status is want.
func apiCall(t *testing.T, method, url string, header http.Header, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d: %s", method, url, res.Status, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %v: %s", method, url, err, raw)
		}
	}
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

func itoa(n int) string { return strconv.Itoa(n) }
