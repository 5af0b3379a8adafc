package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"chorus/protocol"

	"github.com/coder/websocket"
)

// streamConn is one held stream, as the shard reads and closes it: a
// *websocket.Conn, or an eventConn (-sse).
type streamConn interface {
	Read(ctx context.Context) (websocket.MessageType, []byte, error)
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	Close(code websocket.StatusCode, reason string) error
	CloseNow() error
}

// eventConn is a stream held as Server-Sent Events: GET /api/v1/stream
// with Accept: text/event-stream. It sends nothing: the server's
// keepalive comments keep it online.
type eventConn struct {
	body   io.ReadCloser
	lines  *bufio.Scanner
	cancel context.CancelFunc
}

var _ streamConn = (*eventConn)(nil)

// dialEvents opens spec's stream as events and waits for its response's
// headers within timeout; the stream lives on ctx.
func dialEvents(ctx context.Context, client *http.Client, spec connSpec, timeout time.Duration) (*eventConn, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http"+strings.TrimPrefix(spec.URL, "ws"), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+spec.Token)
	timer := time.AfterFunc(timeout, cancel)
	res, err := client.Do(req)
	timer.Stop()
	if err != nil {
		cancel()
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		cancel()
		return nil, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(nil, 1<<20)
	return &eventConn{body: res.Body, lines: lines, cancel: cancel}, nil
}

// Read returns the next event's frame; the server's close frame as the
// WebSocket close error it stands for.
func (c *eventConn) Read(context.Context) (websocket.MessageType, []byte, error) {
	var data []byte
	for c.lines.Scan() {
		line := c.lines.Bytes()
		switch {
		case len(line) == 0 && data != nil:
			var end protocol.Close
			if bytes.HasPrefix(data, []byte(`{"type":"close"`)) && json.Unmarshal(data, &end) == nil {
				return 0, nil, websocket.CloseError{Code: websocket.StatusCode(end.Code), Reason: end.Reason}
			}
			return websocket.MessageText, data, nil
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[len("data: "):]...)
		}
	}
	if err := c.lines.Err(); err != nil {
		return 0, nil, err
	}
	return 0, nil, io.EOF
}

// Write sends nothing: an event stream's client has no frames to send on it.
func (c *eventConn) Write(context.Context, websocket.MessageType, []byte) error { return nil }

// Close ends the stream from this side.
func (c *eventConn) Close(websocket.StatusCode, string) error { return c.CloseNow() }

// CloseNow ends the stream from this side.
func (c *eventConn) CloseNow() error {
	c.cancel()
	return c.body.Close()
}
