package realtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/presence"
	"chorus/protocol"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
)

// A client that sends no frame at all, as a background tab whose timers the
// browser froze, stays open and online on its pongs alone: the hub pings it
// every interval and writes presence once per interval.
func TestPongsKeepAStreamOnline(t *testing.T) {
	t.Parallel()
	interval := 100 * time.Millisecond
	e := newEnv(t, envOptions{
		hub: Options{HeartbeatInterval: interval},
		// A window far past the interval: on a busy machine a pong may be
		// late, and a stream still open must stay online.
		presence: presence.Options{HeartbeatInterval: interval, Window: 5 * time.Second},
	})
	quiet := e.signUp("quiet")
	s := e.connect(quiet) // reads, so its library answers pings; sends nothing
	time.Sleep(12 * interval)
	if !s.isOpen() {
		t.Fatalf("a stream answering pings was closed: %v", s.closeErr)
	}
	online, _, err := e.presence.UserPresence(t.Context(), quiet.id)
	if err != nil || !online {
		t.Fatalf("after 12 intervals of pongs alone: online = %v (%v), want true", online, err)
	}
	st := &e.hub.Stats
	if p, r := st.Pongs.Load(), st.HeartbeatsRecorded.Load(); p < 6 || r < 6 || r > 13 {
		t.Fatalf("pongs = %d, heartbeats recorded = %d: want one of each per interval", p, r)
	}
	if n := st.Heartbeats.Load(); n != 0 {
		t.Fatalf("heartbeat frames = %d, want none", n)
	}
}

// A client that answers nothing, not even pings (its connection stalled),
// is closed with 4000 after three intervals.
func TestUnansweringStreamClosed(t *testing.T) {
	t.Parallel()
	interval := 100 * time.Millisecond
	e := newEnv(t, envOptions{hub: Options{HeartbeatInterval: interval}})
	u := e.signUp("stalled")
	ws, res, err := e.dial(u, nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, res)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, _, err := ws.Read(ctx); err != nil { // the ready frame
		t.Fatal(err)
	}
	time.Sleep(6 * interval) // reading nothing: pings go unanswered
	for {
		_, _, err := ws.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != protocol.CloseHeartbeatTimeout {
			t.Fatalf("a stream answering nothing ended with %v, want %d", err, protocol.CloseHeartbeatTimeout)
		}
		break
	}
	if n := e.hub.Stats.IdleClosed.Load(); n != 1 {
		t.Fatalf("IdleClosed = %d, want 1", n)
	}
}

// The activity of all of an instance's streams is written in one script
// call per flush, not one per stream, and every one of them stays online.
func TestActivityWrittenInBatches(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	interval := 200 * time.Millisecond
	e := newEnv(t, envOptions{
		rdb: rdb,
		hub: Options{HeartbeatInterval: interval, BeatFlushInterval: 100 * time.Millisecond},
		// A window far past the interval: on a busy machine a pong may be
		// late, and a stream still open must stay online.
		presence: presence.Options{HeartbeatInterval: interval, Window: 30 * time.Second},
	})
	const n = 30
	var users []user
	for i := range n {
		u := e.signUp(fmt.Sprintf("user_%d", i))
		e.connect(u)
		users = append(users, u)
	}
	// The scripts that write activity, counted as the client sends them:
	// those that write a minute's HyperLogLog of active users. The rest
	// (leases, sweeps) run by the clock, so a run a busy machine slows
	// down would count more of them than of beats.
	beats := &activityScripts{}
	rdb.AddHook(&eachCommand{do: func(c redis.Cmder) error { beats.count(c); return nil }})
	recorded, scripts := e.hub.Stats.HeartbeatsRecorded.Load(), beats.n.Load()
	// Ten beats a stream, however long a busy machine takes for them.
	testio.Eventually(t, time.Minute, func() string {
		if got := e.hub.Stats.HeartbeatsRecorded.Load() - recorded; got < 10*n {
			return fmt.Sprintf("%d beats recorded of %d streams, want %d", got, n, 10*n)
		}
		return ""
	})
	recorded, scripts = e.hub.Stats.HeartbeatsRecorded.Load()-recorded, beats.n.Load()-scripts
	if scripts == 0 {
		t.Fatalf("%d beats recorded and no script wrote them", recorded)
	}
	// About one script a flush (ten a second), whatever the number of
	// streams: some fifteen beats a script here. The bound, two, still
	// tells a script per flush from a script per stream (one beat each),
	// with room for a slow machine, where fewer beats come between flushes.
	if scripts > recorded/2 {
		t.Fatalf("%d scripts ran for %d beats of %d streams, want a few per interval", scripts, recorded, n)
	}
	for _, u := range users {
		if online, _, err := e.presence.UserPresence(t.Context(), u.id); err != nil || !online {
			t.Fatalf("%s: online = %v (%v), want true", u.login, online, err)
		}
	}
}

// activityScripts counts the scripts a client sends that write the
// activity of users: those among whose keys is a minute's HyperLogLog of
// active users (heartbeats.lua, register.lua).
type activityScripts struct{ n atomic.Int64 }

func (h *activityScripts) count(cmd redis.Cmder) {
	if name := cmd.Name(); name != "eval" && name != "evalsha" {
		return
	}
	args := cmd.Args()
	if len(args) < 3 {
		return
	}
	keys, _ := args[2].(int)
	for i := 3; i < 3+keys && i < len(args); i++ {
		if k, ok := args[i].(string); ok && strings.Contains(k, "active.hll:") {
			h.n.Add(1)
			return
		}
	}
}

// failingBeats is the hub's presence with its first flush of beats lost
// (with err, or a Redis error); the beats of each flush after it are told
// on after.
type failingBeats struct {
	Presence
	err    error
	mu     sync.Mutex
	failed bool
	after  chan []presence.Beat
}

func (f *failingBeats) Heartbeats(ctx context.Context, beats []presence.Beat) error {
	f.mu.Lock()
	if !f.failed && len(beats) > 0 {
		f.failed = true
		f.mu.Unlock()
		if f.err != nil {
			return f.err
		}
		return errors.New("the flush was lost")
	}
	failed := f.failed
	f.mu.Unlock()
	if failed {
		select {
		case f.after <- slices.Clone(beats):
		default: // the test has what it reads
		}
	}
	return f.Presence.Heartbeats(ctx, beats)
}

// A flush of beats that failed is carried by the next one: a connection
// beats once an interval, and two beats lost in a row would age its user
// out while connected.
func TestFailedBeatFlushCarriedByTheNext(t *testing.T) {
	t.Parallel()
	t.Run("lost", func(t *testing.T) {
		t.Parallel()
		flushAfterLost(t, nil, true)
	})
	// A beat presence refuses as malformed is not: it would fail every
	// flush after it, and with them the instance's lease.
	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		flushAfterLost(t, fmt.Errorf("%w: a beat of no one", presence.ErrInvalid), false)
	})
}

// flushAfterLost loses a connection's first flushed beat with err (nil: a
// Redis error), and checks whether the next flush carries it.
func flushAfterLost(t *testing.T, err error, carried bool) {
	interval := 4 * time.Second
	f := &failingBeats{err: err, after: make(chan []presence.Beat, 1000)}
	e := newEnv(t, envOptions{
		hub:      Options{HeartbeatInterval: interval, BeatFlushInterval: 50 * time.Millisecond},
		presence: presence.Options{HeartbeatInterval: interval, Window: 3 * interval},
		pres: func(p *presence.Tracker) Presence {
			f.Presence = p
			return f
		},
	})
	u := e.signUp("steady")
	s := e.connect(u)
	// Its first beat: a frame in its window 1, from half an interval on.
	time.Sleep(interval / 2)
	s.ping()
	// The flush after the lost one carries it, though the connection's next
	// beat (window 2) is an interval away.
	select {
	case beats := <-f.after:
		if got := slices.ContainsFunc(beats, func(b presence.Beat) bool { return b.UID == u.id }); got != carried {
			t.Fatalf("the flush after the lost one carried %v: steady's beat there %v, want %v", beats, got, carried)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no flush after the lost one")
	}
}
