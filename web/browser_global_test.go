package web_test

import (
	"fmt"
	"testing"

	"chorus/social"
)

// Signed in, the global timeline is fed by the stream: a post by someone
// the reader does not follow shows without a reload and without the page
// asking the server for anything (no poll, which comes every 15 s), and
// leaves the page when it is deleted.
func TestBrowserGlobalLive(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	bob := in.signUp(t, "gbob")
	bob.post("Bob's first word")

	br := newBrowser(t)
	alice := br.newTab(t, "alice", in.srv.URL)
	alice.signUpUI("galice", "Alice", "kettle-drum-41")
	alice.waitLive()
	alice.goTo("/global")
	alice.waitUntil("the global page fed by the stream", stepTimeout,
		`document.querySelector('.view[data-live="true"]') ? '' : 'not watching the stream yet'`)
	alice.waitUntil("bob's first post", stepTimeout, statusIn("timeline", "Bob's first word"))

	// What the page asked of the global timeline so far, and a mark that a
	// reload would wipe.
	reads := `performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/timelines/global')).length`
	before := eval[int](alice, reads)
	eval[bool](alice, `(window.chorusGlobalMark = true)`)

	st := bob.post("Bob, live on the global timeline")
	alice.waitUntil("bob's post shown live", stepTimeout, statusIn("timeline", st.Message))
	if after := eval[int](alice, reads); after != before {
		t.Errorf("the page read the global timeline %d times while the post arrived, want none", after-before)
	}
	bob.deleteStatus(st.ID)
	alice.waitUntil("bob's deleted post gone", stepTimeout, fmt.Sprintf(
		`document.querySelector('[data-testid="timeline"] [data-id="%d"]') ? 'still shown' : ''`, st.ID))
	if after := eval[int](alice, reads); after != before {
		t.Errorf("the page read the global timeline %d times while the post came and went, want none", after-before)
	}
	if !eval[bool](alice, `window.chorusGlobalMark === true`) {
		t.Error("the page was reloaded")
	}
	alice.keep("global-live-1280-light")
}
