package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"chorus/internal/redistest"
)

// serverBin is the chorus server, built once for the package's tests.
var serverBin string

func TestMain(m *testing.M) {
	// The tool runs itself as workers; in tests, itself is this binary.
	if os.Getenv(workerEnv) == "1" {
		os.Exit(workerMain(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "chorus-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "chorus")
	build := exec.Command("go", "build", "-o", serverBin, "chorus/cmd/chorus")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build chorus:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServer runs the chorus binary on a free loopback port, on the test
// Redis when CHORUS_TEST_REDIS_URL is set (under a key prefix of its own),
// else on its embedded store. It returns the base URL and the pid; the
// server is stopped when the test ends.
func startServer(t *testing.T) (string, int) {
	t.Helper()
	args := []string{"-heartbeat-interval", "1s", "-online-window", "5s"}
	if u := os.Getenv("CHORUS_TEST_REDIS_URL"); u != "" {
		args = append(args, "-redis-url", u, "-key-prefix", "benchtest:"+newRunID()+":")
	}
	return startServerWith(t, args...)
}

// startServerWith runs the chorus binary on a free loopback port with args
// besides the address and the limits, as startServer does.
func startServerWith(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// A load test is one address signing many users up and posting fast:
	// the per-client limits a real site wants are off.
	args = append([]string{"-addr", addr, "-signup-limit", "off", "-signin-limit", "off", "-post-limit", "off", "-follow-limit", "off"}, args...)
	cmd := exec.Command(serverBin, args...)
	logs := &lockedWriter{w: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = io.Discard, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Error("server did not stop on SIGTERM")
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base, cmd.Process.Pid
			}
		}
		select {
		case <-exited:
			t.Fatalf("server exited at start:\n%s", logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not healthy after 15s:\n%s", logs)
		}
	}
}

// lockedWriter lets the server's output be written and read at once.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// benchRun runs the tool's core in process with args and fails the test if
// the run itself fails.
func benchRun(t *testing.T, args ...string) *Result {
	t.Helper()
	return measureRun(t, bench, args...)
}

// measureRun runs measure, bench or storm, in process with args and fails
// the test if the run itself fails.
func measureRun(t *testing.T, measure func(context.Context, config, string, *slog.Logger, io.Writer) (*Result, error), args ...string) *Result {
	t.Helper()
	cfg, err := parseConfig(args, io.Discard)
	if err != nil {
		t.Fatalf("parseConfig(%q): %v", args, err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	res, err := measure(ctx, cfg, exe, log, t.Output())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// checkClean asserts a run where every connection held and every post
// reached every follower exactly once.
func checkClean(t *testing.T, res *Result, conns, posts, followers int) {
	t.Helper()
	if p := res.Problems(); len(p) > 0 {
		t.Errorf("problems: %v", p)
	}
	c := res.Conns
	if c.Attempted != conns || c.Held != conns || c.Failed != 0 || c.Dropped != 0 || c.HeldAtEnd != conns {
		t.Errorf("conns = %+v, want %d attempted and held throughout", c, conns)
	}
	if res.Posts.Planned != posts || res.Posts.Sent != posts || res.Posts.Failed != 0 {
		t.Errorf("posts: planned %d, sent %d, failed %d (%s); want %d sent", res.Posts.Planned, res.Posts.Sent, res.Posts.Failed, res.Posts.FirstError, posts)
	}
	d := res.Deliveries
	want := posts * followers
	if d.Expected != want || d.Delivered != want || d.Lost != 0 || d.Duplicated != 0 || d.Unexpected != 0 || d.Early != 0 {
		t.Errorf("deliveries = %+v, want %d expected and delivered, none lost or duplicated", d, want)
	}
	l := res.Latency
	if l.Samples != want || l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 || l.P99 > l.Max {
		t.Errorf("latency = %+v, want %d ordered samples", l, want)
	}
	if got := res.Frames.ByType["ready"]; got != int64(conns) {
		t.Errorf("ready frames = %d, want %d", got, conns)
	}
	if got := res.Frames.ByType["status"]; got < int64(want) {
		t.Errorf("status frames = %d, want at least %d", got, want)
	}
	if (res.Frames.HeartbeatsSent == 0 && !res.SSE) || res.Frames.HeartbeatErrors != 0 {
		t.Errorf("heartbeats: %d sent, %d failed; want some, none failed", res.Frames.HeartbeatsSent, res.Frames.HeartbeatErrors)
	}
	if len(res.Memory) != 1 || res.Memory[0].BeforeKiB <= 0 || res.Memory[0].IdleKiB <= 0 || res.Memory[0].AfterKiB <= 0 {
		t.Errorf("server memory = %+v, want one process's RSS at three moments", res.Memory)
	}
	// The server has /metrics: its own counts agree with the client's. An
	// idle stream, a WebSocket or an event stream, holds no goroutine (the
	// server's poller waits for it); other goroutines of the server come
	// and go between the readings, so the figure is about none. The
	// goroutines kept idle for the next reads are left out (at most 64 an
	// instance, which at 20 streams would be three each); those reading a
	// heartbeat as idle is read are few.
	if m := res.MetricsPerConn; m == nil || m.Goroutines-m.Pooled < -0.5 || m.Goroutines-m.Pooled > 0.5 || m.Readers > 0.25 {
		t.Errorf("metrics per connection = %+v, want about no goroutine each", m)
	}
	if v, ok := counterGrowth(res.Metrics, "chorus_frames_dropped_total"); !ok || v != 0 {
		t.Errorf("server frames dropped = %v (reported %v), want 0", v, ok)
	}
	// The server's own account of the posts: every one it answered, each
	// in the round trips of social's post path (three, on one Redis; a
	// first post of an author notes its activity in one more), the wait on
	// Redis within the answer's time. A floor run posts nothing to the
	// server.
	if p := res.PostsOnServer; res.Floor && p != nil {
		t.Errorf("a floor run's posts on the server = %+v, want none", p)
	} else if !res.Floor && (p == nil || p.Posts != float64(posts) || p.RoundTripsMean < 3 || p.RoundTripsMean > 4 ||
		p.RedisMeanMS <= 0 || p.RedisMeanMS > p.MeanMS) {
		t.Errorf("posts on the server = %+v, want %d posts of 3 to 4 round trips, waiting on Redis within their time", p, posts)
	}
	if len(res.Metrics) == 1 && res.Metrics[0].Idle["chorus_connections_open"] != float64(conns) {
		t.Errorf("server connections open when idle = %v, want %d", res.Metrics[0].Idle["chorus_connections_open"], conns)
	}
}

// TestBenchAgainstServer runs the tool against a real server twice: first
// in process, signing everyone up; then reusing the users file with another
// follow graph, two worker processes and two source addresses.
func TestBenchAgainstServer(t *testing.T) {
	base, pid := startServer(t)
	users := filepath.Join(t.TempDir(), "users.json")
	common := []string{"-url", base, "-conns", "20", "-rate", "20", "-duration", "2s", "-hold", "500ms",
		"-grace", "5s", "-users-file", users, "-server-pid", fmt.Sprint(pid)}

	res := benchRun(t, append(common, "-authors", "2", "-followers-per-author", "10", "-workers", "0")...)
	checkClean(t, res, 20, 40, 10)
	if res.Users.SignedUp != 22 || res.Users.FollowsAdded != 20 {
		t.Errorf("first run users = %+v, want 22 signed up and 20 follows", res.Users)
	}
	if res.Client.Workers != 0 || len(res.Client.RSSKiB) != 1 {
		t.Errorf("client = %+v, want the connections in this process", res.Client)
	}

	res = benchRun(t, append(common, "-authors", "4", "-followers-per-author", "5", "-workers", "2",
		"-source-ips", "127.0.0.1,127.0.0.2")...)
	checkClean(t, res, 20, 40, 5)
	if res.Users.Reused != 22 || res.Users.SignedUp != 2 || res.Users.FollowsRemoved == 0 || res.Users.FollowsAdded == 0 {
		t.Errorf("second run users = %+v, want 22 reused, 2 signed up, old follows replaced", res.Users)
	}
	if res.Client.Workers != 2 || len(res.Client.RSSKiB) != 2 {
		t.Errorf("client = %+v, want two workers", res.Client)
	}

	// The same streams as Server-Sent Events, the authors warmed first:
	// every post delivered once.
	res = benchRun(t, append(common, "-authors", "4", "-followers-per-author", "5", "-workers", "0", "-sse", "-warm-authors")...)
	checkClean(t, res, 20, 40, 5)
	if !res.WarmAuthors {
		t.Error("a -warm-authors run does not say its authors were warmed")
	}
	if _, err := parseConfig([]string{"-url", base, "-floor", "-redis-url", "redis://127.0.0.1:1", "-warm-authors"}, io.Discard); err == nil {
		t.Error("-warm-authors with -floor: accepted")
	}

	// A users file the deployment does not know is refused, not used.
	stale := filepath.Join(t.TempDir(), "stale.json")
	if err := os.WriteFile(stale, []byte(`{"users":[{"login":"nobody_here","id":1,"token":"bogus"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig([]string{"-url", base, "-conns", "1", "-authors", "1", "-users-file", stale}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bench(context.Background(), cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard); !errors.Is(err, errStaleUsers) {
		t.Errorf("bench with a stale users file: %v, want errStaleUsers", err)
	}
}

func TestRunExitStatus(t *testing.T) {
	// A port nobody listens on: the run fails at sign-up, quickly.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"-h"}, exitOK},
		{"no url", nil, exitUsage},
		{"bad url", []string{"-url", "ftp://x"}, exitUsage},
		{"bad flag", []string{"-url", dead, "-nope"}, exitUsage},
		{"zero conns", []string{"-url", dead, "-conns", "0"}, exitUsage},
		{"negative rate", []string{"-url", dead, "-rate", "-1"}, exitUsage},
		{"too many posts", []string{"-url", dead, "-rate", "1e6", "-duration", "1h"}, exitUsage},
		{"followers over conns", []string{"-url", dead, "-conns", "5", "-followers-per-author", "6"}, exitUsage},
		{"bad source ip", []string{"-url", dead, "-source-ips", "1.2.3"}, exitUsage},
		{"bad pid", []string{"-url", dead, "-server-pid", "x"}, exitUsage},
		{"negative max lag", []string{"-url", dead, "-max-lag", "-1s"}, exitUsage},
		{"pids not one a url", []string{"-url", dead + "," + dead, "-server-pid", "1"}, exitUsage},
		{"extra argument", []string{"-url", dead, "more"}, exitUsage},
		{"nobody listening", []string{"-url", dead, "-conns", "1", "-authors", "1", "-signup-concurrency", "2"}, exitFailed},
		{"storm on one url", []string{"-url", dead, "-storm", "-storm-kill-pid", "1"}, exitUsage},
		{"storm without a pid", []string{"-url", dead + "," + dead, "-storm"}, exitUsage},
		{"storm friends over observers", []string{"-url", dead + "," + dead, "-storm", "-storm-kill-pid", "1", "-observers", "2", "-friends-per-mover", "3"}, exitUsage},
		{"storm watch within spread", []string{"-url", dead + "," + dead, "-storm", "-storm-kill-pid", "1", "-storm-spread", "5s", "-storm-watch", "5s"}, exitUsage},
		{"storm workers over conns", []string{"-url", dead + "," + dead, "-storm", "-storm-kill-pid", "1", "-conns", "1", "-observers", "1", "-friends-per-mover", "1", "-workers", "3"}, exitUsage},
		{"floor without redis", []string{"-url", dead, "-floor"}, exitUsage},
		{"floor frames bogus", []string{"-url", dead, "-floor", "-redis-url", "redis://127.0.0.1:1", "-floor-frames", "each"}, exitUsage},
		{"floor frames without floor", []string{"-url", dead, "-floor-frames", "batch"}, exitUsage},
		{"floor on a cluster", []string{"-url", dead, "-floor", "-redis-url", "redis+cluster://127.0.0.1:7000"}, exitUsage},
		{"floor bad redis url", []string{"-url", dead, "-floor", "-redis-url", "http://x"}, exitUsage},
		{"floor storm", []string{"-url", dead + "," + dead, "-floor", "-redis-url", "redis://127.0.0.1:1", "-storm", "-storm-kill-pid", "1"}, exitUsage},
		{"floor redis nobody", []string{"-url", dead, "-floor", "-redis-url", "redis://" + ln.Addr().String(), "-conns", "1", "-authors", "1"}, exitFailed},
		{"storm pid of nobody", []string{"-url", dead + "," + dead, "-storm", "-storm-kill-pid", "999999999"}, exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if got := run(context.Background(), tt.args, io.Discard, &stderr); got != tt.want {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.want, stderr.String())
			}
		})
	}
}

func TestParseMarker(t *testing.T) {
	tests := []struct {
		msg  string
		want int64
	}{
		{marker("ab12", 7), 7},
		{"bench ab12 0", 0},
		{"bench other 7", -1},
		{"bench ab12 -3", -1},
		{"bench ab12 x", -1},
		{"hello", -1},
		{"bench ab12 7 more", -1},
	}
	for _, tt := range tests {
		if got := parseMarker(tt.msg, "ab12"); got != tt.want {
			t.Errorf("parseMarker(%q) = %d, want %d", tt.msg, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	ns := make([]int64, 100)
	for i := range ns {
		ns[len(ns)-1-i] = int64(i+1) * 1e6 // 1..100 ms, out of order
	}
	got := summarize(ns)
	want := Latency{Samples: 100, P50: 50, P95: 95, P99: 99, Max: 100, Mean: 50.5}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if got := summarize(nil); got != (Latency{}) {
		t.Errorf("summarize(nil) = %+v, want zero", got)
	}
}

func TestBuildGraph(t *testing.T) {
	g := buildGraph(3, 7, 3)
	want := [][]int{{0, 1, 2}, {3, 4, 5}, {6, 0, 1}}
	if fmt.Sprint(g.followers) != fmt.Sprint(want) {
		t.Errorf("followers = %v, want %v", g.followers, want)
	}
}

// TestFloorAgainstServer runs the floor against a real server on a real
// Redis: each post is PUBLISHes on the followers' channels, read by the
// server's hub and written to the same streams, so every frame published
// reaches its follower exactly once, and the deployment holds no status.
// A second floor run on the same users, from two worker processes, goes
// the same way.
func TestFloorAgainstServer(t *testing.T) {
	redisURL, prefix := redistest.URL(t), "benchtest:"+newRunID()+":"
	base, pid := startServerWith(t, "-redis-url", redisURL, "-key-prefix", prefix,
		"-heartbeat-interval", "1s", "-online-window", "5s")
	users := filepath.Join(t.TempDir(), "users.json")
	common := []string{"-floor", "-redis-url", redisURL, "-key-prefix", prefix,
		"-url", base, "-conns", "20", "-rate", "20", "-duration", "2s", "-hold", "500ms",
		"-grace", "5s", "-users-file", users, "-server-pid", fmt.Sprint(pid)}

	for _, workers := range []string{"0", "2"} {
		res := benchRun(t, append(common, "-authors", "2", "-followers-per-author", "10", "-workers", workers)...)
		checkClean(t, res, 20, 40, 10)
		if !res.Floor {
			t.Errorf("workers %s: result not marked as the floor", workers)
		}
		if got := res.Frames.ByType["status"]; got != 40*10 {
			t.Errorf("workers %s: status frames = %d, want exactly %d", workers, got, 40*10)
		}
		if res.Posts.Publishes != 40*10 || res.Posts.Subscribers != 40*10 {
			t.Errorf("workers %s: %d publishes, %d receipts; want %d each (one instance)", workers, res.Posts.Publishes, res.Posts.Subscribers, 40*10)
		}
		if v, ok := counterGrowth(res.Metrics, "chorus_frames_sent_total"); !ok || v < 40*10 {
			t.Errorf("workers %s: server frames sent +%v (reported %v), want %d at least", workers, v, ok, 40*10)
		}
		if c := res.CPU; c == nil || c.ServerSeconds < 0 || c.RedisSeconds < 0 {
			t.Errorf("workers %s: cpu = %+v, want the server's and Redis's", workers, c)
		}
		logTableOnFailure(t, res)
	}

	// No status was written; the floor's made-up statuses took their ids
	// from the deployment's counter, as posts would, so the instances' mark
	// of the greatest id given (a stream's catch-up floor while Redis
	// cannot tell the last id) stays within the ids given.
	checkFloorWrites(t, redisURL, prefix, 2*40)
}

// checkFloorWrites checks that floor runs on prefix wrote no status, only
// took posts ids from the deployment's counter of status ids.
func checkFloorWrites(t *testing.T, redisURL, prefix string, posts int) {
	t.Helper()
	rdb := redistest.ClientOf(t, redisURL)
	if keys := redistest.Keys(t, rdb, prefix+"status:*"); len(keys) != 1 || keys[0] != prefix+"status:id" {
		t.Errorf("status keys after floor runs: %v, want the ids' counter alone", keys)
	}
	if got, err := rdb.Get(context.Background(), prefix+"status:id").Int(); err != nil || got != posts {
		t.Errorf("status ids taken by floor runs: %d (%v), want %d", got, err, posts)
	}
}

// TestFloorBatchAgainstServer runs the floor with -floor-frames batch
// against a real server on a real Redis: each post is one message on the
// frames channel, in push.lua's format, which the server's hub decodes and
// hands to the followers' streams, so every frame reaches its follower
// exactly once. On a prefix no instance reads, batch is refused before
// anything is set up.
func TestFloorBatchAgainstServer(t *testing.T) {
	redisURL, prefix := redistest.URL(t), "benchtest:"+newRunID()+":"
	base, pid := startServerWith(t, "-redis-url", redisURL, "-key-prefix", prefix,
		"-heartbeat-interval", "1s", "-online-window", "5s")
	users := filepath.Join(t.TempDir(), "users.json")
	res := benchRun(t, "-floor", "-floor-frames", "batch", "-redis-url", redisURL, "-key-prefix", prefix,
		"-url", base, "-conns", "20", "-rate", "20", "-duration", "2s", "-hold", "500ms",
		"-grace", "5s", "-users-file", users, "-server-pid", fmt.Sprint(pid),
		"-authors", "2", "-followers-per-author", "10", "-workers", "0")
	checkClean(t, res, 20, 40, 10)
	if !res.Floor || res.FloorFrames != "batch" {
		t.Errorf("result floor %v, frames %q; want a batch floor", res.Floor, res.FloorFrames)
	}
	if got := res.Frames.ByType["status"]; got != 40*10 {
		t.Errorf("status frames = %d, want exactly %d", got, 40*10)
	}
	if res.Posts.Publishes != 40 || res.Posts.FramesMessages != 40 || res.Posts.Subscribers != 40 {
		t.Errorf("%d publishes, %d on the frames channel, %d receipts; want 40 each (one a post, one instance)",
			res.Posts.Publishes, res.Posts.FramesMessages, res.Posts.Subscribers)
	}
	if v, ok := counterGrowth(res.Metrics, "chorus_frames_sent_total"); !ok || v < 40*10 {
		t.Errorf("server frames sent +%v (reported %v), want %d at least", v, ok, 40*10)
	}
	logTableOnFailure(t, res)
	checkFloorWrites(t, redisURL, prefix, 40)

	cfg, err := parseConfig([]string{"-floor", "-floor-frames", "batch", "-redis-url", redisURL, "-key-prefix", prefix + "other:",
		"-url", base, "-conns", "1", "-authors", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bench(context.Background(), cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no instance reads the frames channel") {
		t.Errorf("batch floor on a prefix no instance reads: %v, want refused", err)
	}
}
