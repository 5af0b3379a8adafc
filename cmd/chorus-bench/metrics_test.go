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
