package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
)

// startStormServers runs two chorus binaries on one Redis under one key
// prefix, with a short online window, and returns their URLs and pids.
func startStormServers(t *testing.T, window, interval time.Duration) (urls []string, pids []int) {
	t.Helper()
	redisURL, prefix := redistest.URL(t), "benchtest:"+newRunID()+":"
	for range 2 {
		u, pid := startServerWith(t, "-redis-url", redisURL, "-key-prefix", prefix,
			"-online-window", window.String(), "-heartbeat-interval", interval.String())
		urls, pids = append(urls, u), append(pids, pid)
	}
	return urls, pids
}

// TestStormAgainstServers kills one of two real servers under movers that
// reconnect well within the online window (4s), from two worker processes: all
// come back, and no observer sees any of them go offline.
func TestStormAgainstServers(t *testing.T) {
	t.Parallel()
	const movers, observers = 8, 4
	urls, pids := startStormServers(t, 4*time.Second, 500*time.Millisecond)
	res := measureRun(t, storm, "-storm", "-url", strings.Join(urls, ","), "-storm-kill-pid", fmt.Sprint(pids[0]),
		"-conns", fmt.Sprint(movers), "-observers", fmt.Sprint(observers), "-friends-per-mover", "2",
		"-storm-spread", "1s", "-storm-watch", "6s", "-hold", "1500ms", "-workers", "2",
		"-users-file", filepath.Join(t.TempDir(), "users.json"))
	defer logTableOnFailure(t, res)

	if p := res.Problems(); len(p) > 0 {
		t.Errorf("problems: %v", p)
	}
	if res.Users.SignedUp != movers+observers || res.Users.FollowsAdded != 2*movers*2 {
		t.Errorf("users = %+v, want %d signed up and %d follows", res.Users, movers+observers, 2*movers*2)
	}
	c := res.Conns
	if c.Attempted != movers+observers || c.Held != movers+observers || c.Dropped != 0 || c.HeldAtEnd != movers+observers {
		t.Errorf("conns = %+v, want all %d held throughout", c, movers+observers)
	}
	if res.Client.Workers != 2 || len(res.Client.RSSKiB) != 2 {
		t.Errorf("client = %+v, want two workers", res.Client)
	}
	m := res.Storm.Movers
	if m.Back != movers || m.Failed != 0 || m.NotDropped != 0 || m.DroppedBeforeKill != 0 {
		t.Errorf("movers = %+v, want all %d back", m, movers)
	}
	if m.AllBackSeconds <= 0 || m.AllBackSeconds > 4 || m.BackAfterKill.Samples != movers || m.Handshake.Samples != movers {
		t.Errorf("movers back after %.2fs (%+v), want all, within the 4s window", m.AllBackSeconds, m.BackAfterKill)
	}
	p := res.Storm.Presence
	if p.MoverOffline != 0 || p.MoverOnline != 0 || p.FlickeredMovers != 0 || p.MaxPerSecond > 1 {
		t.Errorf("presence = %+v, want no frame about a mover", p)
	}
	if len(res.Storm.Counters) != 1 || res.Storm.Counters[0].URL != urls[1] {
		t.Fatalf("server counters = %+v, want the survivor's", res.Storm.Counters)
	}
	// The survivor sent at least each mover's ready frame.
	if got := res.Storm.Counters[0].Changed["chorus_frames_sent_total"]; got < movers {
		t.Errorf("survivor's frames sent = %v, want at least %d", got, movers)
	}
	var out strings.Builder
	if err := writeTable(&out, res); err != nil || !strings.Contains(out.String(), "RESULT           ok") {
		t.Errorf("table (%v):\n%s", err, out.String())
	}
	out.Reset()
	var back struct {
		Storm *StormResult `json:"storm"`
	}
	if err := writeJSON(&out, res); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out.String()), &back); err != nil || back.Storm == nil || back.Storm.Movers.Back != movers {
		t.Errorf("JSON report (%v): %+v", err, back.Storm)
	}
}

// TestStormSeesFlickers makes the movers come back long after the online
// window: the sweeper tells the observers they went offline, and the run
// reports it. It shows that a clean storm's "no flicker" is measured.
func TestStormSeesFlickers(t *testing.T) {
	t.Parallel()
	const movers, observers = 10, 2
	urls, pids := startStormServers(t, 2*time.Second, 500*time.Millisecond)
	res := measureRun(t, storm, "-storm", "-url", strings.Join(urls, ","), "-storm-kill-pid", fmt.Sprint(pids[0]),
		"-conns", fmt.Sprint(movers), "-observers", fmt.Sprint(observers), "-friends-per-mover", "1",
		"-storm-spread", "10s", "-storm-watch", "12s", "-hold", "1500ms", "-workers", "0")

	defer logTableOnFailure(t, res)
	p := res.Storm.Presence
	if p.MoverOffline == 0 || p.FlickeredMovers == 0 || len(p.Flickers) == 0 {
		t.Errorf("presence = %+v, want flickers: movers back after the 2s window", p)
	}
	if p.MoverOnline == 0 {
		t.Errorf("presence = %+v, want movers told online again once back", p)
	}
	if !slices.ContainsFunc(res.Problems(), func(s string) bool { return strings.Contains(s, "flickers") }) {
		t.Errorf("problems = %v, want the flickers", res.Problems())
	}
	if m := res.Storm.Movers; m.Back != movers {
		t.Errorf("movers = %+v, want all back, late", m)
	}
}

// logTableOnFailure logs the run's report when the test has failed.
func logTableOnFailure(t *testing.T, res *Result) {
	t.Helper()
	if !t.Failed() {
		return
	}
	var out strings.Builder
	writeTable(&out, res)
	t.Logf("report:\n%s", out.String())
}

func TestTallyPresence(t *testing.T) {
	const s = int64(time.Second)
	kill := 100 * s
	moverOf := map[int64]int{1001: 0, 1002: 1}
	// Connections 0 and 1 are movers, 2 and 3 observers.
	events := []presenceEvent{
		{Conn: 2, User: 1001, Online: true, At: kill - s},           // before the kill
		{Conn: 1, User: 2002, Online: true, At: kill - s},           // before the kill, to a mover
		{Conn: 0, User: 2002, Online: true, At: kill + s},           // to a mover
		{Conn: 1, User: 2003, Online: false, At: kill + 2*s},        // to a mover, an observer flickers
		{Conn: 2, User: 1001, Online: false, At: kill + 30*s},       // flicker
		{Conn: 2, User: 1001, Online: true, At: kill + 30*s + s/2},  // back, within the second
		{Conn: 3, User: 1001, Online: false, At: kill + 31*s},       // the same mover, another observer
		{Conn: 3, User: 1002, Online: true, At: kill + 2*s},         // online about a mover
		{Conn: 3, User: 9999, Online: false, At: kill + 3*s},        // about someone else
		{Conn: 3, User: 9999, Online: true, At: kill + 3*s + s - 1}, // within the second
		{Conn: 3, User: 9999, Online: false, At: kill + 4*s + s/2},  // not with the first
		{Conn: 0, User: 2002, Online: false, At: kill + 60*s},       // the tool closing its streams
		{Conn: 2, User: 1001, Online: false, At: kill + 61*s},       // the same
	}
	got := tallyPresence(events, 2, moverOf, kill, kill+60*s)
	want := StormPresence{ObserversBefore: 1, MoversBefore: 1, Total: 7, MoverOffline: 2, MoverOnline: 2, Repeated: 1, Other: 3, FlickeredMovers: 1,
		ObserversTold: 2, MaxPerSecond: 2, ToMovers: 2, MoversToldOffline: 1}
	flickers := got.Flickers
	got.Flickers = nil
	if want := []string{"mover 1 told user 2003 is offline, 2.000s after the kill"}; !slices.Equal(got.ObserverFlickers, want) {
		t.Errorf("observer flickers = %q, want %q", got.ObserverFlickers, want)
	}
	got.ObserverFlickers = nil
	if got.ClosestMS != 500 || got.Closest != "connection 2 about user 1001, 30.500s after the kill" {
		t.Errorf("closest = %v ms (%s), want 500 ms, connection 2 about user 1001 at 30.5s", got.ClosestMS, got.Closest)
	}
	got.ClosestMS, got.Closest = 0, ""
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tallyPresence = %+v, want %+v", got, want)
	}
	if len(flickers) != 2 || !strings.Contains(flickers[0], "mover 0 (user 1001) is offline, 30.000s after the kill") {
		t.Errorf("flickers = %q", flickers)
	}
}

func TestTallyMoves(t *testing.T) {
	const ms = int64(time.Millisecond)
	kill := int64(1000 * time.Second)
	moves := []moveEvent{
		{Conn: 0, Closed: kill + 1*ms, Dialed: kill + 100*ms, Ready: kill + 110*ms, Attempts: 1},
		{Conn: 1, Closed: kill + 2*ms, Dialed: kill + 3000*ms, Ready: kill + 3020*ms, Attempts: 2},
		{Conn: 2, Closed: kill + 3*ms, Attempts: 3, Why: "HTTP 503"},
		{Conn: 3, Closed: kill - 5000*ms, Dialed: kill - 4000*ms, Ready: kill - 3990*ms, Attempts: 1},
	}
	got := tallyMoves(moves, 6, 5, kill)
	if got.Total != 6 || got.Back != 3 || got.Retried != 1 || got.Failed != 1 || got.NotDropped != 1 || got.DroppedBeforeKill != 1 {
		t.Errorf("tallyMoves = %+v", got)
	}
	if got.FailReasons["HTTP 503"] != 1 {
		t.Errorf("fail reasons = %v", got.FailReasons)
	}
	if got.DropSeen.Samples != 3 || got.DropSeen.Max != 3 {
		t.Errorf("drop seen = %+v, want 3 samples up to 3 ms", got.DropSeen)
	}
	if got.AllBackSeconds != 3.02 || got.Handshake.Max != 20 || got.Handshake.Samples != 3 {
		t.Errorf("all back after %vs, handshake %+v; want 3.02s, up to 20 ms", got.AllBackSeconds, got.Handshake)
	}
	if want := []int{1, 0, 0, 1}; !slices.Equal(got.PerSecond, want) {
		t.Errorf("back per second = %v, want %v", got.PerSecond, want)
	}
}

func TestMostWithin(t *testing.T) {
	const s = int64(time.Second)
	tests := []struct {
		name string
		ts   []int64
		want int
	}{
		{"none", nil, 0},
		{"one", []int64{5 * s}, 1},
		{"a second apart", []int64{0, s, 2 * s}, 1},
		{"just under a second", []int64{0, s - 1}, 2},
		{"out of order", []int64{3 * s, s / 2, 3*s + 1, s / 4, 3*s + 2}, 3},
		{"a sliding window", []int64{0, s / 2, s, s + s/2}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mostWithin(tt.ts, time.Second); got != tt.want {
				t.Errorf("mostWithin(%v) = %d, want %d", tt.ts, got, tt.want)
			}
		})
	}
}

func TestBuildFriends(t *testing.T) {
	f := buildFriends(4, 3, 2)
	want := [][]int{{0, 1}, {2, 0}, {1, 2}, {0, 1}}
	if fmt.Sprint(f.observers) != fmt.Sprint(want) {
		t.Errorf("observers = %v, want %v", f.observers, want)
	}
	users := []benchUser{{Login: "m0"}, {Login: "m1"}, {Login: "o0"}, {Login: "o1"}}
	got := buildFriends(2, 2, 1).edges(users)
	wantEdges := []edge{{"m0", "o0"}, {"o0", "m0"}, {"m1", "o1"}, {"o1", "m1"}}
	if !slices.Equal(got, wantEdges) {
		t.Errorf("edges = %v, want %v", got, wantEdges)
	}
}

func TestParseCounters(t *testing.T) {
	text := `# HELP chorus_frames_sent_total Frames written to streams.
# TYPE chorus_frames_sent_total counter
chorus_frames_sent_total 12
# TYPE chorus_connections_open gauge
chorus_connections_open 5
# TYPE chorus_http_requests_total counter
chorus_http_requests_total{method="GET",route="/api/v1/users/{login}",status="200"} 3
chorus_http_requests_total{method="GET",route="/a b \"}\" c",status="404"} 4
# TYPE chorus_http_request_duration_seconds histogram
chorus_http_request_duration_seconds_count{method="GET"} 9
# TYPE go_gc_cycles_total counter
go_gc_cycles_total 7
# TYPE chorus_stamped_total counter
chorus_stamped_total 2 1700000000000
`
	got := parseCounters(strings.NewReader(text))
	want := map[string]float64{"chorus_frames_sent_total": 12, "chorus_http_requests_total": 7, "chorus_stamped_total": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseCounters = %v, want %v", got, want)
	}
	if got := parseCounters(strings.NewReader("# nothing\n")); got != nil {
		t.Errorf("parseCounters of no counters = %v, want nil", got)
	}
}

func TestCounterChanges(t *testing.T) {
	before := map[string]float64{"a": 1, "b": 2, "gone": 3}
	after := map[string]float64{"a": 1, "b": 5, "new": 4}
	got := counterChanges(before, after)
	want := map[string]float64{"b": 3, "new": 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counterChanges = %v, want %v", got, want)
	}
}

func TestParseConfigStorm(t *testing.T) {
	cfg, err := parseConfig([]string{"-storm", "-url", "http://a:1,http://b:2", "-storm-kill-pid", "42",
		"-conns", "10000", "-observers", "2000", "-authors", "5", "-rate", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Authors != 0 || cfg.Rate != 0 || cfg.postCount() != 0 {
		t.Errorf("authors %d, rate %v: want no posting in a storm", cfg.Authors, cfg.Rate)
	}
	if cfg.connCount() != 12000 || cfg.workerCount() != 2 {
		t.Errorf("connCount %d, workerCount %d; want 12000 over 2 workers", cfg.connCount(), cfg.workerCount())
	}
	if cfg.FriendsPerMover != 3 || cfg.Spread != 5*time.Second || cfg.Watch != 45*time.Second {
		t.Errorf("defaults: %d friends per mover, spread %s, watch %s", cfg.FriendsPerMover, cfg.Spread, cfg.Watch)
	}
}
