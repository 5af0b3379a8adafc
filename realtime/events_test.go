package realtime

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/protocol"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

func TestWithStreamID(t *testing.T) {
	got := string(withStreamID([]byte(`{"type":"ready","user":{}}`), "abc"))
	if want := `{"stream":"abc","type":"ready","user":{}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	var r protocol.Ready
	if err := json.Unmarshal([]byte(got), &r); err != nil || r.Stream != "abc" || r.Type != protocol.TypeReady {
		t.Fatalf("decoded %+v (%v)", r, err)
	}
}

// An event stream writes each frame as one data line, whatever line breaks
// its JSON holds between tokens, in an event named after its type; a
// status's event carries the newest status id written; the close is a last
// frame, then the end of the connection.
func TestEventStreamWire(t *testing.T) {
	e, lines := pipedEventStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	steps := []struct {
		write func() error
		want  []string
	}{
		{func() error {
			return e.write(deadline, []byte("{\n  \"type\": \"presence\",\r\n  \"online\": true\n}"), 0)
		},
			[]string{"event: presence", `data: {"type":"presence","online":true}`, ""}},
		{func() error { return e.write(deadline, []byte(`{"type":"status","status":{"id":7}}`), 7) },
			[]string{"id: 7", "event: status", `data: {"type":"status","status":{"id":7}}`, ""}},
		// Out of order: the id stays the newest written.
		{func() error { return e.write(deadline, []byte(`{"type":"status","status":{"id":5}}`), 5) },
			[]string{"id: 7", "event: status", `data: {"type":"status","status":{"id":5}}`, ""}},
		{func() error { return e.ping(ctx) }, []string{":", ""}},
		{func() error { return e.close(protocol.CloseTryLater, "too slow") },
			[]string{"event: close", `data: {"type":"close","close_code":1013,"reason":"too slow"}`, ""}},
	}
	for i, step := range steps {
		errc := make(chan error, 1)
		go func() { errc <- step.write() }()
		for _, want := range step.want {
			if got := <-lines; got != want {
				t.Fatalf("step %d: line %q, want %q", i, got, want)
			}
		}
		if err := <-errc; err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if _, ok := <-lines; ok {
		t.Fatal("the connection is still open after the close")
	}
	if err := e.write(deadline, []byte(`{}`), 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a write after the close: %v, want an error", err)
	}
}

func TestFrameType(t *testing.T) {
	for _, tc := range []struct{ frame, want string }{
		{`{"type":"status","status":{"id":1}}`, "status"},
		// Keys in any order, and a nested type that is not the frame's.
		{`{"notification":{"type":"followed"},"type":"notification"}`, "notification"},
		{`{"online":true, "type" : "presence"}`, "presence"},
		{`{"type":"bad\nname"}`, "message"},
		{`{"type":"Status"}`, "message"},
		{`{"id":3}`, "message"},
		{`[1]`, "message"},
	} {
		if got := string(frameType([]byte(tc.frame))); got != tc.want {
			t.Errorf("frameType(%s) = %q, want %q", tc.frame, got, tc.want)
		}
	}
}

// Frames posted for a stream by REST are acted on in the order they came,
// as a stream acts on those it reads: a watch posted after a resume is
// answered after the resume's statuses, though the resume waits on Redis
// for its budget (here, long).
func TestPostedFramesInOrder(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Client(t)
	e := newEnv(t, envOptions{rdb: rdb, hub: Options{ResumeLimit: redis_rate.PerMinute(100)}})
	author, reader := e.signUp("author"), e.signUp("reader")
	e.follow(reader, author)
	st := e.post(author, "before the stream")
	s := e.connect(reader)
	budget := resumeKey(e.hub.opts.Prefix, reader.id)
	rdb.AddHook(&eachCommand{do: func(c redis.Cmder) error {
		if slices.ContainsFunc(c.Args(), func(a any) bool { k, _ := a.(string); return strings.HasSuffix(k, budget) }) {
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	}})

	zero := json.RawMessage("0")
	e.hub.mu.RLock()
	u := e.hub.users[e.hub.bus.UserChannel(reader.id)]
	for c := range u.conns {
		for _, f := range []protocol.ClientFrame{
			{Type: protocol.TypeResume, After: &zero},
			{Type: protocol.TypeWatch, Timeline: protocol.TimelineGlobal},
		} {
			e.hub.posted(u, event{Stream: c.id, Frame: &f})
		}
	}
	e.hub.mu.RUnlock()
	if f := s.next(10 * time.Second); f.Type != protocol.TypeStatus || f.Status.ID != st.ID {
		t.Fatalf("the stream got %v first, want the resume's status %d, then watching", f, st.ID)
	}
	if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching {
		t.Fatalf("the stream got %v after the resume's status, want watching", f)
	}
}
