package realtime

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/presence"
)

// A user holding all the connections presence allows is refused another
// stream before the upgrade, and the refused stream never counts.
func TestUserStreamCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{presence: presence.Options{MaxConnsPerUser: 1}})
	u := e.signUp("many_tabs")
	first := e.connect(u)

	if _, _, err := e.dial(u, nil); err == nil {
		t.Fatal("second stream over a cap of 1 opened")
	}
	if err := e.refusal(); !errors.Is(err, presence.ErrTooManyConnections) {
		t.Fatalf("refused with %v, want presence.ErrTooManyConnections", err)
	}
	if n := e.hub.Stats.UserStreamsRefused.Load(); n != 1 {
		t.Fatalf("UserStreamsRefused = %d, want 1", n)
	}
	// With the one stream it holds closed, the user is offline: the refused
	// one registered nothing.
	first.ws.Close(1000, "")
	testio.Eventually(t, 5*time.Second, func() string {
		if online, _, err := e.presence.UserPresence(t.Context(), u.id); err != nil || online {
			return fmt.Sprintf("user online %v (%v) with no stream", online, err)
		}
		return ""
	})
	e.connect(u) // and may open one again
}

// The hub leaves the Origin to the edge, which checks it before Serve.
func TestHubLeavesOriginToTheEdge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	u := e.signUp("traveller")
	if _, res, err := e.dial(u, http.Header{"Origin": {"https://elsewhere.example"}}); err != nil {
		t.Fatalf("dial with an Origin web let through: %v (%v)", err, res)
	}
}
