package web_test

import (
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
// latency. Its round trips are counted in TestLimitRidesWithTheSession.
func BenchmarkSignedInRead(b *testing.B) {
	for _, bc := range []struct {
		name   string
		limits web.Limits
	}{
		{"limit=none", web.Limits{}},
		{"limit=read", web.Limits{ReadsPerClient: perHour(1 << 30)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b, social.Options{})
			e.limits = bc.limits
			in := e.start()
			ada := in.signUp(b, "ada")
			url := in.srv.URL + "/api/v1/notifications/unread"
			read := func() {
				req, err := http.NewRequestWithContext(context.Background(), "GET", url, nil)
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+ada.token)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("read answered %d", res.StatusCode)
				}
			}
			read() // the route learns its limit, the scripts are loaded
			const route = `method="GET",route="/api/v1/notifications/unread"`
			trips0 := in.metric(b, "chorus_http_request_redis_round_trips_sum", route)
			cpu0 := redistest.CPU(b, e.rdb)
			n := 0
			for b.Loop() {
				read()
				n++
			}
			cpu := redistest.CPU(b, e.rdb) - cpu0
			trips := in.metric(b, "chorus_http_request_redis_round_trips_sum", route) - trips0
			b.ReportMetric(trips/float64(n), "trips/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(n), "redis-µs/op")
		})
	}
}
