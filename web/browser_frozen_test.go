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
	st := &in.hub.Stats
	// serverClosed counts the streams the server closed, for any reason.
	serverClosed := func() int64 {
		return st.IdleClosed.Load() + st.SlowClosed.Load() + st.FloodClosed.Load() +
			st.ProtocolClosed.Load() + st.SessionClosed.Load() + st.Drained.Load()
	}
	frozenFor := 15 * interval
	// Chromium now and then closes a frozen page's WebSocket itself ("Page
	// entered Back-Forward Cache", as the browser log says): a stream the
	// server did not close is the browser's doing, and the freeze is tried
	// again, up to three times.
	for try := 1; ; try++ {
		testio.Eventually(t, time.Minute, func() string {
			if n := st.Open.Load(); n != 1 {
				return fmt.Sprintf("%d streams open before the freeze, want 1", n)
			}
			return ""
		})
		heartbeats, pongs := st.Heartbeats.Load(), st.Pongs.Load()
		setState(page.SetWebLifecycleStateStateFrozen)
		time.Sleep(frozenFor)
		online, _, err := in.presence.UserPresence(t.Context(), u.User.ID)
		frames, open := st.Heartbeats.Load()-heartbeats, st.Open.Load()
		setState(page.SetWebLifecycleStateStateActive)
		if n := serverClosed(); n != 0 {
			t.Fatalf("after %s frozen: the server closed %d streams (%d idle); want none", frozenFor, n, st.IdleClosed.Load())
		}
		if open != 1 && try < 3 {
			t.Logf("try %d: the browser closed the frozen page's stream; freezing again", try)
			ada.waitLive()
			continue
		}
		if open != 1 {
			t.Fatalf("after %s frozen: %d streams open, want 1 (the browser closed it in every try)", frozenFor, open)
		}
		if err != nil || !online {
			t.Fatalf("after %s frozen: online = %v (%v), want true", frozenFor, online, err)
		}
		if frames > 1 || st.Pongs.Load()-pongs < 10 {
			t.Fatalf("while frozen: %d heartbeat frames and %d pongs; want none (or one racing the freeze) and about 15", frames, st.Pongs.Load()-pongs)
		}
		break
	}
	ada.waitLive()
}
