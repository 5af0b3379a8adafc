package realtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/social"

	"github.com/coder/websocket"
)

// joinHookFeed runs a hook, once, when the hub first reads the last status
// id: as a stream opens, just before it joins, its subscription not live.
type joinHookFeed struct {
	*social.Service
	hook atomic.Pointer[func()]
}

func (f *joinHookFeed) LastStatusID(ctx context.Context) (int64, error) {
	if hook := f.hook.Swap(nil); hook != nil {
		(*hook)()
	}
	return f.Service.LastStatusID(ctx)
}

// A sign-out while the stream is being opened, published before the
// stream's subscription was live, still ends the stream.
func TestStreamSignedOutWhileOpening(t *testing.T) {
	t.Parallel()
	var feed *joinHookFeed
	e := newEnv(t, envOptions{feed: func(s *social.Service) Feed {
		feed = &joinHookFeed{Service: s}
		return feed
	}})
	u := e.signUp("leaver")
	signOut := func() { e.signOut(context.Background(), u) }
	feed.hook.Store(&signOut)

	ws, _, err := e.dial(u, nil)
	if err == nil {
		if code, _ := newStream(t, ws).closed(5 * time.Second); code != websocket.StatusPolicyViolation {
			t.Fatalf("stream of a session signed out while it opened closed with %v, want 1008", code)
		}
	} else {
		if why := e.refusal(); !errors.Is(why, ErrSessionEnded) {
			t.Fatalf("stream refused (%v) for %v, want ErrSessionEnded or a stream closed with 1008", err, why)
		}
		if n := e.hub.Stats.SessionRefused.Load(); n != 1 {
			t.Fatalf("SessionRefused = %d, want 1", n)
		}
	}
	testio.Eventually(t, 5*time.Second, func() string {
		if online, _, err := e.presence.UserPresence(t.Context(), u.id); err != nil || online {
			return fmt.Sprintf("user online %v (%v) after the stream was refused", online, err)
		}
		if n := e.hub.Stats.Open.Load(); n != 0 {
			return fmt.Sprintf("%d streams open", n)
		}
		return ""
	})
}

// After Redis lost its data, a new user given the uid of an old stream's
// user never reaches that stream: it is closed first.
func TestStreamClosedWhenItsUserIsCreatedAnew(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	e := newEnv(t, envOptions{rdb: rdb})
	old := e.signUp("old_user")
	s := e.connect(old)

	if err := rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	fresh := e.signUp("new_user")
	if fresh.id != old.id {
		t.Fatalf("the new user got uid %d, want the old one's %d", fresh.id, old.id)
	}
	e.post(fresh, "for the new user's eyes only")
	code, frames := s.closed(5 * time.Second)
	if code != websocket.StatusPolicyViolation {
		t.Fatalf("old stream closed with %v, want 1008", code)
	}
	if len(frames) != 0 {
		t.Fatalf("old stream was sent %+v before it closed, want nothing", frames)
	}
	if n := e.hub.Stats.SessionClosed.Load(); n != 1 {
		t.Fatalf("SessionClosed = %d, want 1", n)
	}
}

// A session ended with nothing published (expired, deleted) is found by
// the periodic check.
func TestPeriodicSessionCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{hub: Options{SessionCheckInterval: 20 * time.Millisecond}})
	gone, kept := e.signUp("gone"), e.signUp("kept")
	gs, ks := e.connect(gone), e.connect(kept)
	// The session ends without telling the hub.
	e.dropSession(t.Context(), gone)
	if code, _ := gs.closed(5 * time.Second); code != websocket.StatusPolicyViolation {
		t.Fatalf("stream of an ended session closed with %v, want 1008", code)
	}
	st := e.post(kept, "still here")
	if f := ks.next(5 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
		t.Fatalf("stream of a live session got %+v, want status %d", f, st.ID)
	}
	if n := e.hub.Stats.SessionClosed.Load(); n != 1 {
		t.Fatalf("SessionClosed = %d, want 1", n)
	}
}

// When the pub/sub connection comes back, a stream whose session Redis no
// longer has is closed before it is sent anything more; the others catch up
// and carry on live.
func TestPubSubReconnectChecksSessions(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	e := newEnv(t, envOptions{rdb: rdb})
	gone, kept := e.signUp("gone"), e.signUp("kept")
	gs, ks := e.connect(gone), e.connect(kept)

	// Redis loses gone's session (nothing is published), and the hub its
	// pub/sub connection.
	e.dropSession(t.Context(), gone)
	if err := rdb.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	missed := e.post(kept, "posted while the hub was away")
	var live int64 = 1_000_000
	var got []int64
	testio.Eventually(t, 15*time.Second, func() string {
		live++
		for _, u := range []user{gone, kept} {
			payload := fmt.Sprintf(`{"type":"status","status":{"id":%d,"uid":%d,"login":"x","message":"m","posted":"2026-01-01T00:00:00Z"}}`, live, u.id)
			if err := rdb.Publish(t.Context(), e.social.UserChannel(u.id), payload).Err(); err != nil {
				return err.Error()
			}
		}
		select {
		case f := <-ks.frames:
			if f.Type == "status" {
				got = append(got, f.Status.ID)
			}
			if f.Status != nil && f.Status.ID >= 1_000_000 {
				return ""
			}
			return "no live status yet"
		case <-time.After(100 * time.Millisecond):
			return "no live status after the pub/sub connection came back"
		}
	})
	code, frames := gs.closed(5 * time.Second)
	if code != websocket.StatusPolicyViolation {
		t.Fatalf("stream of a lost session closed with %v, want 1008", code)
	}
	if len(frames) != 0 {
		t.Fatalf("stream of a lost session was sent %+v, want nothing", frames)
	}
	ks.ping()
	got = append(got, statusIDs(ks.until("unknown_type", 5*time.Second))...)
	if n := count(got, missed.ID); n != 1 {
		t.Fatalf("the status posted while away came %d times (%v), want once", n, got)
	}
	if n := e.hub.Stats.SessionClosed.Load(); n != 1 {
		t.Fatalf("SessionClosed = %d, want 1", n)
	}
	if e.hub.Stats.PubSubRestarts.Load() == 0 {
		t.Fatal("no pub/sub restart counted")
	}
}

func count(ids []int64, id int64) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}
