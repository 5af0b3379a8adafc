package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"chorus/protocol"
	"chorus/social"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

const (
	// resumeReadTimeout bounds one page read of a resume or catch-up.
	resumeReadTimeout = 10 * time.Second
	// timelinePage is how many statuses one page read of a resume takes.
	timelinePage = 100
)

// outgoing is one item of a connection's queue: a frame to send, or a
// request to catch up on the home timeline.
type outgoing struct {
	frame    []byte
	statusID int64 // set for status frames, which are sent once each
	resume   bool  // send the home timeline after `after`, oldest first
	unpaid   bool  // a resume not yet taken from the user's budget (payResume)
	catchUp  bool  // send what the stream may have missed (catchUp)
	after    int64
	// author is a status or global_status frame's: the frame is left out
	// when the stream's user may not see them, or, for a repost entry, its
	// original's author (hidden). hidden sets hidden again. All go through
	// the queue, so a frame is judged by the hidden set of its place in
	// the order of events.
	author int64
	hidden *hiddenUpdate
}

// conn is one live stream: a WebSocket, or an event stream (events.go).
// Its queue is filled by the router without blocking and drained by drain,
// a writer that runs only while frames wait and writes every data frame;
// the pings come from keepAlive's timer and the close frame from end.
type conn struct {
	hub     *Hub
	ws      frameWriter  // webSocket or *eventStream
	wire    *meteredConn // a WebSocket's socket under ws, which counts the client's frames
	uid     int64
	session string
	id      string
	queue   *queue
	drain   func() // c.writeQueued, made once: what writerPool runs

	// life ends when the connection closes: the Redis calls made for it
	// (heartbeats, timeline reads) stop with it. It is the connection's own
	// lifetime, not a caller's, which is why a struct holds it.
	life context.Context
	stop context.CancelFunc // ends life, and marks ended
	// ended is set as life ends: isClosed, asked several times a frame,
	// reads it rather than the context's error.
	ended atomic.Bool

	mu           sync.Mutex  // guards ws, set after the upgrade, and the close fields
	closedFor    closeReason // notClosed until the connection closes
	closeFrame   websocket.CloseError
	closers      sync.WaitGroup // closing handshakes closeSoon left running
	shuttingDown atomic.Bool

	// Liveness: a client frame or a pong to the server's ping is activity.
	// Written by the reader and the pinger.
	lastActive atomic.Int64 // unix ns of the last activity
	beatWindow atomic.Int64 // heartbeat window of the last presence write

	// Owned by the reader (set before it starts).
	connectedAt time.Time     // when presence registered the connection
	frames      *rate.Limiter // every client frame, counted by wire as it comes

	presence presenceGate // coalesces presence frames per user

	// Owned by the writer.
	sent     sentIDs
	timeline sentRange      // home-timeline ids sent in full by resumes
	newest   int64          // the newest status sent, or resumed after: where a catch-up reads on from
	hidden   map[int64]bool // the authors the user may not see, read as the stream opens and at each change (watch.go); nil for none
	// floor is the newest status id the client holds or that was given
	// before the stream opened (read as it opened, see Hub.open), or the
	// newest a resume named. A catch-up sends nothing at or under it.
	floor int64
	// cutShort says a read of the resume or catch-up under way failed:
	// it sends nothing more (backfill).
	cutShort bool
	// hiddenFails counts the reads of hidden that failed in a row: each
	// is tried again, later the more it failed (loadHidden), by one retry
	// at a time (hiddenRetry: planned, not yet run).
	hiddenFails uint8
	hiddenRetry bool
}

// newConn is a connection of uid, opened with session sessionID, not yet
// upgraded.
func newConn(h *Hub, uid int64, sessionID string) *conn {
	life, cancel := context.WithCancel(context.Background())
	c := &conn{
		hub: h, uid: uid, session: sessionID, id: uuid.NewString(),
		queue:  newQueue(h.opts.QueueSize),
		life:   life,
		frames: rate.NewLimiter(h.opts.FrameRate, h.opts.FrameBurst),
	}
	c.drain = c.writeQueued
	c.stop = func() {
		c.ended.Store(true)
		cancel()
	}
	return c
}

// enqueue hands the writer an item without blocking. A connection whose
// queue is full is too slow for its own stream: it is closed with 1013.
func (c *conn) enqueue(o outgoing) {
	if c.isClosed() {
		c.hub.Stats.FramesDropped.Add(1)
		return
	}
	ok, start := c.queue.push(o)
	if !ok {
		c.hub.Stats.FramesDropped.Add(1)
		c.closeSoon(closeSlow)
	}
	if start {
		writerPool.run(c.drain)
	}
}

// isClosed reports whether the connection was closed: nothing more is
// queued, sent or acted on.
func (c *conn) isClosed() bool { return c.ended.Load() }

// close closes the connection once, for why, and waits for the closing
// handshake. Before the upgrade it marks the connection so that attach
// closes it. It reports whether this call closed it.
func (c *conn) close(why closeReason) bool {
	return c.end(why, why.closeError(), false)
}

// closeSoon closes the connection as close does, at once, but leaves the
// closing handshake to a goroutine that run waits for: for callers that
// must not block (the router, the session checker, the writer).
func (c *conn) closeSoon(why closeReason) bool {
	return c.end(why, why.closeError(), true)
}

// answerClient answers the client's close, or the end of its connection,
// with code.
func (c *conn) answerClient(code websocket.StatusCode) bool {
	return c.end(closeClient, websocket.CloseError{Code: code}, false)
}

// end closes the connection once, for why, with frame. It is the one place
// a connection closes: if this call closes it, it adds one to why's counter
// before the close frame can leave, so that a client that has seen the
// close finds it counted, and records why for run's closing line.
func (c *conn) end(why closeReason, frame websocket.CloseError, async bool) bool {
	c.mu.Lock()
	if c.closedFor != notClosed {
		c.mu.Unlock()
		return false
	}
	c.closedFor, c.closeFrame = why, frame
	if counter := why.rule().counter; counter != nil {
		counter(&c.hub.Stats).Add(1)
	}
	c.stop()
	ws := c.ws
	if ws != nil && async {
		// Under mu: run, whose own close then finds the connection ended,
		// cannot reach closers.Wait before this.
		c.closers.Add(1)
	}
	c.mu.Unlock()
	switch {
	case ws == nil: // attach closes it
	case async:
		go func() {
			defer c.closers.Done()
			_ = ws.close(frame.Code, frame.Reason) // an error: the client went first
		}()
	default:
		_ = ws.close(frame.Code, frame.Reason) // an error: the client went first
	}
	return true
}

// closedWith is why the connection was closed, and the close frame it was
// closed with.
func (c *conn) closedWith() (closeReason, websocket.CloseError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closedFor, c.closeFrame
}

// attach gives the connection what its frames go out on, the upgraded
// WebSocket or the event stream, unless it was closed meanwhile (shutdown,
// sign-out, its queue overflowed), when it closes that.
func (c *conn) attach(ws frameWriter) bool {
	c.mu.Lock()
	if c.closedFor != notClosed {
		frame := c.closeFrame
		c.mu.Unlock()
		_ = ws.close(frame.Code, frame.Reason) // an error: the client went first
		return false
	}
	c.ws = ws
	c.mu.Unlock()
	return true
}

// readReady reads what the client sent and acts on it, once the instance's
// poller found the stream's socket readable (meteredConn.watch), on a
// goroutine that ends when nothing more waits: an idle stream holds none.
// When the connection ends, it finishes the stream (finish).
func (c *conn) readReady() {
	c.hub.Stats.Readers.Add(1)
	defer c.hub.Stats.Readers.Add(-1)
	ws := c.ws.(webSocket)
	for {
		end, more := c.readOne(ws, c.handleFrame)
		if !more {
			c.finish(end)
			return
		}
		if !c.wire.hasPending() && c.wire.rearm() {
			return
		}
	}
}

// read handles the client's frames until the connection ends, on a
// goroutine of its own, where the poller cannot watch the socket; it
// returns how the connection ended (see readOne).
//
// Its goroutine waits for the client for the stream's whole life, so it
// keeps to the shallow stack of that wait: each frame is acted on by a
// goroutine of its own (handleAside), whose deeper stack goes with it. A
// goroutine's stack only grows while it runs, so one deep call here would
// double every idle stream's stack for good.
func (c *conn) read() websocket.CloseError {
	ws := c.ws.(webSocket)
	for {
		if end, more := c.readOne(ws, c.handleAside); !more {
			return end
		}
	}
}

// readOne reads the client's next message and acts on it with handle. It
// reports false when the connection ended, and how the client ended it: its
// close frame, or 1006 and the error when the connection ended without
// one. When this side closed it first (a frame too big, too many frames, a
// frame refused, or a close already under way) the close is empty; finish
// finds the close made.
func (c *conn) readOne(ws webSocket, handle func(websocket.MessageType, []byte) bool) (websocket.CloseError, bool) {
	// Not a context of the connection's life: a read cut short by a
	// context closes the socket at once, without the closing handshake
	// the close under way is doing.
	typ, data, err := ws.Read(context.Background())
	if err != nil {
		return c.readFailed(err), false
	}
	if len(data) == 0 && c.wire.tookSynthetic() {
		return websocket.CloseError{}, true // the end of a control frame's read
	}
	if c.isClosed() {
		// Frames the client sent before the close are not acted on.
		return websocket.CloseError{}, false
	}
	return websocket.CloseError{}, handle(typ, data)
}

// readFailed is how a failed read ended the connection (see read).
func (c *conn) readFailed(err error) websocket.CloseError {
	var closed websocket.CloseError
	switch fail := c.wire.failed(); {
	case fail != notClosed:
		c.fail(fail)
		return websocket.CloseError{}
	case errors.As(err, &closed):
		return closed
	case errors.Is(err, websocket.ErrMessageTooBig):
		// The library has sent the client 1009 already.
		c.close(closeTooBig)
		return websocket.CloseError{}
	}
	return websocket.CloseError{Code: websocket.StatusAbnormalClosure, Reason: err.Error()}
}

// handleAside runs handleFrame on a goroutine of its own and waits for it, so
// that the reader's stack does not grow (see read).
func (c *conn) handleAside(typ websocket.MessageType, data []byte) bool {
	done := make(chan bool, 1)
	go func() { done <- c.handleFrame(typ, data) }()
	return <-done
}

// handleFrame acts on one frame of the client's WebSocket (handle). It
// reports false when the frame failed the connection: nothing more is read.
func (c *conn) handleFrame(typ websocket.MessageType, data []byte) bool {
	now := time.Now()
	c.active(now)
	if typ != websocket.MessageText {
		c.enqueue(outgoing{frame: errorFrameJSON(protocol.CodeInvalidFrame, "Frames must be text, one JSON object each.")})
		return true
	}
	if !utf8.Valid(data) {
		c.fail(closeNotUTF8)
		return false
	}
	if err := protocol.CheckJSONText(data); err != nil {
		c.enqueue(outgoing{frame: errorFrameJSON(protocol.CodeInvalidJSON, "The frame is refused: "+err.Error()+".")})
		return true
	}
	var f protocol.ClientFrame
	if err := json.Unmarshal(data, &f); err != nil || !protocol.IsObject(data) {
		c.enqueue(outgoing{frame: errorFrameJSON(protocol.CodeInvalidJSON, "The frame is not a JSON object.")})
		return true
	}
	c.handle(f)
	return true
}

// fail closes the connection for why: the client sent a frame over the
// frame limit (1008), an unmasked frame (1002) or a text frame that is not
// UTF-8 (1007). Nothing more it sent is read.
func (c *conn) fail(why closeReason) {
	c.wire.fail(why)
	c.close(why)
}

// keepAlive pings the client every heartbeat interval, from a timer rather
// than a goroutine of its own, and counts its pong as activity. Browsers
// answer pings themselves, even in a background tab whose timers are
// throttled or frozen, so presence does not hang on the page's heartbeat
// frames. A connection with no activity for three intervals, no frame and
// no pong, is closed with 4000.
func (c *conn) keepAlive() {
	interval := c.hub.opts.HeartbeatInterval
	var tick func()
	tick = func() {
		start := time.Now()
		if c.isClosed() {
			return
		}
		if start.Sub(time.Unix(0, c.lastActive.Load())) >= 3*interval {
			c.closeSoon(closeIdle)
			return
		}
		// Wait for the pong at most an interval, then ping again: a pong
		// that comes later is not counted, the next one is. The wait ends
		// too when the socket closes. (A context under the connection's
		// life would leave it a map of its children for good.)
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		err := c.ws.ping(ctx)
		cancel()
		if err == nil {
			c.hub.Stats.Pongs.Add(1)
			c.active(time.Now())
		}
		time.AfterFunc(max(0, interval-time.Since(start)), tick)
	}
	time.AfterFunc(interval, tick)
}

// active records activity at now: it keeps the connection open, and writes
// it to presence at most once per heartbeat window: window k of the
// connection's own schedule spans k intervals after it connected, give or
// take half an interval, so that a client timer or a pong a little early or
// late still lands in a window of its own, and the extra activity of a window
// costs Redis nothing. Connecting counts as window 0. The write itself waits
// for the hub's next flush of every connection's activity.
func (c *conn) active(now time.Time) {
	h := c.hub
	c.lastActive.Store(now.UnixNano())
	w := heartbeatWindow(now.Sub(c.connectedAt), h.opts.HeartbeatInterval)
	for {
		old := c.beatWindow.Load()
		if w <= old {
			return
		}
		if c.beatWindow.CompareAndSwap(old, w) {
			break
		}
	}
	h.Stats.HeartbeatsRecorded.Add(1)
	h.beats.add(c)
}

// heartbeatWindow is the window a heartbeat elapsed after connecting falls
// in, for heartbeats every interval.
func heartbeatWindow(elapsed, interval time.Duration) int64 {
	return int64((elapsed + interval/2) / interval)
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

// writeQueued sends what waits in the queue until it is empty, then ends;
// the next push starts another (on writerPool, as c.drain). Only one runs at
// a time.
func (c *conn) writeQueued() {
	defer c.queue.drainers.Done()
	for {
		items := c.queue.next()
		if items == nil {
			return
		}
		for _, o := range items {
			var ok bool
			switch {
			case o.resume && o.unpaid && !c.payResume():
				ok = true // refused: the client was told
			case o.resume:
				// The client holds the timeline up to after: a catch-up
				// starts there at least, though this sends nothing newer.
				c.newest = max(c.newest, o.after)
				c.floor = max(c.floor, o.after)
				ok = c.backfill(func() bool { return c.sendTimeline(o.after) })
			case o.catchUp:
				ok = c.backfill(c.catchUp)
			case o.hidden == retryHidden:
				c.hiddenRetry = false
				ok = c.loadHidden()
			case o.hidden == reloadHidden:
				ok = c.loadHidden()
			case o.hidden != nil && o.hidden.read != nil:
				ok = c.loadShared(o.hidden.read)
			case o.hidden != nil:
				c.hidden = o.hidden.set
				ok = true
			case o.author != 0 && c.hidden != nil && (c.hidden[o.author] || c.hidden[originalAuthor(o.frame)]):
				ok = true
			default:
				ok = c.sendOnce(o.statusID, o.frame)
			}
			if !ok {
				return // the connection is closing: nothing more goes out
			}
		}
	}
}

// payResume takes one resume from the user's budget, or tells the client
// why not, as a resume frame refused is told, and reports false. The
// writer pays so for a resume queued unpaid, at an event stream's opening
// (ServeEvents), once the stream opened.
func (c *conn) payResume() bool {
	h := c.hub
	wait, err := h.allowResume(c.life, c.uid)
	switch {
	case err != nil:
		c.resumeFailed(err)
	case wait > 0:
		h.Stats.ResumesLimited.Add(1)
		c.enqueue(outgoing{frame: errorFrameJSON(protocol.CodeRateLimited,
			"Too many resumes on your streams; send resume again in "+wait.String()+".")})
	default:
		return true
	}
	return false
}

// catchUp sends what the stream may have missed while its frames were held
// back (its subscription lost and made again): the home timeline after the
// newest status it was sent, and under that, one page back, the statuses it
// was not sent. Those come from a publish that lost the race with a newer
// status's: a post given its id before another, whose publish waited out a
// failover while the other's went out. Nothing at or under c.floor goes: a
// stream opened since the last status and sent nothing yet is sent only
// what was posted since it opened, not the whole timeline.
func (c *conn) catchUp() bool {
	if c.newest > c.floor && !c.sendSkipped() {
		return false
	}
	return c.sendTimeline(c.newest)
}

// skippedReads bounds the reads of sendSkipped: a page of a reader of
// many pulled authors may end early, short of timelinePage, at an exact
// cursor, and the next read goes on from there.
const skippedReads = 8

// sendSkipped sends, oldest first, the statuses of the page's worth of the
// home timeline just under c.newest that this connection was not sent, down
// to c.floor.
func (c *conn) sendSkipped() bool {
	var skipped []social.Status
	before, looked := c.newest, 0
	for reads := 0; reads < skippedReads && looked < timelinePage; reads++ {
		ctx, cancel := context.WithTimeout(c.life, resumeReadTimeout)
		page, err := c.hub.feed.HomeTimeline(ctx, c.uid, social.Cursor{Limit: timelinePage - looked, Before: before})
		cancel()
		if err != nil {
			return c.timelineFailed(err)
		}
		floor := false
		for _, st := range page.Statuses { // newest first
			if st.ID <= c.floor {
				floor = true
				break
			}
			looked++
			if !c.sent.has(st.ID) && !c.timeline.has(st.ID) {
				skipped = append(skipped, st)
			}
		}
		if floor || page.NextBefore == nil || *page.NextBefore <= c.floor {
			break
		}
		before = *page.NextBefore
	}
	ctx, cancel := context.WithTimeout(c.life, resumeReadTimeout)
	skipped, err := c.hub.feed.Originals(ctx, skipped)
	cancel()
	if err != nil {
		return c.timelineFailed(err)
	}
	for _, st := range slices.Backward(skipped) {
		if c.hides(st) {
			continue
		}
		if !c.sendOnce(st.ID, statusFrameJSON(st)) {
			return false
		}
	}
	return true
}

// backfill runs send, a resume or a catch-up, which may send statuses
// older than some sent before. An event stream is told (eventStream.fill),
// so that the ids of its events never pass a status it owes the client.
func (c *conn) backfill(send func() bool) bool {
	e, ok := c.ws.(*eventStream)
	if !ok {
		return send()
	}
	e.fill()
	c.cutShort = false
	if !send() {
		return false
	}
	if err := e.filled(time.Now().Add(c.hub.opts.WriteTimeout), !c.cutShort); err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// timelineFailed is resumeFailed for a read of the resume or catch-up under
// way, which is cut short.
func (c *conn) timelineFailed(err error) bool {
	c.cutShort = true
	return c.resumeFailed(err)
}

// resumeFailed tells the client that a timeline read of a resume or a
// catch-up failed, unless the connection is closing (false: send nothing
// more).
func (c *conn) resumeFailed(err error) bool {
	if c.isClosed() {
		return false
	}
	c.hub.log.Warn("resume failed", "uid", c.uid, "err", err)
	c.enqueue(outgoing{frame: errorFrameJSON(protocol.CodeResumeFailed, "The timeline could not be read; resume again.")})
	return true
}

// resumeStatuses bounds the statuses one resume or catch-up reads and
// sends: as many as a home timeline keeps (social.DefaultHomeSize), the
// newest of those after its `after`. A stored home timeline holds no more;
// one that merges pulled authors' statuses from their profiles would send
// every status they ever posted.
const resumeStatuses = social.DefaultHomeSize

// resumeReads bounds the page reads of one resume or catch-up (sendNewest):
// twice the full pages resumeStatuses takes. A page may hold fewer
// statuses than it asked for, at an exact cursor (those hidden from the
// user left out), or none: the statuses a pulled author posted before
// their suspension stay in their profile, every one hidden, and a reader's
// home timeline merges them page after page down to the first.
const resumeReads = 2 * resumeStatuses / timelinePage

// sendTimeline sends the statuses of the home timeline newer than after,
// oldest first, leaving out those already sent: the run of the timeline
// earlier resumes sent in full is skipped without being read again. Where
// more than resumeStatuses are newer, it sends the newest that many
// (sendNewest). Statuses that arrive live meanwhile wait in the queue and
// are left out there if this sent them.
func (c *conn) sendTimeline(after int64) bool {
	after = c.timeline.skip(after)
	page, sts, err := c.readHome(social.Cursor{Limit: timelinePage, After: after, Forward: true}, after)
	if err != nil {
		return c.timelineFailed(err)
	}
	if page.NextAfter != nil {
		// More than a page: read down from the newest, to the cap.
		return c.sendNewest(after)
	}
	if !c.sendStatuses(slices.All(sts)) {
		return false
	}
	hi := after
	if len(page.Statuses) > 0 {
		hi = max(after, page.Statuses[len(page.Statuses)-1].ID)
	}
	c.keepRun(sentRange{lo: after, hi: hi})
	return true
}

// sendNewest sends the newest resumeStatuses statuses of the home
// timeline newer than after, oldest first, reading newest first down to
// after or the cap, and skipping the run earlier resumes sent in full.
func (c *conn) sendNewest(after int64) bool {
	var pages [][]social.Status // as read: newest first
	read, before := 0, int64(0)
	run := sentRange{lo: after, hi: after} // what this call sends in full
	for reads := 1; ; reads++ {
		page, sts, err := c.readHome(social.Cursor{Limit: min(timelinePage, resumeStatuses-read), Before: before}, after)
		if err != nil {
			return c.timelineFailed(err)
		}
		if before == 0 && len(page.Statuses) > 0 {
			run.hi = max(after, page.Statuses[0].ID)
		}
		pages = append(pages, sts)
		read += len(page.Statuses)
		if page.NextBefore == nil || *page.NextBefore <= after+1 || (len(page.Statuses) > 0 && page.Statuses[len(page.Statuses)-1].ID <= after) {
			break // down to after
		}
		before = *page.NextBefore
		if c.timeline.has(before - 1) {
			// The run below was sent in full: on under it.
			before = c.timeline.lo + 1
			if before <= after+1 {
				break
			}
		}
		if read >= resumeStatuses || reads >= resumeReads {
			run.lo = before - 1 // every status from before up was read
			break
		}
	}
	for _, sts := range slices.Backward(pages) {
		if !c.sendStatuses(slices.Backward(sts)) {
			return false
		}
	}
	c.keepRun(run)
	return true
}

// readHome reads a page of the home timeline at cur, and its statuses
// newer than after with their reposts' originals filled in.
func (c *conn) readHome(cur social.Cursor, after int64) (social.TimelinePage, []social.Status, error) {
	ctx, cancel := context.WithTimeout(c.life, resumeReadTimeout)
	defer cancel()
	page, err := c.hub.feed.HomeTimeline(ctx, c.uid, cur)
	if err != nil {
		return page, nil, err
	}
	newer := slices.DeleteFunc(slices.Clone(page.Statuses), func(st social.Status) bool { return st.ID <= after })
	sts, err := c.hub.feed.Originals(ctx, newer)
	return page, sts, err
}

// sendStatuses sends sts in order, but those already sent, in the run
// resumes sent, or hidden.
func (c *conn) sendStatuses(sts iter.Seq2[int, social.Status]) bool {
	for _, st := range sts {
		if c.timeline.has(st.ID) || c.hides(st) {
			continue
		}
		if !c.sendOnce(st.ID, statusFrameJSON(st)) {
			return false
		}
	}
	return true
}

// keepRun remembers run, which a resume sent in full, with the run before
// it when they touch, else in its place: the newest run, rather than an
// older one apart from it.
func (c *conn) keepRun(run sentRange) {
	if c.timeline.touches(run) {
		c.timeline = c.timeline.union(run)
	} else if !run.empty() {
		c.timeline = run
	}
}

// hides reports whether st is by an author c's user may not see, or
// reposts such an author's status: a home timeline holds those of the
// authors the user mutes, and reposts of any, which a resume and a
// catch-up leave out as the live frames and a read of the timeline do.
func (c *conn) hides(st social.Status) bool {
	return c.hidden != nil && (c.hidden[st.UID] || (st.RepostOf != nil && c.hidden[st.RepostOf.UID]))
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
	return c.send(frame, statusID)
}

// send writes one frame, a status frame with its status's id, within the
// write timeout. Closing the connection makes a write under way fail at
// once.
func (c *conn) send(frame []byte, statusID int64) bool {
	if c.isClosed() {
		c.hub.Stats.FramesDropped.Add(1)
		return false
	}
	if err := c.ws.write(time.Now().Add(c.hub.opts.WriteTimeout), frame, statusID); err != nil {
		c.hub.Stats.FramesDropped.Add(1)
		c.writeFailed(err)
		return false
	}
	c.hub.Stats.FramesSent.Add(1)
	return true
}

// writeFailed closes the connection after a write to it failed.
func (c *conn) writeFailed(err error) {
	if !c.isClosed() {
		c.hub.log.Info("write failed; closing", "uid", c.uid, "conn", c.id, "err", err)
	}
	c.closeSoon(closeWriteFailed)
}
