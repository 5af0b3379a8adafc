package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A server that stalls while -max-in-flight posts await their answers
// holds the schedule back: the posts due meanwhile go out late, in a
// burst, and answer fast. Their latencies from the send leave the stall
// out; those from the due time show it, and the schedule's lag over
// -max-lag fails the run.
func TestLaggingScheduleShows(t *testing.T) {
	t.Parallel()
	const stall = time.Second
	cfg := &config{Rate: 50, Duration: time.Second, Authors: 1, MaxInFlight: 2, MaxLag: 100 * time.Millisecond}
	release := make(chan struct{})
	time.AfterFunc(stall, func() { close(release) })
	post := func(ctx context.Context, k, _ int) (int64, error) {
		if k < cfg.MaxInFlight {
			<-release // the server stalls on the first posts
		}
		return int64(k + 1), nil
	}
	recs, sched := runPosts(context.Background(), cfg, 1, post, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(recs) != 50 || len(sched.Answered) != 50 || len(sched.AnsweredFromDue) != 50 {
		t.Fatalf("%d posts, %d answered, %d from due; want 50 each", len(recs), len(sched.Answered), len(sched.AnsweredFromDue))
	}
	if fromSend, fromDue := summarize(sched.Answered), summarize(sched.AnsweredFromDue); fromSend.P50 > 100 || fromDue.P50 < 300 || fromDue.P99 < 800 {
		t.Errorf("answers from the send %v, from the due time %v; want the stall shown from the due time alone", fromSend, fromDue)
	}
	if sched.MaxLag < 800*time.Millisecond {
		t.Errorf("schedule lag up to %s, want about the stall (%s)", sched.MaxLag, stall)
	}

	// Each post delivered on the one follower's connection right after its
	// answer: from the due time, the delivery counts the stall too.
	g := buildGraph(1, 1, 1)
	col := newCollector(1)
	col.readyAt[0] = recs[0].Due - int64(time.Second)
	var m message
	for k, r := range recs {
		m.Frames = append(m.Frames, delivery{Conn: 0, Seq: int64(k), ID: r.StatusID, At: r.Answered})
	}
	if err := col.handle(m); err != nil {
		t.Fatal(err)
	}
	o := col.outcome(recs, g)
	if fromSend, fromDue := summarize(o.Latencies), summarize(o.LatenciesFromDue); o.Delivered != 50 || fromSend.P50 > 100 || fromDue.P50 < 300 || fromDue.P99 < 800 {
		t.Errorf("%d delivered; post→delivery %v, from the due time %v; want 50, the stall shown from the due time alone", o.Delivered, fromSend, fromDue)
	}

	res := &Result{Params: Params{MaxLagMS: float64(cfg.MaxLag) / 1e6}}
	fill(res, col, recs, sched, g, 1)
	p := strings.Join(res.Problems(), "; ")
	if !strings.Contains(p, "over -max-lag 100.0 ms") {
		t.Errorf("problems %q, want the schedule's lag over -max-lag", p)
	}
	var out strings.Builder
	if err := writeTable(&out, res); err != nil || !strings.Contains(out.String(), "from due time") || !strings.Contains(out.String(), "FAIL: schedule lag") {
		t.Errorf("table (%v):\n%s", err, out.String())
	}
	res.Params.MaxLagMS = 0 // -max-lag 0: no bound
	if p := res.Problems(); len(p) != 0 {
		t.Errorf("problems with no bound: %v", p)
	}
}
