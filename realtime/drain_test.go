package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"chorus/presence"
	"chorus/protocol"

	"github.com/coder/websocket"
)

// A drain tells each stream to reconnect, closes it with 1001, refuses new
// streams, and leaves presence alone: a friend on another instance is
// told nothing while the user moves there.
func TestDrainClosesWithReconnect(t *testing.T) {
	t.Parallel()
	a := newEnv(t, envOptions{})
	b := a.peer(envOptions{})
	alice, bob := a.signUp("alice"), a.signUp("bob")
	a.follow(alice, bob)
	a.follow(bob, alice)
	watcher := b.connect(bob)
	var moving []*stream
	for range 3 {
		moving = append(moving, a.connect(alice))
	}
	if f := watcher.next(10 * time.Second); f.Type != protocol.TypePresence || !f.Online {
		t.Fatalf("bob was sent %v, want alice online", f)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := a.hub.Drain(ctx, time.Second); err != nil {
		t.Fatalf("drain: %v", err)
	}
	for i, s := range moving {
		code, frames := s.closed(10 * time.Second)
		if code != protocol.CloseGoingAway {
			t.Errorf("stream %d closed with %v, want %d", i, code, protocol.CloseGoingAway)
		}
		if n := len(frames); n == 0 || frames[n-1].Type != protocol.TypeReconnect {
			t.Errorf("stream %d was sent %v, last of all want reconnect", i, describe(frames))
		}
	}
	if got := a.hub.Stats.Drained.Load(); got != 3 {
		t.Errorf("Drained = %d, want 3", got)
	}
	if !a.hub.Draining() {
		t.Error("Draining() = false after a drain")
	}
	if _, res, err := a.dial(alice, nil); err == nil || res == nil {
		t.Fatalf("a stream opened on the drained hub: %v", err)
	}
	if err := a.refusal(); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("refused for %v, want ErrShuttingDown", err)
	}

	// Alice comes back on b; bob is told nothing of her going or coming.
	b.connect(alice)
	online, _, err := b.presence.UserPresence(ctx, alice.id)
	if err != nil || !online {
		t.Fatalf("alice online = %v (%v), want true", online, err)
	}
	watcher.ping()
	if frames := watcher.until(protocol.CodeUnknownType, 10*time.Second); len(frames) != 0 {
		t.Fatalf("bob was sent %v while alice moved, want nothing", describe(frames))
	}
}

// A drain cut short closes the rest at once, each told to reconnect within
// what was left of the window, so that they spread themselves.
func TestDrainCutShortSpreadsTheRest(t *testing.T) {
	t.Parallel()
	a := newEnv(t, envOptions{})
	alice := a.signUp("alice")
	const streams = 4
	var wss []*websocket.Conn
	for range streams {
		ws, _, err := a.dial(alice, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		wss = append(wss, ws)
	}
	readCtx, cancelRead := context.WithTimeout(t.Context(), time.Minute)
	defer cancelRead()
	for _, ws := range wss {
		if _, raw, err := ws.Read(readCtx); err != nil || !json.Valid(raw) {
			t.Fatalf("ready: %v", err)
		}
	}

	// A window of an hour: the first stream goes at once, the next not
	// before 100 ms, when the drain is cut short already.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := a.hub.Drain(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("drain returned %v, want context.Canceled", err)
	}
	now, later := 0, 0
	for i, ws := range wss {
		var got protocol.Reconnect
		for got.Type != protocol.TypeReconnect {
			_, raw, err := ws.Read(readCtx)
			if err != nil {
				t.Fatalf("stream %d: %v before a reconnect frame", i, err)
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case got.WithinMS == 0:
			now++
		case got.WithinMS > int64(59*time.Minute/time.Millisecond):
			later++
		default:
			t.Errorf("stream %d told to reconnect within %d ms", i, got.WithinMS)
		}
		if _, _, err := ws.Read(readCtx); websocket.CloseStatus(err) != protocol.CloseGoingAway {
			t.Errorf("stream %d ended with %v, want %d", i, err, protocol.CloseGoingAway)
		}
	}
	if now != 1 || later != streams-1 {
		t.Fatalf("%d told to reconnect at once and %d within the window, want 1 and %d", now, later, streams-1)
	}
}

// The streams a drain moves count no longer against their user's cap of
// live connections: a user with as many streams as the cap, all moved,
// reconnects them all to another instance at once, and stays online
// throughout, told offline to no friend.
func TestDrainedStreamsFreeTheirPlaces(t *testing.T) {
	t.Parallel()
	o := envOptions{presence: presence.Options{MaxConnsPerUser: 3}}
	a := newEnv(t, o)
	b := a.peer(o)
	alice := a.signUp("alice")
	var moving []*stream
	for range 3 {
		moving = append(moving, a.connect(alice))
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := a.hub.Drain(ctx, 300*time.Millisecond); err != nil {
		t.Fatalf("drain: %v", err)
	}
	for _, s := range moving {
		s.closed(10 * time.Second)
	}
	for i := range 3 {
		ws, res, err := b.dial(alice, nil)
		if err != nil {
			code := 0
			if res != nil {
				code = res.StatusCode
			}
			t.Fatalf("reconnect %d after the drain: %v (%d, %v)", i, err, code, b.refusal())
		}
		s := newStream(t, ws)
		if f := s.next(10 * time.Second); f.Type != protocol.TypeReady {
			t.Fatalf("reconnect %d: first frame %v, want ready", i, f)
		}
	}
	if online, err := b.presence.Presences(t.Context(), []int64{alice.id}); err != nil || !online[0].Online {
		t.Errorf("alice after her streams moved: %+v, %v; want online", online, err)
	}
}
