package web_test

import (
	"net/http"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
)

// Block from a post's "…" menu: the question, then the post leaves the
// feed and the server holds the block; the profile's menu then offers
// Unblock, which takes it back.
func TestBrowserBlockFromPostMenu(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	one := in.start()
	ada := one.signUpAs(t, "ada", "Ada Lovelace")
	bob := one.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")
	bob.follow("ada")
	bob.post("hello from bob")

	br := newBrowser(t)
	p := br.newTab(t, "ada", one.srv.URL)
	p.signInUI("ada", "password-ada")
	p.waitUntil("bob's post in the feed", stepTimeout, statusIn("feed", "hello from bob"))
	id := p.statusID("feed", "hello from bob")
	item := testID("feed", ` [data-id="`+id+`"] `)
	p.click(item + testID("status-menu"))
	p.waitVisible(item + testID("block"))
	p.click(item + testID("block"))
	p.waitVisible(item + testID("block-confirm"))
	p.click(item + testID("block-confirm"))
	p.waitUntil("bob's post gone from the feed", stepTimeout, `document.querySelector(`+js(item)+`) === null ? '' : 'still shown'`)
	testio.Eventually(t, 5*time.Second, func() string {
		if u := ada.user("bob"); u.Blocking != nil && *u.Blocking && !*u.YouFollow && !*u.FollowsYou {
			return ""
		}
		return "the server does not say ada blocks bob, following neither way"
	})

	p.goTo("/u/bob")
	p.waitVisible(testID("profile-menu"))
	p.click(testID("profile-menu"))
	p.waitVisible(testID("unblock"))
	p.click(testID("unblock"))
	p.waitVisible(testID("profile-menu-items") + " " + testID("block"))
	testio.Eventually(t, 5*time.Second, func() string {
		if u := ada.user("bob"); u.Blocking != nil && !*u.Blocking {
			return ""
		}
		return "ada still blocks bob"
	})
}

// A link a user writes into this site's API (an export of the reader's
// account, whose click would spend one of their exports) is shown as text,
// in a status and in a bio, written plainly or with its path escaped, while
// a link elsewhere stays a link. And the client runs with Trusted Types
// enforced: a string given to innerHTML throws.
func TestBrowserLinksIntoTheAPIStayText(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	mal := in.signUp(t, "mallory")
	ada := in.signUp(t, "ada")
	ada.follow("mallory")
	message := "free stuff: " + in.srv.URL + "/api/v1/me/export and https://example.com/fine"
	mal.post(message)
	bio := "see " + in.srv.URL + "/%61pi/v1/me/export or https://example.com/me"
	mal.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": bio}, nil)

	br := newBrowser(t)
	p := br.newTab(t, "ada", in.srv.URL)
	p.signInUI("ada", "password-ada")
	p.waitUntil("mallory's status", stepTimeout, statusIn("feed", message))
	links := func(sel string) string {
		return `[...document.querySelector(` + js(sel) + `).querySelectorAll('a')].map((a) => a.href).join(' ')`
	}
	if got := eval[string](p, links(testID("status-message"))); got != "https://example.com/fine" {
		t.Errorf("the status's links: %q, want the one to example.com alone", got)
	}
	p.goTo("/u/mallory")
	p.waitUntil("mallory's bio", stepTimeout, `document.querySelector(`+js(testID("profile-bio"))+`)?.textContent === `+js(bio)+` ? '' : 'no bio yet'`)
	if got := eval[string](p, links(testID("profile-bio"))); got != "https://example.com/me" {
		t.Errorf("the bio's links: %q, want the one to example.com alone", got)
	}
	if got := eval[string](p, `(() => {
		try {
			document.createElement('div').innerHTML = '<b>x</b>';
			return 'innerHTML took a string';
		} catch (e) {
			return e.name;
		}
	})()`); got != "TypeError" {
		t.Errorf("a string given to innerHTML: %s, want a TypeError (Trusted Types)", got)
	}
}

// bob has the profile of ada, his friend, open when she blocks him: the
// friendship's end, which his stream is told, turns his Unfollow back to
// Follow with the counts. Read again, her page counts her post but shows
// none, and says there is none to show rather than none yet, and nothing
// of the block.
func TestBrowserBlockedOnAnOpenProfile(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	srv := in.start()
	ada := srv.signUpAs(t, "ada", "Ada Lovelace")
	bob := srv.signUpAs(t, "bob", "Bob Babbage")
	befriend(ada, bob)
	ada.post("Not for bob's eyes, soon")

	br := newBrowser(t)
	p := br.newTab(t, "bob", srv.srv.URL)
	p.signInUI("bob", "password-bob")
	p.goTo("/u/ada")
	button := `document.querySelector(` + js(testID("follow-button")) + `)?.textContent`
	p.waitUntil("Unfollow offered", stepTimeout, button+` === 'Unfollow' ? '' : 'says ' + `+button)
	p.waitLive()

	ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/bob", nil, nil)
	p.waitUntil("Follow offered again", stepTimeout, button+` === 'Follow' ? '' : 'says ' + `+button)
	p.open("/u/ada")
	empty := `document.querySelector(` + js(testID("profile-empty")) + `)`
	p.waitUntil("no post to show", stepTimeout, empty+`?.textContent === 'No posts to show.' && !`+empty+`.hidden ? '' : 'says ' + `+empty+`?.textContent`)
}
