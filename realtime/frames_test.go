package realtime

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"chorus/protocol"
	"chorus/social"
)

// On one Redis a fan-out sends a status frame for many users in one
// message on the frames channel (bus.FramesChannel): the hub hands it to
// the streams of those of them it holds, each stream once, and to no one
// else; a message not made that way, or a frame other than a status, is
// dropped.
func TestFramesForManyUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	channel := e.hub.bus.FramesChannel()
	if channel == "" {
		t.Fatal("no frames channel on one Redis")
	}
	// The hub marks its instance as a reader of the channel once Redis
	// confirms it, for a while ahead (see markFramesReader).
	deadline := time.Now().Add(30 * time.Second)
	for {
		until, err := e.rdb.ZScore(t.Context(), e.hub.bus.FramesReadersKey(), e.hub.opts.Instance).Result()
		if err == nil && until > float64(time.Now().Add(framesMarkFor/2).UnixMilli()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub's mark as a reader of the frames channel: %v, %v", until, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ada, bob, cy := e.signUp("fr_ada"), e.signUp("fr_bob"), e.signUp("fr_cy")
	ada1, ada2, bobs, cys := e.connect(ada), e.connect(ada), e.connect(bob), e.connect(cy)
	publish := func(msg string) {
		t.Helper()
		if err := e.rdb.Publish(t.Context(), channel, msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	status := func(id int64) string {
		raw, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: social.Status{
			ID: id, UID: cy.id, Login: cy.login, Message: "to many", Posted: time.Now(), Mentions: []protocol.Mention{},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	publish(fmt.Sprintf("%d 987654321 %d\n%s", ada.id, bob.id, status(900_001))) // one with no stream here
	publish("no newline " + status(900_002))
	publish(fmt.Sprintf("\n%s", status(900_003)))
	publish(fmt.Sprintf("%d %d\n", ada.id, cy.id))
	publish(fmt.Sprintf("%d %d\n%s", ada.id, cy.id, `{"type":"filler","seq":1}`))
	publish(fmt.Sprintf("%d\n%s", cy.id, `{"type":"status"`))
	// The same status again, as a redone push might send it: once a stream.
	publish(fmt.Sprintf("%d\n%s", bob.id, status(900_001)))

	// A frame for a user whose channel is not live here (not confirmed
	// yet) waits for nothing: it is not handed on, as none on the channel
	// would be.
	cyChannel := e.hub.bus.UserChannel(cy.id)
	e.hub.mu.Lock()
	e.hub.live[cyChannel] = false
	e.hub.mu.Unlock()
	publish(fmt.Sprintf("%d\n%s", cy.id, status(900_004)))
	publish(fmt.Sprintf("%d\n%s", ada.id, status(900_005))) // behind it on the one connection
	ada1.upTo(func(f frame) bool { return f.Type == "status" && f.Status != nil && f.Status.ID == 900_005 }, 10*time.Second)
	e.hub.mu.Lock()
	e.hub.live[cyChannel] = true
	e.hub.mu.Unlock()

	for _, tc := range []struct {
		u    user
		s    *stream
		want []int64
	}{{ada, ada1, nil}, {ada, ada2, []int64{900_001, 900_005}}, {bob, bobs, []int64{900_001}}, {cy, cys, nil}} {
		var got []int64
		for _, f := range e.routed(tc.u, tc.s) {
			switch {
			case f.Type == "status" && f.Status != nil:
				got = append(got, f.Status.ID)
			case f.Type == "filler":
				t.Errorf("%s got a frame that is not a status from the frames channel", tc.u.login)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s's stream got statuses %v, want %v", tc.u.login, got, tc.want)
		}
	}
}

// parseEvent reads a status frame's id and author from its first bytes, as
// protocol encodes them; a status frame in another shape is decoded in
// full, to the same event. originalAuthor reads a repost entry's original's
// author, and 0 from any other status frame.
func TestStatusFramesAuthors(t *testing.T) {
	t.Parallel()
	frame := func(st protocol.Status) []byte { return statusFrameJSON(st) }
	type want struct{ id, uid, original int64 }
	for name, c := range map[string]struct {
		payload []byte
		want    want
	}{
		"a status": {frame(protocol.Status{ID: 42, UID: 7, Message: "hi"}), want{42, 7, 0}},
		"a reply": {frame(protocol.Status{ID: 43, UID: 7, ReplyTo: &protocol.StatusRef{ID: 42, UID: 9}}),
			want{43, 7, 0}},
		"a message naming the field": {frame(protocol.Status{ID: 44, UID: 7, Message: `"repost_of":{"uid":5}`}),
			want{44, 7, 0}},
		"a repost entry": {frame(protocol.Status{ID: 45, UID: 7, RepostOf: &protocol.Status{ID: 40, UID: 5}}),
			want{45, 7, 5}},
		"another order": {[]byte(`{"status":{"uid":7,"id":46,"repost_of":{"id":40,"uid":5}},"type":"status"}`),
			want{46, 7, 5}},
		"no author": {[]byte(`{"type":"status","status":{"id":47}}`), want{47, 0, 0}},
	} {
		ev, err := parseEvent(c.payload)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := want{ev.Status.ID, ev.Status.UID, originalAuthor(c.payload)}
		if ev.Type != protocol.TypeStatus || got != c.want {
			t.Errorf("%s: %s, status %+v, want status with %+v", name, ev.Type, got, c.want)
		}
	}
}
