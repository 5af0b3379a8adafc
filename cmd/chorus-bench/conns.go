package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"chorus/protocol"

	"github.com/coder/websocket"
)

// connSpec is one connection for a shard to hold.
type connSpec struct {
	Index  int    `json:"i"`           // the connection's number in the run
	URL    string `json:"u"`           // the stream's WebSocket URL
	Token  string `json:"k"`           // the user's bearer token
	Source string `json:"s,omitempty"` // local address to dial from
	Move   string `json:"m,omitempty"` // a storm's mover: the stream URL to reconnect to once the connection drops
}

// shardOptions tune a shard.
type shardOptions struct {
	RunID           string        `json:"run_id"` // posts of this run carry "bench <RunID> <seq>"
	DialConcurrency int           `json:"dial_concurrency"`
	DialTimeout     time.Duration `json:"dial_timeout"`     // one connection, until its ready frame
	Lifetime        time.Duration `json:"lifetime"`         // the shard closes everything by itself after this
	Storm           bool          `json:"storm,omitempty"`  // report presence frames
	Spread          time.Duration `json:"spread,omitempty"` // a mover reconnects at random within this after its drop
	SSE             bool          `json:"sse,omitempty"`    // hold the streams as Server-Sent Events
}

// message is what a shard reports to the coordinator, in process or as one
// JSON line of a worker's stdout. Batches carry events as they happen;
// "dialed" comes once every connection was tried, "final" once all are
// closed.
type message struct {
	Type     string          `json:"type"` // "batch", "dialed" or "final"
	Ready    []connEvent     `json:"ready,omitempty"`
	Closed   []connEvent     `json:"closed,omitempty"`
	Frames   []delivery      `json:"frames,omitempty"`
	Presence []presenceEvent `json:"presence,omitempty"`
	Moves    []moveEvent     `json:"moves,omitempty"`
	Dialed   *dialSummary    `json:"dialed,omitempty"`
	Final    *shardFinal     `json:"final,omitempty"`
}

// connEvent is a connection becoming ready, or closing while it should not.
type connEvent struct {
	Conn int    `json:"c"`
	At   int64  `json:"t"` // nanoseconds on monoNow's clock
	Why  string `json:"w,omitempty"`
}

// delivery is one status frame received.
type delivery struct {
	Conn int   `json:"c"`
	Seq  int64 `json:"s"` // the post's number in this run, -1 for a status not of this run
	ID   int64 `json:"i"` // the status id
	At   int64 `json:"t"` // monoNow, right after the read
}

// presenceEvent is one presence frame received, in a storm.
type presenceEvent struct {
	Conn   int   `json:"c"`
	User   int64 `json:"u"` // whom the frame is about
	Online bool  `json:"o"`
	At     int64 `json:"t"` // monoNow, right after the read
}

// moveEvent is how a storm's mover moved: its connection dropped, and it
// reconnected to its other instance, or failed to.
type moveEvent struct {
	Conn     int    `json:"c"`
	Closed   int64  `json:"x"`           // monoNow, when the old connection's read failed
	Dialed   int64  `json:"d,omitempty"` // when the attempt that succeeded began
	Ready    int64  `json:"t,omitempty"` // its ready frame; 0 if every attempt failed
	Attempts int    `json:"n"`
	Why      string `json:"w,omitempty"` // the last attempt's failure
}

// dialSummary is how a shard's connections went.
type dialSummary struct {
	Attempted int            `json:"attempted"`
	Held      int            `json:"held"`
	Failed    int            `json:"failed"`
	Reasons   map[string]int `json:"reasons,omitempty"`
	Seconds   float64        `json:"seconds"`
}

// shardFinal is a shard's totals once it closed its connections.
type shardFinal struct {
	Frames          map[string]int64 `json:"frames"` // by type
	Heartbeats      int64            `json:"heartbeats"`
	HeartbeatErrors int64            `json:"heartbeat_errors"`
	RSSKiB          int64            `json:"rss_kib"` // of the process holding the shard
}

// maxReasons caps the distinct failure reasons kept.
const maxReasons = 20

var heartbeatFrame = []byte(`{"type":"heartbeat"}`)

// shard holds a set of connections: it dials them, reads every frame,
// sends heartbeats, and reports through emit until stop closes or its
// lifetime ends.
type shard struct {
	opts shardOptions
	emit func(message)

	emitMu  sync.Mutex // serializes emit, keeping reports in order
	mu      sync.Mutex
	pending message
	conns   []*benchConn
	clients map[string]*http.Client

	frames          sync.Map // type → *atomic.Int64
	heartbeats      atomic.Int64
	heartbeatErrors atomic.Int64
	stopping        atomic.Bool
	quit            chan struct{}  // closed with stopping set
	moving          sync.WaitGroup // movers reconnecting
}

// benchConn is one held connection.
type benchConn struct {
	spec     connSpec
	ws       streamConn
	interval time.Duration
	done     chan struct{} // closed when its reader returns

	mu     sync.Mutex
	hb     *time.Timer
	closed bool // its heartbeats have stopped for good
}

// runShard holds specs until stop closes or ctx ends, reporting through
// emit, and returns once every connection is closed.
func runShard(ctx context.Context, specs []connSpec, opts shardOptions, stop <-chan struct{}, emit func(message)) {
	ctx, cancel := context.WithTimeout(ctx, opts.Lifetime)
	defer cancel()
	s := &shard{opts: opts, emit: emit, pending: message{Type: "batch"}, clients: map[string]*http.Client{}, quit: make(chan struct{})}
	flusherDone := make(chan struct{})
	go func() {
		defer close(flusherDone)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.report(nil)
			}
		}
	}()

	start := time.Now()
	sum := &dialSummary{Attempted: len(specs), Reasons: map[string]int{}}
	var sumMu sync.Mutex
	sem := make(chan struct{}, max(1, opts.DialConcurrency))
	var wg sync.WaitGroup
	for _, spec := range specs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			sum.Failed++ // counted here: never started
			addReason(sum.Reasons, "not dialed: "+ctx.Err().Error())
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			at, err := s.open(ctx, spec)
			if err == nil {
				s.mu.Lock()
				s.pending.Ready = append(s.pending.Ready, connEvent{Conn: spec.Index, At: at})
				s.mu.Unlock()
			}
			sumMu.Lock()
			defer sumMu.Unlock()
			if err != nil {
				sum.Failed++
				addReason(sum.Reasons, err.Error())
			} else {
				sum.Held++
			}
		})
	}
	wg.Wait()
	sum.Seconds = time.Since(start).Seconds()
	s.report(&message{Type: "dialed", Dialed: sum})

	select {
	case <-stop:
	case <-ctx.Done():
	}
	s.closeAll(closeWait)
	s.moving.Wait()
	cancel()
	<-flusherDone
	fin := &shardFinal{Frames: map[string]int64{}, Heartbeats: s.heartbeats.Load(), HeartbeatErrors: s.heartbeatErrors.Load()}
	s.frames.Range(func(k, v any) bool {
		fin.Frames[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	fin.RSSKiB, _ = readRSS(os.Getpid())
	s.report(&message{Type: "final", Final: fin})
}

// report emits the pending batch, then m if not nil.
func (s *shard) report(m *message) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.mu.Lock()
	batch := s.pending
	s.pending = message{Type: "batch"}
	s.mu.Unlock()
	if len(batch.Ready)+len(batch.Closed)+len(batch.Frames)+len(batch.Presence)+len(batch.Moves) > 0 {
		s.emit(batch)
	}
	if m != nil {
		s.emit(*m)
	}
}

// client is the HTTP client that dials from source.
func (s *shard) client(source string) *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[source]; ok {
		return c
	}
	d := &net.Dialer{Timeout: s.opts.DialTimeout}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}
	s.clients[source] = c
	return c
}

// open dials one connection and waits for its ready frame, whose arrival
// time it returns; then the connection reads on, and heartbeats, in the
// background.
func (s *shard) open(ctx context.Context, spec connSpec) (int64, error) {
	dctx, cancel := context.WithTimeout(ctx, s.opts.DialTimeout)
	defer cancel()
	ws, err := s.dial(ctx, dctx, spec)
	if err != nil {
		return 0, err
	}
	// An event stream's read does not heed a context: cut it at the limit.
	cut := context.AfterFunc(dctx, func() { _ = ws.CloseNow() })
	_, data, err := ws.Read(dctx)
	cut()
	at := monoNow()
	if err != nil {
		_ = ws.CloseNow()
		return 0, errors.New("no ready frame: " + failureReason(err))
	}
	var ready struct {
		Type                string `json:"type"`
		HeartbeatIntervalMS int64  `json:"heartbeat_interval_ms"`
	}
	if json.Unmarshal(data, &ready) != nil || ready.Type != protocol.TypeReady {
		_ = ws.CloseNow()
		return 0, fmt.Errorf("first frame not ready: %.60s", data)
	}
	s.count("ready")
	c := &benchConn{spec: spec, ws: ws, interval: 10 * time.Second, done: make(chan struct{})}
	if ready.HeartbeatIntervalMS > 0 {
		c.interval = time.Duration(ready.HeartbeatIntervalMS) * time.Millisecond
	}
	s.mu.Lock()
	if s.stopping.Load() {
		s.mu.Unlock()
		_ = ws.CloseNow()
		return 0, errors.New("closed while opening")
	}
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	c.mu.Lock()
	c.hb = time.AfterFunc(c.interval, func() { s.heartbeat(c) })
	if s.opts.SSE {
		c.hb.Stop() // the server's keepalive comments stand in for heartbeats
	}
	c.mu.Unlock()
	go s.read(ctx, c)
	return at, nil
}

// dial opens spec's stream, a WebSocket or (-sse) events: dctx bounds the
// dial, ctx the stream's life.
func (s *shard) dial(ctx, dctx context.Context, spec connSpec) (streamConn, error) {
	if s.opts.SSE {
		deadline, _ := dctx.Deadline()
		c, err := dialEvents(ctx, s.client(spec.Source), spec, time.Until(deadline))
		if err != nil {
			return nil, errors.New(failureReason(err))
		}
		return c, nil
	}
	ws, resp, err := websocket.Dial(dctx, spec.URL, &websocket.DialOptions{
		HTTPClient: s.client(spec.Source),
		HTTPHeader: http.Header{"Authorization": {"Bearer " + spec.Token}},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil, errors.New(failureReason(err))
	}
	ws.SetReadLimit(1 << 20)
	return ws, nil
}

// heartbeat sends one heartbeat and schedules the next.
func (s *shard) heartbeat(c *benchConn) {
	if s.stopping.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := c.ws.Write(ctx, websocket.MessageText, heartbeatFrame)
	cancel()
	if err != nil {
		s.heartbeatErrors.Add(1)
		return // the reader sees the connection end
	}
	s.heartbeats.Add(1)
	c.mu.Lock()
	if !c.closed {
		c.hb.Reset(c.interval)
	}
	c.mu.Unlock()
}

// read reads c's frames until it closes, recording status deliveries.
func (s *shard) read(ctx context.Context, c *benchConn) {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(ctx)
		at := monoNow()
		if err != nil {
			switch {
			case s.stopping.Load():
			case c.spec.Move != "":
				s.moving.Add(1)
				go s.move(ctx, c, at)
			default:
				s.mu.Lock()
				s.pending.Closed = append(s.pending.Closed, connEvent{Conn: c.spec.Index, At: at, Why: failureReason(err)})
				s.mu.Unlock()
			}
			return
		}
		var f struct {
			Type   string `json:"type"`
			Status *struct {
				ID      int64  `json:"id"`
				Message string `json:"message"`
			} `json:"status"`
			User *struct {
				ID int64 `json:"id"`
			} `json:"user"`
			Online bool `json:"online"`
		}
		if json.Unmarshal(data, &f) != nil {
			s.count("unreadable")
			continue
		}
		s.count(f.Type)
		if f.Type == protocol.TypePresence && f.User != nil && s.opts.Storm {
			s.mu.Lock()
			s.pending.Presence = append(s.pending.Presence, presenceEvent{Conn: c.spec.Index, User: f.User.ID, Online: f.Online, At: at})
			s.mu.Unlock()
			continue
		}
		if f.Type != protocol.TypeStatus || f.Status == nil {
			continue
		}
		d := delivery{Conn: c.spec.Index, Seq: parseMarker(f.Status.Message, s.opts.RunID), ID: f.Status.ID, At: at}
		s.mu.Lock()
		s.pending.Frames = append(s.pending.Frames, d)
		s.mu.Unlock()
	}
}

// Reconnecting movers try this many times, waiting moveBackoff more before
// each new attempt.
const (
	moveAttempts = 3
	moveBackoff  = 500 * time.Millisecond
)

// move reconnects a storm's mover whose connection dropped at closed: after
// a random delay within the spread, to its other instance, trying a few
// times. It reports how that went. The new connection is no mover: if it
// drops too, that is reported as any connection's drop.
func (s *shard) move(ctx context.Context, old *benchConn, closed int64) {
	defer s.moving.Done()
	old.mu.Lock()
	old.closed = true
	old.hb.Stop()
	old.mu.Unlock()
	_ = old.ws.CloseNow()
	ev := moveEvent{Conn: old.spec.Index, Closed: closed}
	defer func() {
		s.mu.Lock()
		s.pending.Moves = append(s.pending.Moves, ev)
		s.mu.Unlock()
	}()
	spec := old.spec
	spec.URL, spec.Move = spec.Move, ""
	var delay time.Duration
	if s.opts.Spread > 0 {
		delay = rand.N(s.opts.Spread)
	}
	for ev.Attempts < moveAttempts {
		if !s.wait(ctx, delay) {
			ev.Why = "stopped before reconnecting"
			return
		}
		ev.Attempts++
		dialed := monoNow()
		at, err := s.open(ctx, spec)
		if err == nil {
			ev.Dialed, ev.Ready, ev.Why = dialed, at, ""
			return
		}
		ev.Why = err.Error()
		delay = time.Duration(ev.Attempts) * moveBackoff
	}
}

// wait waits d, and tells whether the shard is still running after it.
func (s *shard) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-s.quit:
		return false
	case <-t.C:
		return true
	}
}

// closeWait is how long a shard waits for its connections' closing
// handshakes before cutting those left.
const closeWait = 10 * time.Second

// closeAll closes every connection normally, waiting up to wait in all for
// the closing handshakes before cutting the rest.
func (s *shard) closeAll(wait time.Duration) {
	s.mu.Lock()
	s.stopping.Store(true)
	close(s.quit)
	conns := s.conns
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		c.hb.Stop()
		c.mu.Unlock()
		go func() { _ = c.ws.Close(websocket.StatusNormalClosure, "benchmark done") }()
	}
	// One deadline for all, each connection waited for until it: a
	// channel of time.After fires once, and the connections after the
	// first late one would wait on it for ever.
	deadline := time.Now().Add(wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	for _, c := range conns {
		t.Reset(time.Until(deadline))
		select {
		case <-c.done:
		case <-t.C:
			_ = c.ws.CloseNow()
			<-c.done
		}
	}
}

func (s *shard) count(frameType string) {
	v, _ := s.frames.LoadOrStore(frameType, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// marker is the message of post seq of run runID.
func marker(runID string, seq int) string {
	return "bench " + runID + " " + strconv.Itoa(seq)
}

// parseMarker returns the post number a message of run runID carries, or -1.
func parseMarker(message, runID string) int64 {
	f := strings.Fields(message)
	if len(f) != 3 || f[0] != "bench" || f[1] != runID {
		return -1
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// failureReason shortens a connection error to a reason that many
// connections can share: the close code, the system error, or the message.
func failureReason(err error) string {
	if code := websocket.CloseStatus(err); code != -1 {
		return "closed with " + strconv.Itoa(int(code))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	msg := err.Error()
	if len(msg) > 100 {
		msg = msg[:100]
	}
	return msg
}

func addReason(reasons map[string]int, why string) {
	if _, ok := reasons[why]; !ok && len(reasons) >= maxReasons {
		why = "other"
	}
	reasons[why]++
}
