package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"chorus/social"
	"chorus/web"

	"github.com/go-redis/redis_rate/v10"
)

// GET /stream has two limits, per address and per user, each with a gate:
// a client far over either is refused in process, whichever the route
// learnt first, without asking Redis.
func TestStreamOpenGatesBothLimits(t *testing.T) {
	const burst, flood = 2, 100
	tight := redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: burst}
	loose := redis_rate.Limit{Rate: 1000, Period: time.Hour, Burst: 1000}
	for _, tc := range []struct {
		name   string
		limits web.Limits
	}{
		{"per user", web.Limits{StreamOpensPerUser: tight, StreamOpensPerAddress: loose}},
		{"per address", web.Limits{StreamOpensPerUser: loose, StreamOpensPerAddress: tight}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, social.Options{})
			e.limits = tc.limits
			in := e.start()
			flooder := in.signUp(t, "flooder")
			for i := range flood {
				res := flooder.do("GET", "/api/v1/stream", nil) // no upgrade: 426 once admitted
				if i >= burst && res.Status != http.StatusTooManyRequests {
					t.Fatalf("open %d: %d %s, want 429", i+1, res.Status, res.Body)
				}
			}
			bites := web.DefaultGateFactor * burst
			if got := in.metric(t, "chorus_rate_limited_in_process_total", ""); got < float64(flood-bites) {
				t.Errorf("the in-process gates refused %v of the %d stream opens past the gate (%d); the rest cost Redis", got, flood-bites, bites)
			}
		})
	}
}

// HEAD of the stream, asking for events, is answered with the headers a GET
// is, and opens nothing: it counts toward no stream-open limit.
func TestStreamHeadOpensNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	once := redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: 1}
	e.limits = web.Limits{StreamOpensPerUser: once, StreamOpensPerAddress: once}
	in := e.start()
	ann := in.signUp(t, "ann_head")

	for range 3 * web.DefaultGateFactor {
		req := ann.eventsRequest(t.Context(), "")
		req.Method = http.MethodHead
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("HEAD: %d, want 200", res.StatusCode)
		}
		for name, want := range map[string]string{
			"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
		} {
			if got := res.Header.Get(name); got != want {
				t.Fatalf("HEAD: %s = %q, want %q", name, got, want)
			}
		}
		if !res.Close {
			t.Fatal("HEAD: no Connection: close")
		}
	}
	if res := ann.do("HEAD", "/api/v1/stream", nil); res.Status != http.StatusUpgradeRequired {
		t.Fatalf("HEAD of neither a handshake nor events: %d, want 426", res.Status)
	}
	// The one open the limits allow is still there.
	ann.openEvents("")
}

// A stream's id in another form than the one it was given (upper case,
// braces, a urn:uuid: prefix) names the same stream, and an Accept of
// event streams in any case is one.
func TestStreamNamesInAnyForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in := e.start()
	ann := in.signUp(t, "ann_forms")
	bob := in.signUp(t, "bob_forms")
	bob.follow(ann.login)
	first := ann.post("before the streams").ID
	for _, form := range []func(string) string{
		strings.ToUpper,
		func(id string) string { return "{" + id + "}" },
		func(id string) string { return "urn:uuid:" + id },
	} {
		bs := bob.openEvents("", "Accept", "Text/Event-Stream")
		name := form(bs.streamID())
		bob.must(http.StatusAccepted, "POST", "/api/v1/stream/"+url.PathEscape(name),
			map[string]any{"type": "resume", "after": 0}, nil)
		if ev := bs.nextOf("status", 10*time.Second); ev.frame.Status.ID != first {
			t.Fatalf("a resume posted to %q: %s, want status %d", name, ev.raw, first)
		}
		bs.drop()
	}
}
