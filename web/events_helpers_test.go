package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// event is one Server-Sent Event of a stream: its id field, if any, and
// its data, a frame.
type event struct {
	id    string
	name  string // the event field: the frame's type
	frame frame
	raw   string
	// Close is the close frame's: its code and reason.
	code   int
	reason string
}

// events is a test's event-stream client, a real HTTP client: a goroutine
// reads every event into ch until the response ends.
type events struct {
	tb     testing.TB
	res    *http.Response
	ch     chan event
	done   chan struct{}
	cancel context.CancelFunc
	ready  event
	// comments counts the keepalive comments read.
	comments chan struct{}
}

// eventsRequest is a GET of c's stream that accepts events, with the
// header pairs given.
func (c *client) eventsRequest(ctx context.Context, path string, header ...string) *http.Request {
	c.tb.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/stream"+path, nil)
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// openEvents opens c's stream as events (path: a query, or ""), and waits
// for its ready frame.
func (c *client) openEvents(path string, header ...string) *events {
	c.tb.Helper()
	s := c.openEventsNoRead(path, header...)
	s.read()
	s.ready = s.next(10 * time.Second)
	if s.ready.frame.Type != "ready" {
		c.tb.Fatalf("first event is %q, want ready", s.ready.raw)
	}
	return s
}

// openEventsNoRead opens c's stream as events, and reads none until read.
func (c *client) openEventsNoRead(path string, header ...string) *events {
	c.tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res, err := http.DefaultClient.Do(c.eventsRequest(ctx, path, header...))
	if err != nil {
		cancel()
		c.tb.Fatalf("open events as %s: %v", c.login, err)
	}
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		cancel()
		c.tb.Fatalf("open events as %s: %d %s", c.login, res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		c.tb.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	s := &events{tb: c.tb, res: res, ch: make(chan event, 10000), done: make(chan struct{}), cancel: cancel, comments: make(chan struct{}, 100)}
	c.tb.Cleanup(s.drop)
	return s
}

// read starts reading the stream's events.
func (s *events) read() { go s.readAll() }

// eventsRefused opens c's stream as events and fails unless it is refused
// with status and the API error code.
func (c *client) eventsRefused(path string, status int, code string, header ...string) {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(c.eventsRequest(ctx, path, header...))
	if err != nil {
		c.tb.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	r := response{Status: res.StatusCode, Header: res.Header, Body: body}
	if res.StatusCode != status {
		c.tb.Fatalf("events answered %d %s, want %d %s", res.StatusCode, body, status, code)
	}
	if got := r.errorCode(c.tb); got != code {
		c.tb.Fatalf("refused with %q (%s), want %q", got, body, code)
	}
}

// readAll parses the response as Server-Sent Events.
func (s *events) readAll() {
	defer close(s.done)
	defer close(s.ch)
	sc := bufio.NewScanner(s.res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var ev event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data == nil {
				continue
			}
			ev.raw = strings.Join(data, "\n")
			if err := json.Unmarshal([]byte(ev.raw), &ev.frame); err != nil {
				s.tb.Errorf("event data %q: %v", ev.raw, err)
			}
			if ev.name != ev.frame.Type {
				s.tb.Errorf("event %q carries a %q frame", ev.name, ev.frame.Type)
			}
			if ev.frame.Type == "close" {
				var c struct {
					Code   int    `json:"close_code"`
					Reason string `json:"reason"`
				}
				_ = json.Unmarshal([]byte(ev.raw), &c)
				ev.code, ev.reason = c.Code, c.Reason
			}
			s.ch <- ev
			ev, data = event{}, nil
		case strings.HasPrefix(line, ":"):
			select {
			case s.comments <- struct{}{}:
			default:
			}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		default:
			s.tb.Errorf("event line %q", line)
		}
	}
}

// next returns the next event, failing the test after within.
func (s *events) next(within time.Duration) event {
	s.tb.Helper()
	select {
	case ev, ok := <-s.ch:
		if !ok {
			s.tb.Fatal("event stream ended")
		}
		return ev
	case <-time.After(within):
		s.tb.Fatalf("no event within %v", within)
	}
	return event{}
}

// nextOf returns the next event whose frame is of typ, skipping others.
func (s *events) nextOf(typ string, within time.Duration) event {
	s.tb.Helper()
	deadline := time.Now().Add(within)
	for {
		ev := s.next(time.Until(deadline))
		if ev.frame.Type == typ {
			return ev
		}
	}
}

// streamID is the stream's id, from its ready frame.
func (s *events) streamID() string {
	s.tb.Helper()
	var r struct {
		Stream string `json:"stream"`
	}
	if err := json.Unmarshal([]byte(s.ready.raw), &r); err != nil || r.Stream == "" {
		s.tb.Fatalf("ready frame %s names no stream", s.ready.raw)
	}
	return r.Stream
}

// ended waits for the response to end and returns every event before.
func (s *events) ended(within time.Duration) []event {
	s.tb.Helper()
	var all []event
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-s.ch:
			if !ok {
				return all
			}
			all = append(all, ev)
		case <-deadline:
			s.tb.Fatalf("event stream still open after %v", within)
		}
	}
}

// drop ends the client's side of the stream, as a network drop would.
func (s *events) drop() {
	s.cancel()
	s.res.Body.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second): // never read
	}
}
