package realtime

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"chorus/social"

	"github.com/coder/websocket"
)

// resumeReadTimeout bounds one page read of a resume or catch-up.
const resumeReadTimeout = 10 * time.Second

const (
	statusGoingAway = websocket.StatusGoingAway
	statusPolicy    = websocket.StatusPolicyViolation
	statusTryLater  = websocket.StatusTryAgainLater
)

// outgoing is one item of a connection's queue: a frame to send, or a
// request to catch up on the home timeline.
type outgoing struct {
	frame    []byte
	statusID int64 // set for status frames, which are sent once each
	resume   bool  // send the home timeline after `after`, oldest first
	catchUp  bool  // resume after the newest status sent so far
	after    int64
}

// conn is one live WebSocket. Its queue is filled by the router without
// blocking and drained by its writer, the only goroutine that writes.
type conn struct {
	hub     *Hub
	ws      *websocket.Conn
	uid     int64
	session string
	id      string
	queue   *queue

	mu           sync.Mutex // guards ws, set after the upgrade
	closeOnce    sync.Once
	closed       chan struct{}
	closeCode    websocket.StatusCode
	shuttingDown atomic.Bool
	overflowed   atomic.Bool

	// Owned by the writer.
	sent   sentIDs
	newest int64
}

// enqueue hands the writer an item without blocking. A connection whose
// queue is full is too slow for its own stream: it is closed with 1013.
func (c *conn) enqueue(o outgoing) {
	select {
	case <-c.closed:
		c.hub.Stats.FramesDropped.Add(1)
		return
	default:
	}
	ok, start := c.queue.push(o)
	if !ok {
		c.hub.Stats.FramesDropped.Add(1)
		if c.overflowed.CompareAndSwap(false, true) {
			c.hub.Stats.SlowClosed.Add(1)
			go c.close(statusTryLater, "too slow: reconnect and resume")
		}
	}
	if start {
		go c.drain()
	}
}

// close closes the WebSocket once, with code. Before the upgrade it marks
// the connection so that attach closes it.
func (c *conn) close(code websocket.StatusCode, reason string) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		close(c.closed)
		c.closeCode = code
		ws := c.ws
		c.mu.Unlock()
		if ws != nil {
			ws.Close(code, reason)
		}
	})
}

// attach gives the connection its upgraded WebSocket, unless it was closed
// meanwhile (shutdown, or its queue overflowed), when it closes the socket.
func (c *conn) attach(ws *websocket.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		ws.Close(c.closeCode, "")
		return false
	default:
		c.ws = ws
		return true
	}
}

// read handles the client's frames until the connection ends, and returns
// the code to close it with.
func (c *conn) read(ctx context.Context) websocket.StatusCode {
	h := c.hub
	idle := 3 * h.opts.HeartbeatInterval
	timer := time.AfterFunc(idle, func() { c.close(StatusHeartbeatTimeout, "no heartbeat") })
	defer timer.Stop()
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			if code := websocket.CloseStatus(err); code != -1 {
				return code
			}
			return websocket.StatusNormalClosure
		}
		timer.Reset(idle)
		if typ != websocket.MessageText {
			c.enqueue(outgoing{frame: errorFrameJSON("invalid_frame", "Frames must be text, one JSON object each.")})
			continue
		}
		var f clientFrame
		if err := json.Unmarshal(data, &f); err != nil {
			c.enqueue(outgoing{frame: errorFrameJSON("invalid_json", "The frame is not a JSON object.")})
			continue
		}
		switch f.Type {
		case "heartbeat":
			h.Stats.Heartbeats.Add(1)
			if err := h.presence.Heartbeat(ctx, c.uid, c.id); err != nil {
				h.log.Warn("heartbeat not recorded", "uid", c.uid, "err", err)
			}
		case "resume":
			after, ok := parseAfter(f.After)
			if !ok {
				c.enqueue(outgoing{frame: errorFrameJSON("invalid_resume", `"after" must be a status id, a whole number from 0.`)})
				continue
			}
			c.enqueue(outgoing{resume: true, after: after})
		default:
			c.enqueue(outgoing{frame: errorFrameJSON("unknown_type", "Unknown frame type "+strconv.Quote(f.Type)+"; expected heartbeat or resume.")})
		}
	}
}

func parseAfter(raw *json.RawMessage) (int64, bool) {
	if raw == nil {
		return 0, false
	}
	var n int64
	if err := json.Unmarshal(*raw, &n); err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// drain sends what waits in the queue until it is empty, then ends; the
// next push starts another. Only one runs at a time.
func (c *conn) drain() {
	defer c.queue.drainers.Done()
	for {
		items := c.queue.next()
		if items == nil {
			return
		}
		for _, o := range items {
			var ok bool
			switch {
			case o.resume:
				ok = c.sendTimeline(o.after)
			case o.catchUp:
				ok = c.sendTimeline(c.newest)
			default:
				ok = c.sendOnce(o.statusID, o.frame)
			}
			if !ok {
				return // the connection is closing: nothing more goes out
			}
		}
	}
}

// sendTimeline sends every status of the home timeline newer than after,
// oldest first, leaving out those already sent. Statuses that arrive live
// meanwhile wait in the queue and are left out there if this sent them.
func (c *conn) sendTimeline(after int64) bool {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), resumeReadTimeout)
		page, err := c.hub.feed.HomeTimeline(ctx, c.uid, social.Cursor{Limit: 100, After: after, Forward: true})
		cancel()
		if err != nil {
			c.hub.log.Warn("resume failed", "uid", c.uid, "err", err)
			c.enqueue(outgoing{frame: errorFrameJSON("resume_failed", "The timeline could not be read; resume again.")})
			return true
		}
		for _, st := range page.Statuses {
			if !c.sendOnce(st.ID, statusFrameJSON(st)) {
				return false
			}
		}
		if page.NextAfter == nil {
			return true
		}
		after = *page.NextAfter
	}
}

// sendOnce sends a frame; a status frame only if this connection has not
// sent that status before.
func (c *conn) sendOnce(statusID int64, frame []byte) bool {
	if statusID > 0 {
		if c.sent.has(statusID) {
			return true
		}
		c.sent.add(statusID)
		c.newest = max(c.newest, statusID)
	}
	return c.send(frame)
}

// send writes one frame within the write timeout. Closing the connection
// makes a write under way fail at once.
func (c *conn) send(frame []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.hub.opts.WriteTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		select {
		case <-c.closed:
		default:
			c.hub.log.Info("write failed; closing", "uid", c.uid, "conn", c.id, "err", err)
		}
		c.hub.Stats.FramesDropped.Add(1)
		go c.close(statusTryLater, "write failed")
		return false
	}
	c.hub.Stats.FramesSent.Add(1)
	return true
}
