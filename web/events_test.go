package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
	"chorus/web"
)

// statusEvents returns the ids of the status events among evs, and fails
// unless each carries its status's id as its event id.
func statusEvents(tb testing.TB, evs []event) []int64 {
	tb.Helper()
	var got []int64
	for _, ev := range evs {
		if ev.frame.Type != "status" {
			continue
		}
		if ev.id != strconv.FormatInt(ev.frame.Status.ID, 10) {
			tb.Fatalf("status %d came with event id %q", ev.frame.Status.ID, ev.id)
		}
		got = append(got, ev.frame.Status.ID)
	}
	return got
}

// eventsUntil returns the events up to and including the status event of id.
func (s *events) eventsUntil(id int64, within time.Duration) []event {
	s.tb.Helper()
	deadline := time.Now().Add(within)
	var all []event
	for {
		ev := s.next(time.Until(deadline))
		all = append(all, ev)
		if ev.frame.Type == "status" && ev.frame.Status.ID == id {
			return all
		}
	}
}

func TestEventStreamAcrossInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	a, b := e.start(), e.start()
	ann := a.signUp(t, "ann_sse")
	bob := b.signUp(t, "bob_sse")
	befriend(ann, bob)

	// Bob reads events on b; Ann posts on a.
	bs := bob.openEvents("")
	if bs.ready.id != "" {
		t.Fatalf("ready came with event id %q", bs.ready.id)
	}
	bs.streamID()
	st := ann.post("over the wire, without a socket")
	got := bs.nextOf("status", 10*time.Second)
	if got.frame.Status.ID != st.ID || got.id != strconv.FormatInt(st.ID, 10) {
		t.Fatalf("got status %d with id %q, want %d", got.frame.Status.ID, got.id, st.ID)
	}

	// An open event stream is online: Ann's on a tells Bob, and its end
	// tells him she left.
	as := ann.openEvents("")
	if p := bs.nextOf("presence", 10*time.Second); !p.frame.Online || p.frame.login(t) != "ann_sse" {
		t.Fatalf("presence %s, want ann_sse online", p.raw)
	}
	online := bob.must(http.StatusOK, "GET", "/api/v1/friends/online", nil, nil)
	if !strings.Contains(string(online.Body), `"ann_sse"`) {
		t.Fatalf("friends online %s, want ann_sse", online.Body)
	}
	as.drop()
	if p := bs.nextOf("presence", 15*time.Second); p.frame.Online {
		t.Fatalf("presence %s, want ann_sse offline", p.raw)
	}
}

func TestEventStreamResumesAfterDrop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	a, b := e.start(), e.start()
	ann := a.signUp(t, "ann_resume")
	bob := b.signUp(t, "bob_resume")
	bob.follow(ann.login)

	bs := bob.openEvents("")
	var before []int64
	for i := range 3 {
		before = append(before, ann.post(fmt.Sprintf("before %d", i)).ID)
	}
	if got := statusEvents(t, bs.eventsUntil(before[2], 10*time.Second)); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("live statuses %v, want %v", got, before)
	}
	bs.drop()

	var missed []int64
	for i := range 4 {
		missed = append(missed, ann.post(fmt.Sprintf("missed %d", i)).ID)
	}
	// Back on the other instance, giving the last event id it saw: the
	// missed statuses, oldest first, then live ones, each once.
	again := b.as(bob)
	again.base = a.srv.URL
	rs := again.openEvents("", "Last-Event-ID", strconv.FormatInt(before[2], 10))
	after := ann.post("after").ID
	got := statusEvents(t, rs.eventsUntil(after, 10*time.Second))
	if want := append(missed, after); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the drop: %v, want %v (no gap, no duplicate)", got, want)
	}

	// A new EventSource cannot set headers: the query's after does it.
	rs.drop()
	qs := bob.openEvents("?after=" + strconv.FormatInt(missed[1], 10))
	last := ann.post("last").ID
	got = statusEvents(t, qs.eventsUntil(last, 10*time.Second))
	if want := []int64{missed[2], missed[3], after, last}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after=%d: %v, want %v", missed[1], got, want)
	}
}

func TestEventStreamPostedFrames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	a, b := e.start(), e.start()
	ann := a.signUp(t, "ann_posted")
	bob := a.signUp(t, "bob_posted")
	bs := bob.openEvents("")
	id := bs.streamID()
	path := "/api/v1/stream/" + id

	// A watch posted to the other instance reaches the stream on a.
	onB := b.as(bob)
	onB.must(http.StatusAccepted, "POST", path, map[string]string{"type": "watch", "timeline": "global"}, nil)
	if w := bs.nextOf("watching", 10*time.Second); w.frame.Timeline != "global" {
		t.Fatalf("watching %s", w.raw)
	}
	st := ann.post("for everyone")
	if g := bs.nextOf("global_status", 10*time.Second); g.frame.Status.ID != st.ID {
		t.Fatalf("global_status %s, want %d", g.raw, st.ID)
	}
	// And a resume posted on a, the stream's own instance.
	bob.follow(ann.login)
	bob.must(http.StatusAccepted, "POST", path, map[string]any{"type": "resume", "after": 0}, nil)
	if s := bs.nextOf("status", 10*time.Second); s.frame.Status.ID != st.ID {
		t.Fatalf("resumed %s, want status %d", s.raw, st.ID)
	}
	bob.must(http.StatusAccepted, "POST", path, map[string]string{"type": "heartbeat"}, nil)

	// Bad frames are refused as the WebSocket refuses them, but answered.
	for _, tc := range []struct {
		body string
		code string
	}{
		{`{"type":"resume","after":-1}`, "invalid_resume"},
		{`{"type":"resume"}`, "invalid_resume"},
		{`{"type":"watch","timeline":"home"}`, "invalid_watch"},
		{`{"type":"dance"}`, "unknown_type"},
		{`[1]`, "invalid_json"},
		{`null`, "invalid_json"},
		{`{"type":"heartbeat","x":"\ud800"}`, "invalid_json"},
	} {
		r := onB.do("POST", path, tc.body)
		if r.Status != http.StatusBadRequest || r.errorCode(t) != tc.code {
			t.Errorf("POST %s: %d %s, want 400 %s", tc.body, r.Status, r.Body, tc.code)
		}
	}
	// A user with no stream anywhere: 404.
	r := ann.do("POST", path, map[string]string{"type": "heartbeat"})
	if r.Status != http.StatusNotFound || r.errorCode(t) != "unknown_stream" {
		t.Fatalf("ann posting to bob's stream: %d %s, want 404 unknown_stream", r.Status, r.Body)
	}
	// An id that is not a stream's, of a user with streams: 404.
	if r := onB.do("POST", "/api/v1/stream/"+strings.Repeat("x", 2000), map[string]string{"type": "heartbeat"}); r.Status != http.StatusNotFound || r.errorCode(t) != "unknown_stream" {
		t.Fatalf("posting to a made-up stream id: %d %s, want 404 unknown_stream", r.Status, r.Body)
	}
	if r := a.anon(t).do("POST", path, map[string]string{"type": "heartbeat"}); r.Status != http.StatusUnauthorized {
		t.Fatalf("anonymous post: %d %s, want 401", r.Status, r.Body)
	}
}

func TestEventStreamRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in := e.start()
	ann := in.signUp(t, "ann_refused")

	in.anon(t).eventsRefused("", http.StatusUnauthorized, "not_signed_in")
	ann.eventsRefused("", http.StatusForbidden, "forbidden_origin", "Origin", "https://evil.example")
	for _, bad := range []string{"x", "-1", "1.5", "+3", "99999999999999999999"} {
		ann.eventsRefused("", http.StatusBadRequest, "invalid_last_event_id", "Last-Event-ID", bad)
		ann.eventsRefused("?after="+bad, http.StatusBadRequest, "invalid_after")
	}
	// Nothing of it showed Ann online.
	if n, err := in.rdb.Exists(context.Background(), in.userKey("conns", ann.id)).Result(); err != nil || n != 0 {
		t.Fatalf("refused streams left a registry (%d, %v)", n, err)
	}
	// Her own origin opens it.
	ann.openEvents("", "Origin", in.srv.URL)
}

func TestEventStreamSlowReaderIsClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.realtime.QueueSize = 8
	in := e.start()
	slow := in.signUp(t, "slow_sse")

	// The slow client reads nothing: its socket buffers fill, its writer
	// blocks, its queue overflows.
	s := slow.openEventsNoRead("")
	big := fmt.Sprintf(`{"type":"status","status":{"id":%%d,"uid":1,"login":"x","message":"%s","posted":"2026-01-01T00:00:00Z"}}`, strings.Repeat("x", 60<<10))
	for i := 1; i <= 2000 && in.hub.Stats.SlowClosed.Load() == 0; i++ {
		in.publish(t, in.social.UserChannel(slow.id), fmt.Sprintf(big, i))
	}
	testio.Eventually(t, 10*time.Second, func() string {
		if n := in.hub.Stats.SlowClosed.Load(); n != 1 {
			return fmt.Sprintf("slow closes = %d, want 1", n)
		}
		return ""
	})
	// Reading what it has, the slow one finds the close: 1013, and the
	// end of the response.
	s.read()
	evs := s.ended(30 * time.Second)
	if len(evs) == 0 || evs[0].frame.Type != "ready" {
		t.Fatalf("no ready first among %d events", len(evs))
	}
	if last := evs[len(evs)-1]; last.frame.Type != "close" || last.code != 1013 {
		t.Fatalf("last event %.200s, want a close with 1013", last.raw)
	}
}

// The frames posted for streams are limited per user, on every instance
// together, like the rest of the API; an event stream counts among the
// streams open, and as one of the user's streams.
func TestEventStreamLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{StreamSendsPerUser: perHour(2)}
	e.presence.MaxConnsPerUser = 2
	one, two := e.start(), e.start()
	ann := one.signUp(t, "ann_limits")
	s := ann.openEvents("")
	path := "/api/v1/stream/" + s.streamID()
	heartbeat := map[string]string{"type": "heartbeat"}
	ann.must(http.StatusAccepted, "POST", path, heartbeat, nil)
	two.as(ann).must(http.StatusAccepted, "POST", path, heartbeat, nil)
	refused(t, "a third frame", ann.do("POST", path, heartbeat))
	if got := one.metric(t, "chorus_rate_limited_total", `limit="stream_sends"`); got != 1 {
		t.Fatalf("chorus_rate_limited_total{limit=stream_sends} = %v, want 1", got)
	}
	if got := one.metric(t, "chorus_event_streams_open", ""); got != 1 {
		t.Fatalf("chorus_event_streams_open = %v, want 1", got)
	}

	// A WebSocket and an event stream are the user's two streams. Idle,
	// neither holds a goroutine reading it: the poller waits for both; the
	// event stream's client leaving is seen all the same.
	ann.connect()
	ann.eventsRefused("", http.StatusTooManyRequests, "too_many_user_streams")
	testio.Eventually(t, 10*time.Second, func() string {
		if got := one.metric(t, "chorus_stream_readers", ""); got != 0 {
			return fmt.Sprintf("chorus_stream_readers = %v with two idle streams, want 0", got)
		}
		return ""
	})
	s.drop()
	testio.Eventually(t, 10*time.Second, func() string {
		if got := one.metric(t, "chorus_event_streams_open", ""); got != 0 {
			return fmt.Sprintf("chorus_event_streams_open = %v after the drop, want 0", got)
		}
		return ""
	})
	ann.openEvents("")
}

// An event stream ends as a WebSocket does, with the close code and reason
// in its last frame: a sign-out on another instance closes it with 1008.
func TestEventStreamClosedBySignOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	a, b := e.start(), e.start()
	ann := a.signUp(t, "ann_signout")
	s := ann.openEvents("")
	b.as(ann).must(http.StatusNoContent, "DELETE", "/api/v1/sessions/current", nil, nil)
	evs := s.ended(20 * time.Second)
	if len(evs) == 0 {
		t.Fatal("no close frame before the end")
	}
	if last := evs[len(evs)-1]; last.frame.Type != "close" || last.code != 1008 || last.reason != "signed out" {
		t.Fatalf("last event %s, want a close with 1008, signed out", last.raw)
	}
	if got := a.hub.Stats.SessionClosed.Load(); got != 1 {
		t.Fatalf("SessionClosed = %d, want 1", got)
	}
}
