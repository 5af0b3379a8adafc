package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is the report of one run; its JSON is the -json output.
type Result struct {
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
	URLs    []string  `json:"urls"`
	Params  Params    `json:"params"`
	// Floor is a -floor run: each post was PUBLISHes of a made-up status
	// frame on the followers' channels, not POST /statuses.
	Floor bool `json:"floor,omitempty"`
	// FloorFrames is how a floor run published a post's frames: "channel",
	// on each follower's channel, or "batch", in one message on the frames
	// channel as the server does on one Redis.
	FloorFrames string `json:"floor_frames,omitempty"`
	// SSE is a -sse run: the streams were Server-Sent Events, which send
	// no heartbeats.
	SSE bool `json:"sse,omitempty"`
	// WarmAuthors is a -warm-authors run: each author read GET /me through
	// every instance before the posts.
	WarmAuthors bool `json:"warm_authors,omitempty"`

	Users struct {
		Total          int     `json:"total"`
		Reused         int     `json:"reused"`
		SignedUp       int     `json:"signed_up"`
		SignupSeconds  float64 `json:"signup_seconds"`
		FollowsAdded   int     `json:"follows_added"`
		FollowsRemoved int     `json:"follows_removed"`
	} `json:"users"`

	Conns struct {
		Attempted      int            `json:"attempted"`
		Held           int            `json:"held"` // ready, when every connection had been tried
		Failed         int            `json:"failed"`
		FailReasons    map[string]int `json:"fail_reasons,omitempty"`
		HeldIdle       int            `json:"held_idle"`   // open when the idle memory was read
		HeldAtEnd      int            `json:"held_at_end"` // still open after the grace period
		Dropped        int            `json:"dropped"`     // closed by the other side during the run
		DropReasons    map[string]int `json:"drop_reasons,omitempty"`
		ConnectSeconds float64        `json:"connect_seconds"`
	} `json:"conns"`

	Frames struct {
		Total           int64            `json:"total"`
		ByType          map[string]int64 `json:"by_type"`
		HeartbeatsSent  int64            `json:"heartbeats_sent"`
		HeartbeatErrors int64            `json:"heartbeat_errors"`
	} `json:"frames"`

	Posts struct {
		Planned       int     `json:"planned"`
		Sent          int     `json:"sent"`
		Failed        int     `json:"failed"`
		FirstError    string  `json:"first_error,omitempty"`
		Seconds       float64 `json:"seconds"`
		AchievedRate  float64 `json:"achieved_rate"`
		MaxLagMS      float64 `json:"max_schedule_lag_ms"`
		AnswerLatency Latency `json:"answer_latency"` // POST /statuses round trip; a floor's PUBLISH pipeline
		// AnswerFromDue is the same from each post's due time on the
		// schedule: it counts the time a post waited behind
		// -max-in-flight others, which AnswerLatency leaves out.
		AnswerFromDue Latency `json:"answer_latency_from_due"`
		// A floor's PUBLISH commands, and their replies summed: how many
		// instance subscriptions got them (0: nobody listens on those
		// channels; is -key-prefix the deployment's?).
		Publishes   int64 `json:"publishes,omitempty"`
		Subscribers int64 `json:"publish_receivers,omitempty"`
		// FramesMessages are the publishes of a -floor-frames batch run
		// on the frames channel, one for a post's followers.
		FramesMessages int64    `json:"frames_messages,omitempty"`
		LostExamples   []string `json:"lost_examples,omitempty"`
	} `json:"posts"`

	Deliveries struct {
		Expected     int `json:"expected"`
		Delivered    int `json:"delivered"`
		Lost         int `json:"lost"`
		LostOnClosed int `json:"lost_on_closed_conns"`
		Duplicated   int `json:"duplicated"`
		Early        int `json:"early"`
		Unexpected   int `json:"unexpected"`
		Foreign      int `json:"foreign"`
	} `json:"deliveries"`

	Latency Latency `json:"latency"` // post sent to status frame received
	// LatencyFromDue is post due (on the schedule) to status frame
	// received: with a schedule that lagged, the latency a client posting
	// at the rate would have seen.
	LatencyFromDue Latency `json:"latency_from_due"`

	CPU *CPUFigures `json:"cpu,omitempty"` // from idle to after the posts

	Memory []ServerMemory `json:"server_memory,omitempty"`
	// MemoryPerConnKiB is the growth of the servers' RSS from before
	// connecting to idle with every connection held, over those held.
	MemoryPerConnKiB float64 `json:"memory_per_conn_kib,omitempty"`

	// Metrics are what each instance's /metrics said, when it has one.
	Metrics        []InstanceMetrics `json:"server_metrics,omitempty"`
	MetricsPerConn *PerConnMetrics   `json:"server_metrics_per_conn,omitempty"`
	PostsOnServer  *PostsOnServer    `json:"posts_on_server,omitempty"`

	Client struct {
		Workers int     `json:"workers"`
		RSSKiB  []int64 `json:"rss_kib"` // of each process holding connections
	} `json:"client"`

	Storm *StormResult `json:"storm,omitempty"` // a -storm run's own figures
}

// Params are the run's settings worth keeping beside its figures.
type Params struct {
	Conns              int     `json:"conns"`
	Authors            int     `json:"authors"`
	FollowersPerAuthor int     `json:"followers_per_author"`
	Rate               float64 `json:"rate"`
	DurationSeconds    float64 `json:"duration_seconds"`
	SourceIPs          int     `json:"source_ips"`
	// MaxLagMS is -max-lag: a schedule that lagged more fails the run.
	MaxLagMS float64 `json:"max_lag_ms,omitempty"`
	// A storm's: Conns are its movers.
	Observers       int     `json:"observers,omitempty"`
	FriendsPerMover int     `json:"friends_per_mover,omitempty"`
	SpreadSeconds   float64 `json:"storm_spread_seconds,omitempty"`
	WatchSeconds    float64 `json:"storm_watch_seconds,omitempty"`
}

// Latency summarizes durations, in milliseconds.
type Latency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P95     float64 `json:"p95_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
	Mean    float64 `json:"mean_ms"`
}

// CPUFigures are the CPU the instances (their /metrics'
// process_cpu_seconds_total) and Redis (INFO cpu, with -redis-url) spent
// from idle, every connection held, to after the posts and the grace
// period, and that over the deliveries. A figure not reported is -1.
type CPUFigures struct {
	ServerSeconds     float64 `json:"server_seconds"`
	RedisSeconds      float64 `json:"redis_seconds"`
	ServerPerDelivery float64 `json:"server_us_per_delivery"`
	RedisPerDelivery  float64 `json:"redis_us_per_delivery"`
	// ServerNotMeasured says which instances did not tell their CPU at
	// both moments when others did: the servers' figures are then -1.
	ServerNotMeasured string `json:"server_not_measured,omitempty"`
}

// ServerMemory is the RSS of one server process at three moments.
type ServerMemory struct {
	PID       int   `json:"pid"`
	BeforeKiB int64 `json:"before_kib"` // before connecting
	IdleKiB   int64 `json:"idle_kib"`   // every connection held, idle for -hold
	AfterKiB  int64 `json:"after_kib"`  // after the posts and the grace period
}

// summarize takes nanosecond durations and gives their nearest-rank
// percentiles.
func summarize(ns []int64) Latency {
	if len(ns) == 0 {
		return Latency{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	ms := func(v int64) float64 { return float64(v) / 1e6 }
	rank := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return ms(s[min(max(i, 0), len(s)-1)])
	}
	var sum float64
	for _, v := range s {
		sum += ms(v)
	}
	return Latency{Samples: len(s), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: ms(s[len(s)-1]), Mean: sum / float64(len(s))}
}

// Problems lists what went wrong in the run; none means a clean run.
func (r *Result) Problems() []string {
	var p []string
	add := func(n int, what string) {
		if n > 0 {
			p = append(p, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.Conns.Failed, "connections failed")
	add(r.Conns.Dropped, "connections dropped")
	add(r.Posts.Failed, "posts failed")
	add(r.Deliveries.Lost, "deliveries lost")
	add(r.Deliveries.Duplicated, "deliveries duplicated")
	add(r.Deliveries.Unexpected, "deliveries to users who do not follow the author")
	if r.Params.MaxLagMS > 0 && r.Posts.MaxLagMS > r.Params.MaxLagMS {
		p = append(p, fmt.Sprintf("schedule lag up to %.1f ms, over -max-lag %.1f ms (the latencies from the send leave the wait out; see those from the due time)",
			r.Posts.MaxLagMS, r.Params.MaxLagMS))
	}
	if s := r.Storm; s != nil {
		add(s.Presence.MoverOffline, "offline presence frames about movers (flickers)")
		add(s.Presence.MoversToldOffline, "offline presence frames about observers (flickers)")
		add(s.Movers.Failed, "movers failed to reconnect")
		add(s.Movers.DroppedBeforeKill, "movers dropped before the kill")
		add(s.Movers.NotDropped, "movers never lost their connection (was -storm-kill-pid the first -url's process?)")
	}
	return p
}

// writeClientRows prints the rows every run has: users, connections (drops
// described as dropped), frames.
func writeClientRows(row func(k, format string, args ...any), r *Result, dropped string) {
	row("users", "%d (%d reused, %d signed up in %.1fs); follows +%d −%d",
		r.Users.Total, r.Users.Reused, r.Users.SignedUp, r.Users.SignupSeconds, r.Users.FollowsAdded, r.Users.FollowsRemoved)
	row("connections", "%d attempted, %d held, %d failed in %.1fs; %d dropped %s, %d held at the end",
		r.Conns.Attempted, r.Conns.Held, r.Conns.Failed, r.Conns.ConnectSeconds, r.Conns.Dropped, dropped, r.Conns.HeldAtEnd)
	for _, k := range sortedKeys(r.Conns.FailReasons) {
		row("  failed", "%d × %s", r.Conns.FailReasons[k], k)
	}
	for _, k := range sortedKeys(r.Conns.DropReasons) {
		row("  dropped", "%d × %s", r.Conns.DropReasons[k], k)
	}
	var types []string
	for _, k := range sortedKeys(r.Frames.ByType) {
		types = append(types, fmt.Sprintf("%s %d", k, r.Frames.ByType[k]))
	}
	row("frames", "%d received (%s); %d heartbeats sent, %d failed", r.Frames.Total, strings.Join(types, ", "), r.Frames.HeartbeatsSent, r.Frames.HeartbeatErrors)
}

// writeResultRows writes the last rows of both scenarios' reports: the
// client's memory and the verdict.
func writeResultRows(row func(k, format string, args ...any), r *Result) {
	var rss []string
	for _, v := range r.Client.RSSKiB {
		rss = append(rss, kib(v))
	}
	row("client RSS", "%s", strings.Join(rss, ", "))
	if p := r.Problems(); len(p) > 0 {
		row("RESULT", "FAIL: %s", strings.Join(p, "; "))
	} else {
		row("RESULT", "ok")
	}
}

// writeJSON prints the result as indented JSON.
func writeJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the result for a person.
func writeTable(w io.Writer, r *Result) error {
	if r.Storm != nil {
		return writeStormTable(w, r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		_, _ = fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...)
	}
	row("run", "%s at %s against %s", r.RunID, r.Started.Format(time.RFC3339), strings.Join(r.URLs, ", "))
	row("shape", "%d conns, %d authors × %d followers, %.1f posts/s for %.1fs, %d workers, %d source IPs",
		r.Params.Conns, r.Params.Authors, r.Params.FollowersPerAuthor, r.Params.Rate, r.Params.DurationSeconds, r.Client.Workers, r.Params.SourceIPs)
	writeClientRows(row, r, "during the run")
	row("posts", "%d planned, %d sent, %d failed in %.1fs (%.1f/s achieved, schedule lag up to %.1f ms, -max-lag %s)",
		r.Posts.Planned, r.Posts.Sent, r.Posts.Failed, r.Posts.Seconds, r.Posts.AchievedRate, r.Posts.MaxLagMS, lagBound(r.Params.MaxLagMS))
	if r.Posts.FirstError != "" {
		row("  first error", "%s", r.Posts.FirstError)
	}
	if r.Floor {
		if r.FloorFrames == floorBatch {
			row("mode", "FLOOR (batch): each post was one PUBLISH of a made-up status frame for its followers on the frames channel, as the server sends it on one Redis; no POST, no social writes but the status ids taken")
		} else {
			row("mode", "FLOOR: each post was one pipeline of PUBLISHes of a made-up status frame on its followers' channels, no POST, no social writes but the status ids taken")
		}
		row("PUBLISH answer", "%s", r.Posts.AnswerLatency)
		row("  from due time", "%s", r.Posts.AnswerFromDue)
		row("publishes", "%d PUBLISH commands (%d on the frames channel), %d receipts by instances' subscriptions", r.Posts.Publishes, r.Posts.FramesMessages, r.Posts.Subscribers)
	} else {
		row("POST answer", "%s", r.Posts.AnswerLatency)
		row("  from due time", "%s", r.Posts.AnswerFromDue)
		if r.WarmAuthors {
			row("  authors", "warmed: each read GET /me through every instance before the posts")
		}
		if p := r.PostsOnServer; p != nil {
			row("  on the servers", "mean %.2f ms, of which %.2f ms waiting on Redis over %.2f round trips (%.0f posts, their /metrics)",
				p.MeanMS, p.RedisMeanMS, p.RoundTripsMean, p.Posts)
		}
	}
	d := r.Deliveries
	row("deliveries", "%d expected, %d delivered, %d lost (%d on dropped conns), %d duplicated", d.Expected, d.Delivered, d.Lost, d.LostOnClosed, d.Duplicated)
	row("  other", "%d early (follower ready after the post), %d unexpected, %d foreign statuses", d.Early, d.Unexpected, d.Foreign)
	for _, e := range r.Posts.LostExamples {
		row("  lost", "%s", e)
	}
	if r.Floor {
		row("floor post→delivery", "%s", r.Latency)
	} else {
		row("post→delivery", "%s", r.Latency)
	}
	row("  from due time", "%s", r.LatencyFromDue)
	if c := r.CPU; c != nil {
		server := cpuText(c.ServerSeconds, c.ServerPerDelivery)
		if c.ServerNotMeasured != "" {
			server = "not measured (" + c.ServerNotMeasured + ")"
		}
		row("CPU", "server %s, Redis %s (idle to after posts)", server, cpuText(c.RedisSeconds, c.RedisPerDelivery))
	}
	for _, m := range r.Memory {
		row("server RSS", "pid %d: %s before, %s idle, %s after posts", m.PID, kib(m.BeforeKiB), kib(m.IdleKiB), kib(m.AfterKiB))
	}
	if len(r.Memory) > 0 {
		row("memory/conn", "%.1f KiB (RSS growth, idle, over %d held)", r.MemoryPerConnKiB, r.Conns.HeldIdle)
	}
	if pc := r.MetricsPerConn; pc != nil {
		row("runtime/conn", "heap: %.1f KiB in use, %.1f KiB allocated, ≈%.1f KiB live at the last GC, %.0f objects; %.1f KiB goroutine stacks, %.2f goroutines, of them %.2f kept idle for the next reads and writes and %.2f reading (/metrics growth, idle)",
			pc.HeapInuseKiB, pc.HeapAllocKiB, pc.LiveKiB, pc.Objects, pc.StackKiB, pc.Goroutines, pc.Pooled, pc.Readers)
	}
	if line := metricsLine(r.Metrics); line != "" {
		row("server counters", "%s (before connecting to after posts)", line)
	}
	writeResultRows(row, r)
	return tw.Flush()
}

func (l Latency) String() string {
	if l.Samples == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms (%d samples)", l.P50, l.P95, l.P99, l.Max, l.Mean, l.Samples)
}

// lagBound is -max-lag as the report prints it.
func lagBound(ms float64) string {
	if ms <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f ms", ms)
}

// cpuText is seconds of CPU and µs per delivery, or "not reported".
func cpuText(seconds, perDelivery float64) string {
	if seconds < 0 {
		return "not reported"
	}
	return fmt.Sprintf("%.2f s = %.1f µs per delivery", seconds, perDelivery)
}

func kib(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/1024) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readRSS reads a process's resident set size, in KiB, from /proc.
func readRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("rss of %d: %w", pid, err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(v)
			if len(fields) == 0 {
				break
			}
			n, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("rss of %d: %w", pid, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("rss of %d: no VmRSS in /proc/%d/status", pid, pid)
}
