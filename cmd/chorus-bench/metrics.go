package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// scrapedMetrics are the series of an instance's /metrics the report uses:
// the Go runtime's memory, the stream's counters, and what the posts cost
// the server (postSeries).
var scrapedMetrics = []string{
	"go_goroutines",
	"go_gc_gogc_percent",
	"go_memstats_heap_alloc_bytes",
	"go_memstats_heap_objects",
	"go_memstats_next_gc_bytes",
	"go_memstats_heap_inuse_bytes",
	"go_memstats_stack_inuse_bytes",
	"go_memstats_sys_bytes",
	"process_resident_memory_bytes",
	"process_cpu_seconds_total",
	"chorus_connections_open",
	"chorus_stream_readers",
	"chorus_stream_readers_idle",
	"chorus_stream_writers_idle",
	"chorus_frames_sent_total",
	"chorus_frames_dropped_total",
	"chorus_slow_clients_closed_total",
	"chorus_heartbeats_total",
	"chorus_pubsub_resubscribes_total",
	postSeries + "chorus_http_request_duration_seconds_sum",
	postSeries + "chorus_http_request_duration_seconds_count",
	postSeries + "chorus_http_request_redis_seconds_sum",
	postSeries + "chorus_http_request_redis_round_trips_sum",
}

// postSeries marks the series of POST /api/v1/statuses in scrapedMetrics:
// the sample's name is what follows it, with the route's labels added.
const postSeries = "post:"

// sampleKey is the key a sample of scrapedMetrics is found under in the
// Prometheus text format (a name, or a name and its labels).
func sampleKey(n string) string {
	if name, ok := strings.CutPrefix(n, postSeries); ok {
		return name + `{method="POST",route="/api/v1/statuses"}`
	}
	return n
}

// InstanceMetrics is what one instance's /metrics said at three moments:
// before connecting, idle with every connection held, after the posts.
type InstanceMetrics struct {
	URL    string             `json:"url"`
	Before map[string]float64 `json:"before,omitempty"`
	Idle   map[string]float64 `json:"idle,omitempty"`
	After  map[string]float64 `json:"after,omitempty"`
	// Errors are why /metrics did not answer, by moment ("before",
	// "idle", "after").
	Errors map[string]string `json:"errors,omitempty"`
}

// PerConnMetrics divide the growth of the instances' Go runtime figures,
// from before connecting to idle, by the connections held.
type PerConnMetrics struct {
	HeapInuseKiB float64 `json:"heap_inuse_kib"` // spans in use: live objects, garbage not yet swept, free slots
	HeapAllocKiB float64 `json:"heap_alloc_kib"` // objects: live, and garbage since the last GC
	LiveKiB      float64 `json:"live_kib_estimate"`
	Objects      float64 `json:"objects"`
	StackKiB     float64 `json:"stack_inuse_kib"`
	Goroutines   float64 `json:"goroutines"`
	// Pooled is the growth of the goroutines the servers keep idle for
	// the next streams' reads and writes (at most 64 each an instance),
	// counted in Goroutines too; Readers, those reading a stream's bytes
	// when idle was read (a heartbeat just come in), counted there too.
	Pooled  float64 `json:"idle_pooled"`
	Readers float64 `json:"stream_readers"`
}

// liveHeap estimates the heap live at the last GC from the next GC's goal,
// which the runtime sets at live + (live + stacks) × GOGC/100.
func liveHeap(m map[string]float64) float64 {
	g := 1.0
	if v, ok := m["go_gc_gogc_percent"]; ok && v > 0 {
		g = v / 100
	}
	return (m["go_memstats_next_gc_bytes"] - g*m["go_memstats_stack_inuse_bytes"]) / (1 + g)
}

// scrapeMetrics reads the series named in scrapedMetrics from base's
// /metrics. A deployment without /metrics, or without some series, gives
// fewer figures and the error, never an error that stops the run.
func scrapeMetrics(ctx context.Context, api *apiClient, base string) (map[string]float64, error) {
	return fetchMetrics(ctx, api, base, parseMetrics)
}

// scrapeCounters reads every counter named chorus_* from base's /metrics,
// each summed over its labels; nil when base has no /metrics.
func scrapeCounters(ctx context.Context, api *apiClient, base string) map[string]float64 {
	m, _ := fetchMetrics(ctx, api, base, parseCounters)
	return m
}

// fetchMetrics gets base's /metrics and parses it; nil and why when that
// fails.
func fetchMetrics(ctx context.Context, api *apiClient, base string, parse func(io.Reader) map[string]float64) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := api.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", res.StatusCode)
	}
	return parse(io.LimitReader(res.Body, 8<<20)), nil
}

// parseMetrics picks the samples of scrapedMetrics out of the Prometheus
// text format.
func parseMetrics(r io.Reader) map[string]float64 {
	want := map[string]string{}
	for _, n := range scrapedMetrics {
		want[sampleKey(n)] = n
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || want[f[0]] == "" {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[want[f[0]]] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// parseCounters sums the samples of each counter whose name starts with
// chorus_ over its labels, from the Prometheus text format, where a
// "# TYPE name counter" line comes before the samples of name.
func parseCounters(r io.Reader) map[string]float64 {
	counters := map[string]bool{}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 && f[1] == "counter" && strings.HasPrefix(f[0], "chorus_") {
				counters[f[0]] = true
			}
			continue
		}
		name, value, ok := splitSample(line)
		if !ok || !counters[name] {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] += v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// splitSample splits a sample line, "name{labels} value [timestamp]", into
// its name and value. Label values may hold spaces, braces and escaped
// quotes.
func splitSample(line string) (name, value string, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", false
	}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", "", false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		quoted, escaped, end := false, false, -1
		for j := 1; j < len(rest) && end < 0; j++ {
			switch c := rest[j]; {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = quoted
			case c == '"':
				quoted = !quoted
			case c == '}' && !quoted:
				end = j
			}
		}
		if end < 0 {
			return "", "", false
		}
		rest = rest[end+1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", "", false
	}
	return name, f[0], true
}

// counterChanges lists the counters that moved from before to after: a
// counter missing before counts from 0.
func counterChanges(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, a := range after {
		if d := a - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// scrapeAll reads every instance's metrics into the moment that pick
// selects, and notes under moment why an instance did not answer.
func scrapeAll(ctx context.Context, api *apiClient, ms []InstanceMetrics, moment string, pick func(*InstanceMetrics) *map[string]float64) {
	for i := range ms {
		m, err := scrapeMetrics(ctx, api, ms[i].URL)
		*pick(&ms[i]) = m
		if err != nil {
			if ms[i].Errors == nil {
				ms[i].Errors = map[string]string{}
			}
			ms[i].Errors[moment] = err.Error()
		}
	}
}

// answered keeps the instances whose /metrics answered at some moment: a
// deployment without /metrics reports none.
func answered(ms []InstanceMetrics) []InstanceMetrics {
	kept := ms[:0]
	for _, m := range ms {
		if m.Before != nil || m.Idle != nil || m.After != nil {
			kept = append(kept, m)
		}
	}
	return kept
}

// perConn works out PerConnMetrics over held connections; nil when any
// instance lacks the figures.
func perConn(ms []InstanceMetrics, held int) *PerConnMetrics {
	if len(ms) == 0 || held == 0 {
		return nil
	}
	names := []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_heap_objects",
		"go_memstats_next_gc_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines"}
	var sum [6]float64
	var live, readers, pooled float64
	for _, m := range ms {
		readers += m.Idle["chorus_stream_readers"] - m.Before["chorus_stream_readers"]
		for _, p := range []string{"chorus_stream_readers_idle", "chorus_stream_writers_idle"} {
			pooled += m.Idle[p] - m.Before[p]
		}
		for i, n := range names {
			b, okB := m.Before[n]
			a, okA := m.Idle[n]
			if !okA || !okB {
				return nil
			}
			sum[i] += a - b
		}
		live += liveHeap(m.Idle) - liveHeap(m.Before)
	}
	n := float64(held)
	return &PerConnMetrics{
		HeapInuseKiB: sum[0] / 1024 / n, HeapAllocKiB: sum[1] / 1024 / n, Objects: sum[2] / n,
		LiveKiB: live / 1024 / n, StackKiB: sum[4] / 1024 / n, Goroutines: sum[5] / n, Pooled: pooled / n, Readers: readers / n,
	}
}

// counterGrowth sums, over the instances, how much a counter grew from
// before connecting to after the posts; ok is false when none reports it.
func counterGrowth(ms []InstanceMetrics, name string) (v float64, ok bool) {
	for _, m := range ms {
		a, okA := m.After[name]
		b, okB := m.Before[name]
		if okA && okB {
			v += a - b
			ok = true
		}
	}
	return v, ok
}

// metricsLine is the report's line about the servers' own counters.
func metricsLine(ms []InstanceMetrics) string {
	var parts []string
	for _, n := range []string{"chorus_frames_sent_total", "chorus_frames_dropped_total", "chorus_slow_clients_closed_total", "chorus_heartbeats_total", "chorus_pubsub_resubscribes_total"} {
		if v, ok := counterGrowth(ms, n); ok {
			parts = append(parts, fmt.Sprintf("%s +%.0f", strings.TrimSuffix(strings.TrimPrefix(n, "chorus_"), "_total"), v))
		}
	}
	return strings.Join(parts, ", ")
}

// PostsOnServer is what the instances' own metrics say of the posts they
// answered from idle to after the posts: the mean time each took on the
// server, and of it the time waiting on Redis and the round trips made.
type PostsOnServer struct {
	Posts          float64 `json:"posts"`
	MeanMS         float64 `json:"mean_ms"`
	RedisMeanMS    float64 `json:"redis_mean_ms"`
	RoundTripsMean float64 `json:"round_trips_mean"`
}

// postsOnServer sums the post series over the instances; nil when none
// reports them (an older build, or no post answered).
func postsOnServer(ms []InstanceMetrics) *PostsOnServer {
	var count, took, wait, trips float64
	for _, m := range ms {
		if m.Idle == nil || m.After == nil {
			continue // not read at both moments
		}
		grew := func(n string) (float64, bool) {
			a, okA := m.After[postSeries+n]
			b, okB := m.Idle[postSeries+n]
			if !okB {
				b, okB = 0, okA // no post answered yet when idle
			}
			return a - b, okA && okB
		}
		c, ok1 := grew("chorus_http_request_duration_seconds_count")
		d, ok2 := grew("chorus_http_request_duration_seconds_sum")
		w, ok3 := grew("chorus_http_request_redis_seconds_sum")
		t, ok4 := grew("chorus_http_request_redis_round_trips_sum")
		if ok1 && ok2 && ok3 && ok4 {
			count, took, wait, trips = count+c, took+d, wait+w, trips+t
		}
	}
	if count == 0 {
		return nil
	}
	return &PostsOnServer{Posts: count, MeanMS: took / count * 1e3, RedisMeanMS: wait / count * 1e3, RoundTripsMean: trips / count}
}
