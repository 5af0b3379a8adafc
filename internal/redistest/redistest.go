// Package redistest gives tests a real redis-server.
//
// Tests use the server named by CHORUS_TEST_REDIS_URL (the test script starts
// one on a free port); without it, the first test to ask starts its own from
// redis-server on PATH. A test that cannot have a server fails: it never
// skips.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	sharedOnce sync.Once
	sharedURL  string
	sharedErr  error
)

// URL returns the address of the shared test server.
func URL(tb testing.TB) string {
	tb.Helper()
	sharedOnce.Do(func() {
		if u := os.Getenv("CHORUS_TEST_REDIS_URL"); u != "" {
			sharedURL = u
			return
		}
		var srv *Server
		srv, sharedErr = start()
		if sharedErr == nil {
			sharedURL = srv.URL
		}
	})
	if sharedErr != nil {
		tb.Fatalf("redistest: no redis-server (run the tests with scripts/test.sh): %v", sharedErr)
	}
	return sharedURL
}

// Client returns a client of the shared server and a key prefix unique to
// the test; the client is closed when the test ends.
func Client(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	return ClientOf(tb, URL(tb)), Prefix()
}

// ClientOf returns a client of the server at url, closed when the test ends.
func ClientOf(tb testing.TB, url string) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		tb.Fatalf("redistest: ping %s: %v", url, err)
	}
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Prefix returns a key prefix no other test uses.
func Prefix() string { return "test:" + uuid.NewString()[:8] + ":" }

// Server is a redis-server process of a test's own, for tests that stop and
// restart Redis.
type Server struct {
	URL  string
	Addr string // host:port
	Port int
	cmd  *exec.Cmd
}

// Start starts a redis-server of the test's own, stopped when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	srv, err := start()
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(srv.Stop)
	return srv
}

// StartOnPort starts a redis-server on a given port (to restart one where
// clients expect it).
func StartOnPort(tb testing.TB, port int) *Server {
	tb.Helper()
	srv, err := startOn(port)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(srv.Stop)
	return srv
}

// Pause stops the server's process (SIGSTOP): it holds its connections and
// answers nothing, as a stalled Redis does, until Resume.
func (s *Server) Pause(tb testing.TB) {
	tb.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("redistest: pause: %v", err)
	}
}

// Resume lets a paused server run again.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Stop kills the server.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// start starts a redis-server on a free port with extra arguments.
func start(extra ...string) (*Server, error) {
	pick := freePort
	if slices.Contains(extra, "--cluster-enabled") {
		pick = freeClusterPort
	}
	var lastErr error
	for range 5 {
		port, err := pick()
		if err != nil {
			return nil, err
		}
		srv, err := startOn(port, extra...)
		if err == nil {
			return srv, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOn(port int, extra ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not on PATH: %w", err)
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"}
	cmd := exec.Command(bin, append(args, extra...)...)
	// The server dies with the test binary, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { // drain the log so the server never blocks on it
		sc := bufio.NewScanner(out)
		for sc.Scan() {
		}
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pid, err := serverPID(addr); err == nil {
			if pid == cmd.Process.Pid {
				return &Server{URL: "redis://" + addr, Addr: addr, Port: port, cmd: cmd}, nil
			}
			// Another server took the port first: ours could not listen.
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("redis-server on %s did not start", addr)
}

// serverPID is the process id of the Redis server listening on addr.
func serverPID(addr string) (int, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("no process_id in INFO")
}

// freeClusterPort is a free port for a cluster node, whose bus listens
// 10,000 above it: both below the kernel's ephemeral ports, which the
// connections of a busy machine hold by thousands (and which reach past
// 55,535, where a node's bus port would pass 65,535), and both free now.
func freeClusterPort() (int, error) {
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const first, bus = 10000, 10000
	if low-bus-first < 1000 {
		return freePort() // no room below: the kernel's pick, retried on failure
	}
	for range 100 {
		port := first + rand.IntN(low-bus-first)
		if free(port) && free(port+bus) {
			return port, nil
		}
	}
	return 0, errors.New("no free port for a cluster node and its bus")
}

// free reports whether port can be listened on now.
func free(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	addr := l.Addr().String()
	_, p, _ := strings.Cut(addr, ":")
	return strconv.Atoi(p)
}
