package realtime

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"
)

// BenchmarkFrameWrite is one status frame's write on a stream's WebSocket
// (webSocket.write), to each of 500 streams in turn, over loopback to
// clients that read every frame: the server's cost of a delivery once the
// hub has routed it.
func BenchmarkFrameWrite(b *testing.B) {
	const streams = 500
	accepted := make(chan webSocket, streams)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw := &meteredWriter{ResponseWriter: w, frames: rate.NewLimiter(rate.Inf, 1)}
		ws, err := websocket.Accept(mw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			b.Errorf("accept: %v", err)
			return
		}
		accepted <- webSocket{ws, mw.conn}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var reading sync.WaitGroup
	var mu sync.Mutex
	read := 0
	server := make([]webSocket, streams)
	for i := range streams {
		client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer client.CloseNow()
		reading.Go(func() {
			n := 0
			for {
				if _, _, err := client.Read(context.Background()); err != nil {
					mu.Lock()
					read += n
					mu.Unlock()
					return
				}
				n++
			}
		})
		server[i] = <-accepted
	}
	frame := []byte(`{"type":"status","status":{"id":1795812350121,"uid":4242,"login":"author0042","name":"Author 42","message":"` +
		strings.Repeat("a status of some length ", 6) + `","posted":"2026-11-27T21:30:00.000Z","mentions":[]}}`)
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for i := range b.N {
		if err := server[i%streams].write(time.Now().Add(DefaultWriteTimeout), frame, 1795812350121); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, ws := range server {
		_ = ws.CloseNow()
	}
	reading.Wait()
	if read < b.N {
		b.Fatalf("the clients read %d frames of %d", read, b.N)
	}
}
