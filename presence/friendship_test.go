package presence

import (
	"testing"
	"time"

	"chorus/protocol"
)

// A friendship made tells each new friend the other's presence, through
// their channels: the connected one as online, the other as offline, its
// last_seen null when never seen.
func TestAnnounceFriendship(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		const on, off = 11, 12
		onHears, offHears := e.subscribe(t, on), e.subscribe(t, off)
		mustConnect(t, tr, on, "a") // no friends yet: nobody is told
		e.befriend(t, on, off)
		if err := tr.AnnounceFriendship(ctxT(t), on, off); err != nil {
			t.Fatal(err)
		}
		checkEvent(t, nextEvent(t, offHears, 5*time.Second), on, true)
		ev := nextEvent(t, onHears, 5*time.Second)
		want := protocol.UserRef{ID: off, Login: "user12", Name: "User 12"}
		if ev.Type != protocol.TypePresence || ev.User != want || ev.Online || ev.LastSeen != nil {
			t.Fatalf("event %+v, want presence of %+v offline, never seen", ev, want)
		}
		noEvent(t, onHears, 100*time.Millisecond)
		noEvent(t, offHears, 100*time.Millisecond)
	})
}
