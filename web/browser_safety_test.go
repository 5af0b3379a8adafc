package web_test

import (
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
