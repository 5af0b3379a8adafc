package web_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"chorus/internal/redistest"
	"chorus/social"
	"chorus/web"
)

// BenchmarkSignedInRead is a signed-in user's read (GET
// /notifications/unread) through one instance, with no limit and under
// the read limit, one request at a time: what the limit adds to a read's
// latency, its Redis round trips (by the instance's metrics; asserted in
// TestLimitRidesWithTheSession) and Redis's CPU.
func BenchmarkSignedInRead(b *testing.B) {
	benchLimited(b, "GET", "/api/v1/notifications/unread", "", http.StatusOK,
		web.Limits{ReadsPerClient: perHour(1 << 30)})
}

// BenchmarkLimitedPost is BenchmarkSignedInRead for a post (by an author
// with no followers) under the post limit, counted in the post's first
// round trip.
func BenchmarkLimitedPost(b *testing.B) {
	benchLimited(b, "POST", "/api/v1/statuses", `{"message":"again"}`, http.StatusCreated,
		web.Limits{PostsPerUser: perHour(1 << 30)})
}

// benchLimited runs one signed-in request again and again, with no limit
// ("limit=none") and under limited ("limit=on").
func benchLimited(b *testing.B, method, path, body string, want int, limited web.Limits) {
	for _, bc := range []struct {
		name   string
		limits web.Limits
	}{
		{"limit=none", web.Limits{}},
		{"limit=on", limited},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b, social.Options{})
			e.limits = bc.limits
			in := e.start()
			ada := in.signUp(b, "ada")
			do := func() {
				req, err := http.NewRequestWithContext(context.Background(), method, in.srv.URL+path, bytes.NewBufferString(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+ada.token)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != want {
					b.Fatalf("%s %s answered %d", method, path, res.StatusCode)
				}
			}
			do() // the route learns its limit, the scripts are loaded
			route := `method="` + method + `",route="` + path + `"`
			trips0 := in.metric(b, "chorus_http_request_redis_round_trips_sum", route)
			cpu0 := redistest.CPU(b, e.rdb)
			n := 0
			for b.Loop() {
				do()
				n++
			}
			cpu := redistest.CPU(b, e.rdb) - cpu0
			trips := in.metric(b, "chorus_http_request_redis_round_trips_sum", route) - trips0
			b.ReportMetric(trips/float64(n), "trips/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(n), "redis-µs/op")
		})
	}
}
