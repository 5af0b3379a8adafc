package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A stop's timeout bounds the whole wait: shards that never end after the
// first late one are not waited on for ever.
func TestHoldersStopTimeoutCoversEveryShard(t *testing.T) {
	t.Parallel()
	h := &holders{errs: make(chan error, 1)}
	for range 3 {
		h.add(func() {}, make(chan struct{}), nil) // never ends
	}
	errc := make(chan error, 1)
	go func() { errc <- h.stop(100 * time.Millisecond) }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "3 of 3 shards did not close") {
			t.Errorf("stop = %v, want the three shards late", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stop still waiting 30s after its 100ms timeout")
	}
}

// stuckConn is a stream whose closing handshake never ends: only CloseNow
// ends its reader.
type stuckConn struct {
	done chan struct{} // the reader's, closed by CloseNow
	once sync.Once
}

func (c *stuckConn) Read(context.Context) (websocket.MessageType, []byte, error) {
	return 0, nil, nil
}
func (c *stuckConn) Write(context.Context, websocket.MessageType, []byte) error { return nil }
func (c *stuckConn) Close(websocket.StatusCode, string) error                   { select {} }
func (c *stuckConn) CloseNow() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

// A shard's wait for its connections' closing handshakes is one deadline
// for all: each connection left after it is cut, not only the first.
func TestShardCloseCutsEveryStuckConnection(t *testing.T) {
	t.Parallel()
	s := &shard{quit: make(chan struct{})}
	for range 3 {
		done := make(chan struct{})
		s.conns = append(s.conns, &benchConn{ws: &stuckConn{done: done}, done: done, hb: time.AfterFunc(time.Hour, func() {})})
	}
	closed := make(chan struct{})
	go func() {
		s.closeAll(100 * time.Millisecond)
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("closeAll still waiting 30s after its 100ms")
	}
}
