package web_test

import (
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

// connState is a check that the header's connection indicator is in state.
func connState(state string) string {
	return `(() => {
		const el = document.querySelector('[data-testid="conn-state"]');
		if (!el) return 'no conn-state element';
		return el.dataset.state === ` + js(state) + ` ? '' : 'conn-state is ' + el.dataset.state + ' (' + el.textContent + ')';
	})()`
}

// While Redis stalls with a page open, the indicator stops saying Live,
// and a post fails within the client's 10 s timeout with a message, keeping
// its text; once Redis answers again the indicator says Live, the failure's
// message goes, and the same post goes through.
func TestBrowserRedisStall(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	t.Cleanup(srv.Resume) // a paused server would hold the cleanups up
	// As cmd/chorus makes it: a request's deadline bounds its Redis calls.
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	e := newEnv(t, social.Options{})
	e.realtime.HealthInterval = 500 * time.Millisecond
	in := e.startOn(rdb)
	in.signUp(t, "erin")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "erin")
	p.waitLive()
	// The feed's first page is in, and with it the resume the client sends
	// then: a resume the server is reading when Redis stops holds the
	// stream's frames, the service frame too, for up to 10 s.
	p.waitVisible(".empty")
	time.Sleep(500 * time.Millisecond)

	srv.Pause(t)
	paused := time.Now()
	p.waitUntil("the indicator leaves Live", 5*time.Second, `(() => {
		const el = document.querySelector('[data-testid="conn-state"]');
		return el.dataset.state === 'live' ? 'still live' : '';
	})()`)
	t.Logf("left Live %s after the pause", time.Since(paused))
	p.keep("stalled-1280-light")

	message := "Posted while the data store stalls"
	input := testID("composer-input")
	p.typeInto(input, message)
	start := time.Now()
	p.click(testID("composer-submit"))
	p.waitUntil("the post fails with a message", 12*time.Second, `(() => {
		const err = document.querySelector('[data-testid="composer-error"]');
		if (err.hidden) return 'no error yet; the button says ' + document.querySelector('[data-testid="composer-submit"]').textContent;
		return /did not answer|not sent/.test(err.textContent) ? '' : 'error says ' + err.textContent;
	})()`)
	took := time.Since(start)
	t.Logf("the post failed after %s", took.Round(100*time.Millisecond))
	if took > 11*time.Second {
		t.Errorf("the post took %s to fail", took)
	}
	if got := eval[string](p, `document.querySelector(`+js(input)+`).value`); got != message {
		t.Fatalf("the draft after the failure: %q", got)
	}
	p.keep("post-failed-1280-light")
	p.viewport(360, 780, true)
	p.colorScheme("dark")
	p.keep("post-failed-360-dark")

	srv.Resume()
	p.waitUntil("Live again", 20*time.Second, connState("live"))
	// The failure is old news once the connection is back: its message
	// goes, the draft stays.
	p.waitUntil("the failure's message gone", stepTimeout, `(() => {
		const err = document.querySelector('[data-testid="composer-error"]');
		return err.hidden ? '' : 'the composer still says ' + err.textContent;
	})()`)
	if got := eval[string](p, `document.querySelector(`+js(input)+`).value`); got != message {
		t.Fatalf("the draft once live again: %q", got)
	}
	p.click(testID("composer-submit"))
	p.waitUntil("the post went through", stepTimeout, `(() => {
		const err = document.querySelector('[data-testid="composer-error"]:not([hidden])');
		if (err) return 'composer error: ' + err.textContent;
		if (document.querySelector(`+js(input)+`).value !== '') return 'the composer still holds the draft';
		// The first try may have been carried out after all, once Redis woke.
		const n = [...document.querySelectorAll('[data-testid="feed"] [data-testid="status-message"]')]
			.filter((el) => el.textContent === `+js(message)+`).length;
		return n >= 1 ? '' : 'not in the feed';
	})()`)
}
