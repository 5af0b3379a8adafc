package web_test

import (
	"testing"
	"time"

	"chorus/social"
)

// siteSays is a check that the sidebar's site-wide line starts with want.
func siteSays(want string) string {
	return `(() => {
		const p = document.querySelector('.site-presence');
		if (!p || p.hidden) return 'no site counts';
		return p.textContent.startsWith(` + js(want) + `) ? '' : 'site counts: ' + p.textContent;
	})()`
}

// Two people who do not follow each other sign up one after the other:
// each one's site count comes to "2 people" within a few heartbeat
// intervals, though no presence frame tells either of the other and each
// instance serves its counts for a heartbeat interval.
func TestBrowserSiteCountsSeeArrivals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	interval := 2 * time.Second
	e.presence.HeartbeatInterval, e.presence.CountsTTL = interval, interval
	in := e.start()
	// Several poll intervals under load, and half the minute the client
	// once waited between two reads.
	const within = 30 * time.Second

	br := newBrowser(t)
	ada := br.newTab(t, "ada", in.srv.URL)
	ada.signUpUI("ada", "Ada Lovelace", "password-ada")
	ada.waitLive()
	ada.waitUntil("ada counts herself", within, siteSays("1 person on Chorus now"))

	bob := br.newTab(t, "bob", in.srv.URL)
	bob.signUpUI("bob", "Bob Babbage", "password-bob")
	bob.waitLive()
	bob.waitUntil("bob counts both", within, siteSays("2 people on Chorus now"))
	ada.waitUntil("ada counts bob", within, siteSays("2 people on Chorus now"))
}
