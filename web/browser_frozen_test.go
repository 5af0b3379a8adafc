package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// A tab whose page is frozen (no timer runs, as Chrome does to background
// tabs) for far longer than three heartbeat intervals stays online and keeps
// its stream: the browser answers the server's pings by itself.
func TestBrowserFrozenTabStaysOnline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	// Short enough that fifteen intervals pass quickly, long enough that a
	// busy machine's late pong does not end the stream before the freeze.
	// The window, ten intervals, is shorter than the freeze, so a stream
	// kept by nothing but its page's heartbeats would be offline after it,
	// and long enough that a flush of presence late on a busy machine (a
	// Redis Cluster beside other suites) does not let the instance's lease
	// run out.
	interval := 500 * time.Millisecond
	e.presence.HeartbeatInterval, e.presence.Window = interval, 10*interval
	in := e.start()
	br := newBrowser(t)
	ada := br.newTab(t, "ada", in.srv.URL)
	ada.signUpUI("ada", "Ada Lovelace", "password-ada")
	ada.waitLive()
	var u struct{ User userJSON }
	in.anon(t).must(http.StatusOK, "GET", "/api/v1/users/ada", nil, &u)

	setState := func(state page.SetWebLifecycleStateState) {
		t.Helper()
		if _, err := chromedp.Call(ada.ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: state}); err != nil {
			t.Fatalf("set lifecycle %s: %v", state, err)
		}
	}
	testio.Eventually(t, time.Minute, func() string {
		if n := in.hub.Stats.Open.Load(); n != 1 {
			return fmt.Sprintf("%d streams open before the freeze, want 1", n)
		}
		return ""
	})
	heartbeats := in.hub.Stats.Heartbeats.Load()
	setState(page.SetWebLifecycleStateStateFrozen)
	frozenFor := 15 * interval
	time.Sleep(frozenFor)
	online, _, err := in.presence.UserPresence(t.Context(), u.User.ID)
	st := &in.hub.Stats
	frames := st.Heartbeats.Load() - heartbeats
	setState(page.SetWebLifecycleStateStateActive)
	if err != nil || !online {
		t.Fatalf("after %s frozen: online = %v (%v), want true", frozenFor, online, err)
	}
	if n := st.IdleClosed.Load(); n != 0 || st.Open.Load() != 1 {
		t.Fatalf("after %s frozen: %d streams closed idle, %d open; want 0 and 1", frozenFor, n, st.Open.Load())
	}
	if frames > 1 || st.Pongs.Load() < 10 {
		t.Fatalf("while frozen: %d heartbeat frames and %d pongs; want none (or one racing the freeze) and about 15", frames, st.Pongs.Load())
	}
	ada.waitLive()
}
