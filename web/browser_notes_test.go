package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

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

// ada has an unread notification (carol liked her post) when bob, whom
// she follows, deletes posts of his: none of them could take a
// notification of hers with it, and her tab does not ask for her unread
// count. She deletes her liked post on another device: the like's
// notification went with it, no frame telling it, and her bell says so.
func TestBrowserUnreadAskedForOwnDeletionsAlone(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	ada.follow("bob")
	mine := ada.post("ada's post")
	carol.like(mine.ID)
	var posts []statusJSON
	for i := range 5 {
		posts = append(posts, bob.post(fmt.Sprintf("bob's post %d", i)))
	}

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	unread := func(n int) string {
		return fmt.Sprintf(`document.querySelector('[data-testid="notes-button"]')?.dataset.unread === '%d' ? '' : 'unread ' + document.querySelector('[data-testid="notes-button"]')?.dataset.unread`, n)
	}
	p.waitUntil("one unread", stepTimeout, unread(1))
	p.waitUntil("bob's posts in the feed", stepTimeout, statusIn("feed", "bob's post 4"))
	const asked = `performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/notifications/unread')).length`
	before := eval[int](p, asked)
	for _, s := range posts {
		bob.deleteStatus(s.ID)
	}
	p.waitUntil("bob's posts gone", stepTimeout, `document.querySelector('[data-testid="feed"] [data-login="bob"]') ? 'still shown' : ''`)
	// A read asked for them would start as their frames come: give it
	// time to show.
	time.Sleep(3 * time.Second)
	if after := eval[int](p, asked); after != before {
		t.Errorf("bob's deletions had ada's tab ask her unread count %d times, want none", after-before)
	}
	ada.deleteStatus(mine.ID)
	p.waitUntil("no unread once her liked post is deleted", stepTimeout, unread(0))
}
