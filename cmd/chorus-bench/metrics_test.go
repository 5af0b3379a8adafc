package main

import (
	"maps"
	"strings"
	"testing"
)

// parseMetrics picks the wanted samples, the posts' by their route's
// labels, and postsOnServer and perConn work out their figures from the
// moments read; an instance not read at idle adds nothing to the posts.
func TestParseMetricsAndPostsOnServer(t *testing.T) {
	t.Parallel()
	scrape := func(text string) map[string]float64 { return parseMetrics(strings.NewReader(text)) }
	before := scrape(`# TYPE go_goroutines gauge
go_goroutines 40
chorus_stream_readers 1
chorus_stream_readers_idle 2
`)
	idle := scrape(`go_goroutines 70
chorus_stream_readers 3
chorus_stream_readers_idle 12
chorus_stream_writers_idle 5
chorus_http_request_duration_seconds_sum{method="GET",route="/api/v1/statuses"} 9
chorus_http_request_duration_seconds_count{method="POST",route="/api/v1/statuses"} 2
chorus_http_request_duration_seconds_sum{method="POST",route="/api/v1/statuses"} 0.004
chorus_http_request_redis_seconds_sum{method="POST",route="/api/v1/statuses"} 0.003
chorus_http_request_redis_round_trips_sum{method="POST",route="/api/v1/statuses"} 9
`)
	after := scrape(`chorus_http_request_duration_seconds_count{method="POST",route="/api/v1/statuses"} 12
chorus_http_request_duration_seconds_sum{method="POST",route="/api/v1/statuses"} 0.024
chorus_http_request_redis_seconds_sum{method="POST",route="/api/v1/statuses"} 0.018
chorus_http_request_redis_round_trips_sum{method="POST",route="/api/v1/statuses"} 49
`)
	want := map[string]float64{
		"go_goroutines": 70, "chorus_stream_readers": 3, "chorus_stream_readers_idle": 12,
		"chorus_stream_writers_idle":                              5,
		postSeries + "chorus_http_request_duration_seconds_count": 2,
		postSeries + "chorus_http_request_duration_seconds_sum":   0.004,
		postSeries + "chorus_http_request_redis_seconds_sum":      0.003,
		postSeries + "chorus_http_request_redis_round_trips_sum":  9,
	}
	if !maps.Equal(idle, want) {
		t.Errorf("parseMetrics = %v, want %v", idle, want)
	}

	p := postsOnServer([]InstanceMetrics{{Idle: idle, After: after}, {After: after}})
	if p == nil || p.Posts != 10 || !near(p.MeanMS, 2) || !near(p.RedisMeanMS, 1.5) || !near(p.RoundTripsMean, 4) {
		t.Errorf("postsOnServer = %+v, want 10 posts of 2 ms, 1.5 in Redis over 4 round trips", p)
	}
	// No post metric at idle (none answered yet) counts from zero.
	fresh := map[string]float64{"go_goroutines": 70}
	if p := postsOnServer([]InstanceMetrics{{Idle: fresh, After: after}}); p == nil || p.Posts != 12 {
		t.Errorf("postsOnServer from a fresh instance = %+v, want 12 posts", p)
	}
	if p := postsOnServer([]InstanceMetrics{{Idle: before, After: before}}); p != nil {
		t.Errorf("postsOnServer with no post = %+v, want nil", p)
	}

	for _, n := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_heap_objects", "go_memstats_next_gc_bytes", "go_memstats_stack_inuse_bytes"} {
		before[n], idle[n] = 0, 0
	}
	c := perConn([]InstanceMetrics{{Before: before, Idle: idle}}, 10)
	if c == nil || !near(c.Goroutines, 3) || !near(c.Pooled, 1.5) || !near(c.Readers, 0.2) {
		t.Errorf("perConn = %+v, want 3 goroutines a stream, 1.5 of them kept idle (1 for reads, 0.5 for writes), 0.2 reading", c)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// The servers' CPU per delivery is their sum over every instance: when
// one did not tell its CPU at both moments, the figure is not measured,
// rather than a part of the deployment's passing for the whole, and the
// report names the instance and why.
func TestCPUFiguresNeedEveryInstance(t *testing.T) {
	t.Parallel()
	cpu := func(v float64) map[string]float64 { return map[string]float64{"process_cpu_seconds_total": v} }
	both := []InstanceMetrics{{URL: "http://a", Idle: cpu(1), After: cpu(3)}, {URL: "http://b", Idle: cpu(2), After: cpu(3)}}
	if c := cpuFigures(both, -1, -1, 1000); c == nil || !near(c.ServerSeconds, 3) || !near(c.ServerPerDelivery, 3000) || c.ServerNotMeasured != "" {
		t.Errorf("cpuFigures of two instances = %+v, want 3 s, 3000 µs per delivery", c)
	}

	failed := []InstanceMetrics{both[0], {URL: "http://b", Idle: cpu(2), Errors: map[string]string{"after": "connection refused"}}}
	c := cpuFigures(failed, 10, 11, 1000)
	if c == nil || c.ServerSeconds != -1 || c.ServerPerDelivery != -1 || !near(c.RedisSeconds, 1) ||
		!strings.Contains(c.ServerNotMeasured, "http://b (/metrics after the posts: connection refused)") {
		t.Fatalf("cpuFigures with one instance's scrape failed = %+v, want the servers' not measured, naming http://b and why", c)
	}
	var out strings.Builder
	if err := writeTable(&out, &Result{CPU: c}); err != nil || !strings.Contains(out.String(), "server not measured (1 of 2 instances") {
		t.Errorf("table (%v):\n%s", err, out.String())
	}
	if c := cpuFigures(failed, -1, -1, 1000); c == nil || c.ServerSeconds != -1 || c.ServerNotMeasured == "" {
		t.Errorf("cpuFigures with one instance's scrape failed, no Redis = %+v, want the servers' not measured, said", c)
	}

	// A deployment without /metrics: not reported, as before.
	none := []InstanceMetrics{{URL: "http://a", Errors: map[string]string{"idle": "HTTP 404", "after": "HTTP 404"}}}
	if c := cpuFigures(none, -1, -1, 1000); c != nil {
		t.Errorf("cpuFigures with no /metrics = %+v, want nil", c)
	}
}
