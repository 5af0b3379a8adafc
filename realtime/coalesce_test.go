package realtime

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// A user coming and going many times a second costs each friend's stream
// one presence frame a second at most, and the last one tells the newest
// state; another user's frames are not held back by it.
func TestPresenceFramesCoalesced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	friend := e.signUp("friend")
	s := e.connect(friend)
	channel := e.social.UserChannel(friend.id)
	publish := func(uid int64, online bool) {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{
			"type": "presence", "user": map[string]any{"id": uid, "login": fmt.Sprint("u", uid), "name": "N"},
			"online": online, "last_seen": time.Now(),
		})
		if err := e.rdb.Publish(t.Context(), channel, raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for i := range 41 { // flaky: online, offline, ..., online
		publish(1001, i%2 == 0)
	}
	publish(1002, true)

	type got struct {
		uid    int64
		online bool
		at     time.Duration
	}
	var frames []got
	deadline := time.After(2500 * time.Millisecond)
read:
	for {
		select {
		case f := <-s.frames:
			if f.Type != "presence" {
				t.Fatalf("unexpected frame %+v", f)
			}
			frames = append(frames, got{f.User.ID, f.Online, time.Since(start)})
		case <-deadline:
			break read
		}
	}
	var about1001 []got
	for _, f := range frames {
		if f.uid == 1001 {
			about1001 = append(about1001, f)
		}
	}
	if len(frames)-len(about1001) != 1 {
		t.Fatalf("frames about the other user: %+v, want one", frames)
	}
	// The first at once; the rest held back a second. The first was
	// "online" and so is the newest: nothing more to tell.
	if len(about1001) != 1 || !about1001[0].online {
		t.Fatalf("frames about the flaky user: %+v, want one, online", about1001)
	}

	// Going offline and staying so: told, a second after the last frame.
	publish(1001, false)
	publish(1001, true)
	publish(1001, false)
	f := s.next(3 * time.Second)
	if f.Type != "presence" || f.User.ID != 1001 || f.Online {
		t.Fatalf("after the flaky user left: %+v, want presence offline", f)
	}
	if n := e.hub.Stats.PresenceCoalesced.Load(); n < 40 {
		t.Fatalf("PresenceCoalesced = %d, want at least 40", n)
	}
}

// A frame held back is flushed by what it tells against the last one let
// through about its user, though 64 users or more were told of since and
// the sweep of old entries ran before the flush: an offline frame held
// back after an online one is sent, never taken for the same.
func TestPresenceHeldFrameOutlivesTheSweep(t *testing.T) {
	t.Parallel()
	var g presenceGate
	t0 := time.Now()
	const uid = 1
	g.remember(uid, t0, true)
	g.pending = map[int64]heldPresence{uid: {frame: []byte("offline"), online: false}}
	for other := int64(2); other < 70; other++ {
		g.remember(other, t0, true)
	}
	g.remember(100, t0.Add(presenceGap), true) // sweeps those of t0
	held, send := g.flush(uid, t0.Add(presenceGap))
	if !send || string(held.frame) != "offline" {
		t.Fatalf("flush = %q, %v; want the offline frame sent", held.frame, send)
	}
	// Held back again, the same state as the last sent: not sent.
	g.pending[uid] = heldPresence{frame: []byte("offline again"), online: false}
	if _, send := g.flush(uid, t0.Add(2*presenceGap)); send {
		t.Fatal("a held frame telling what the last one told was sent")
	}
}

// A presence frame held back about a user is dropped when friend_removed
// about them comes: the stream is told the friendship ended, and nothing
// of the user's presence after it, which would put them back in the
// friends list.
func TestFriendRemovedDropsTheHeldPresenceFrame(t *testing.T) {
	t.Parallel()
	publish, frames := presenceStream(t)
	user := map[string]any{"id": 1001, "login": "u1001", "name": "N"}
	publish(map[string]any{"type": "presence", "user": user, "online": true, "last_seen": time.Now()})
	publish(map[string]any{"type": "presence", "user": user, "online": false, "last_seen": time.Now()}) // held back
	publish(map[string]any{"type": "friend_removed", "user": user})
	publish(map[string]any{"type": "presence", "user": map[string]any{"id": 1002, "login": "u1002", "name": "M"}, "online": true, "last_seen": time.Now()})
	// Up to the held frame's flush, and more.
	got := frames(4, presenceGap+1500*time.Millisecond)
	want := []string{"presence 1001 true", "friend_removed 1001 false", "presence 1002 true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("frames %q, want %q", got, want)
	}
}

// A friendship ended and made again within presenceGap is told again: the
// presence frame of the new one, held back for the gap, is sent though it
// tells what the one before friend_removed told, which the client forgot.
func TestFriendshipMadeAgainIsToldAgain(t *testing.T) {
	t.Parallel()
	publish, frames := presenceStream(t)
	user := map[string]any{"id": 1001, "login": "u1001", "name": "N"}
	publish(map[string]any{"type": "presence", "user": user, "online": true, "last_seen": time.Now()})
	publish(map[string]any{"type": "friend_removed", "user": user})
	publish(map[string]any{"type": "presence", "user": user, "online": true, "last_seen": time.Now()}) // held back
	got := frames(3, presenceGap+5*time.Second)
	want := []string{"presence 1001 true", "friend_removed 1001 false", "presence 1001 true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("frames %q, want %q", got, want)
	}
}

// presenceStream opens a stream and returns what publishes a frame on its
// user's channel, and what reads its frames ("type user-id online") until
// it has most of them or within has passed.
func presenceStream(t *testing.T) (publish func(map[string]any), frames func(most int, within time.Duration) []string) {
	e := newEnv(t, envOptions{})
	friend := e.signUp("friend")
	s := e.connect(friend)
	channel := e.social.UserChannel(friend.id)
	publish = func(frame map[string]any) {
		t.Helper()
		raw, _ := json.Marshal(frame)
		if err := e.rdb.Publish(t.Context(), channel, raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	frames = func(most int, within time.Duration) []string {
		var got []string
		deadline := time.After(within)
		for len(got) < most {
			select {
			case f := <-s.frames:
				got = append(got, fmt.Sprintf("%s %d %v", f.Type, f.User.ID, f.Online))
			case <-deadline:
				return got
			}
		}
		return got
	}
	return publish, frames
}
