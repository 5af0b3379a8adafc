package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"chorus/social"
)

// A resume posted on an event stream that was sent a newer status live
// sends the older ones, each with its own event id: a client whose
// connection drops part way through reconnects with the last id it holds
// (as an EventSource does) and is sent the rest, with no gap.
func TestEventIDsOfAResumeLeaveNoGap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in := e.start()
	ann := in.signUp(t, "ann_gap")
	bob := in.signUp(t, "bob_gap")
	bob.follow(ann.login)

	var old []int64
	for i := range 5 {
		old = append(old, ann.post(fmt.Sprintf("old %d", i)).ID)
	}
	bs := bob.openEvents("")
	live := ann.post("live").ID
	if ev := bs.nextOf("status", 10*time.Second); ev.frame.Status.ID != live {
		t.Fatalf("live %s, want status %d", ev.raw, live)
	}
	// The client fills in what it missed, after old[0].
	bob.must(http.StatusAccepted, "POST", "/api/v1/stream/"+bs.streamID(),
		map[string]any{"type": "resume", "after": old[0]}, nil)
	var lastID string
	for _, want := range old[1:3] { // the client reads two, then its connection drops
		ev := bs.nextOf("status", 10*time.Second)
		if ev.frame.Status.ID != want {
			t.Fatalf("resumed %s, want status %d", ev.raw, want)
		}
		lastID = ev.id
	}
	bs.drop()

	rs := bob.openEvents("", "Last-Event-ID", lastID)
	marker := ann.post("marker").ID
	var got []int64
	for _, ev := range rs.eventsUntil(marker, 10*time.Second) {
		if ev.frame.Type == "status" {
			got = append(got, ev.frame.Status.ID)
		}
	}
	want := append(slices.Clone(old[3:]), live, marker)
	if !slices.Equal(got, want) {
		t.Fatalf("after reconnecting with Last-Event-ID %s: %v, want %v", lastID, got, want)
	}
}
