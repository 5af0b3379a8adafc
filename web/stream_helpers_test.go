package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// frame is any frame the server sends.
type frame struct {
	Type                string          `json:"type"`
	User                json.RawMessage `json:"user"`
	HeartbeatIntervalMS int64           `json:"heartbeat_interval_ms"`
	OnlineFriends       []struct {
		User struct {
			ID    int64  `json:"id"`
			Login string `json:"login"`
		} `json:"user"`
		LastSeen time.Time `json:"last_seen"`
	} `json:"online_friends"`
	Status   *statusJSON `json:"status"`
	ID       int64       `json:"id"`
	Online   bool        `json:"online"`
	LastSeen time.Time   `json:"last_seen"`
	Code     string      `json:"code"`
	Message  string      `json:"message"`
	// YouFollow is the followed frame's.
	YouFollow *bool `json:"you_follow"`
	// The notification frames' and the ready frame's count.
	UnreadNotifications int64             `json:"unread_notifications"`
	Notification        *notificationJSON `json:"notification"`
	LastRead            *int64            `json:"last_read"`
	// Timeline is the watching frame's.
	Timeline string `json:"timeline"`
	// Kind and On are the relation frame's; ReplyTo status_deleted's.
	Kind    string `json:"kind"`
	On      *bool  `json:"on"`
	ReplyTo int64  `json:"reply_to"`
}

func (f frame) login(tb testing.TB) string {
	tb.Helper()
	var u struct{ Login string }
	if err := json.Unmarshal(f.User, &u); err != nil {
		tb.Fatalf("user of %s frame: %v", f.Type, err)
	}
	return u.Login
}

// stream is a test's WebSocket client: a goroutine reads every frame into
// frames until the connection ends, then closeErr holds why.
type stream struct {
	tb       testing.TB
	ws       *websocket.Conn
	frames   chan frame
	done     chan struct{}
	closeErr error
	ready    frame
}

func dialURL(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/api/v1/stream" }

// connect opens a stream as c and waits for its ready frame.
func (c *client) connect() *stream {
	c.tb.Helper()
	s := c.connectNoRead()
	s.ready = s.next(5 * time.Second)
	if s.ready.Type != "ready" {
		c.tb.Fatalf("first frame is %+v, want ready", s.ready)
	}
	return s
}

func (c *client) connectNoRead() *stream {
	c.tb.Helper()
	ws, res, err := c.dial(nil)
	if err != nil {
		c.tb.Fatalf("dial as %s: %v (%v)", c.login, err, res)
	}
	s := &stream{tb: c.tb, ws: ws, frames: make(chan frame, 10000), done: make(chan struct{})}
	go s.readAll()
	c.tb.Cleanup(func() { ws.CloseNow() })
	return s
}

// streamRefused dials as c and fails unless the stream is refused before its
// upgrade with status, the API error code and, unless empty, retryAfter.
func streamRefused(tb testing.TB, c *client, status int, code, retryAfter string) {
	tb.Helper()
	ws, res, err := c.dial(nil)
	if err == nil {
		ws.CloseNow()
		tb.Fatalf("stream opened, want %d %s", status, code)
	}
	if res == nil || res.StatusCode != status {
		tb.Fatalf("dial: %v (%v), want %d %s", err, res, status, code)
	}
	body, _ := io.ReadAll(res.Body)
	r := response{Status: res.StatusCode, Header: res.Header, Body: body}
	if got := r.errorCode(tb); got != code {
		tb.Fatalf("refused with %q (%s), want %q", got, body, code)
	}
	if got := res.Header.Get("Retry-After"); retryAfter != "" && got != retryAfter {
		tb.Fatalf("Retry-After = %q, want %q", got, retryAfter)
	}
}

func (c *client) dial(header http.Header) (*websocket.Conn, *http.Response, error) {
	if header == nil {
		header = http.Header{}
	}
	if c.token != "" {
		header.Set("Authorization", "Bearer "+c.token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(ctx, dialURL(c.base), &websocket.DialOptions{HTTPHeader: header})
	if ws != nil {
		ws.SetReadLimit(1 << 20)
	}
	return ws, res, err
}

func (s *stream) readAll() {
	defer close(s.done)
	for {
		_, data, err := s.ws.Read(context.Background())
		if err != nil {
			s.closeErr = err
			return
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			s.closeErr = err
			return
		}
		s.frames <- f
	}
}

// next returns the next frame, failing the test after within.
func (s *stream) next(within time.Duration) frame {
	s.tb.Helper()
	select {
	case f := <-s.frames:
		return f
	case <-s.done:
		select {
		case f := <-s.frames:
			return f
		default:
		}
		s.tb.Fatalf("stream ended: %v", s.closeErr)
	case <-time.After(within):
		s.tb.Fatalf("no frame within %s", within)
	}
	return frame{}
}

// nextOf skips frames until one of type typ.
func (s *stream) nextOf(typ string, within time.Duration) frame {
	s.tb.Helper()
	deadline := time.Now().Add(within)
	for {
		f := s.next(time.Until(deadline))
		if f.Type == typ {
			return f
		}
	}
}

// quiet checks that no frame of type typ comes within d.
func (s *stream) quiet(typ string, d time.Duration) {
	s.tb.Helper()
	deadline := time.After(d)
	for {
		select {
		case f := <-s.frames:
			if f.Type == typ {
				s.tb.Fatalf("unexpected %s frame %+v", typ, f)
			}
		case <-deadline:
			return
		}
	}
}

func (s *stream) send(v any) {
	s.tb.Helper()
	raw, _ := json.Marshal(v)
	s.sendRaw(websocket.MessageText, raw)
}

func (s *stream) sendRaw(typ websocket.MessageType, raw []byte) {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.ws.Write(ctx, typ, raw); err != nil {
		s.tb.Fatalf("write: %v", err)
	}
}

// closedWith waits for the server to close the stream and returns the code.
func (s *stream) closedWith(within time.Duration) websocket.StatusCode {
	s.tb.Helper()
	select {
	case <-s.done:
		return websocket.CloseStatus(s.closeErr)
	case <-time.After(within):
		s.tb.Fatalf("stream still open after %s", within)
	}
	return 0
}

func (s *stream) close() {
	s.ws.Close(websocket.StatusNormalClosure, "")
	<-s.done
}

// befriend makes a and b follow each other.
func befriend(a, b *client) {
	a.follow(b.login)
	b.follow(a.login)
}
