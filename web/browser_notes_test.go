package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"chorus/social"
)

// Notifications the server takes back with no frame each leave the bell
// and the notifications page: likes', with the status they liked deleted
// on another device or here.
func TestBrowserNotificationsGoWithTheirCause(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	one := in.start()
	ada := one.signUpAs(t, "ada", "Ada Lovelace")
	bob := one.signUpAs(t, "bob", "Bob Babbage")
	there, here := ada.post("deleted elsewhere"), ada.post("deleted here")
	shown := ada.post("deleted while shown")

	br := newBrowser(t)
	p := br.signedInTab(t, one.srv.URL, "ada")
	p.waitLive()
	bob.like(there.ID)
	bob.like(here.ID)
	p.waitUntil("two likes unread", stepTimeout, badgeIs(2))

	ada.deleteStatus(there.ID)
	p.waitUntil("one like's notification gone, its post deleted elsewhere", stepTimeout, badgeIs(1))
	// A page loaded afresh: nothing asked of the count before is pending.
	p.open("/")
	p.waitLive()
	p.waitUntil("ada's post in her feed", stepTimeout, statusIn("feed", "deleted here"))
	p.deleteUI("feed", fmt.Sprint(here.ID))
	p.waitUntil("the other's gone, its post deleted here", stepTimeout, badgeIs(0))

	bob.like(shown.ID)
	p.goTo("/notifications")
	p.waitUntil("the like listed", stepTimeout, notesAre("Bob Babbage liked your post|true"))
	ada.deleteStatus(shown.ID)
	p.waitUntil("the like unlisted, its post deleted", 3*stepTimeout, notesAre())
}

// A block or a mute takes the other's notifications out with one
// notifications_removed frame: the bell counts them no more, made here or
// on another device, and the notifications page drops them as it shows.
func TestBrowserBlockAndMuteTakeNotificationsOut(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	one := in.start()
	ada := one.signUpAs(t, "ada", "Ada Lovelace")
	carol := one.signUpAs(t, "carol", "Carol Shaw")
	dan := one.signUpAs(t, "dan", "Dan Dare")
	eve := one.signUpAs(t, "eve", "Eve Moneypenny")
	first, second := ada.post("liked first"), ada.post("liked second")

	br := newBrowser(t)
	p := br.signedInTab(t, one.srv.URL, "ada")
	p.waitLive()
	carol.like(first.ID)
	carol.like(second.ID)
	dan.like(first.ID)
	p.waitUntil("three likes unread", stepTimeout, badgeIs(3))

	// Blocked here: both of carol's likes go at once.
	p.goTo("/u/carol")
	p.waitVisible(testID("profile-menu"))
	p.click(testID("profile-menu"))
	p.waitVisible(testID("profile-menu-items") + " " + testID("block"))
	p.click(testID("profile-menu-items") + " " + testID("block"))
	p.waitVisible(testID("block-confirm"))
	p.click(testID("block-confirm"))
	p.waitUntil("carol's likes gone, carol blocked here", stepTimeout, badgeIs(1))

	// Muted on another device.
	ada.must(http.StatusNoContent, "PUT", "/api/v1/mutes/dan", nil, nil)
	p.waitUntil("dan's like gone, dan muted elsewhere", stepTimeout, badgeIs(0))

	// Shown on the page, and blocked on another device.
	eve.like(second.ID)
	p.goTo("/notifications")
	p.waitUntil("eve's like listed", stepTimeout, notesAre("Eve Moneypenny liked your post|true"))
	ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/eve", nil, nil)
	p.waitUntil("eve's like unlisted, eve blocked elsewhere", stepTimeout, notesAre())
}
