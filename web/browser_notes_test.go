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

// A notification arriving on the notifications page, or one taken back,
// changes its own row only: the rows around it stay the same rows, and a
// reader who tabbed to one (with the keyboard, or a screen reader) stays
// on it, not thrown back to the page's start. A like of the post the
// newest row is about joins that row ("Carol Shaw and Bob Babbage liked
// your post"); and when the row the reader is on is itself taken back,
// the focus goes to the next row.
func TestBrowserNotificationsArriveAroundTheReader(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	one := in.start()
	ada := one.signUpAs(t, "ada", "Ada Lovelace")
	bob := one.signUpAs(t, "bob", "Bob Babbage")
	carol := one.signUpAs(t, "carol", "Carol Shaw")
	var posts []statusJSON
	for i := range 6 {
		posts = append(posts, ada.post(fmt.Sprintf("ada's post %d", i)))
	}
	for _, s := range posts[:5] {
		bob.like(s.ID)
	}

	br := newBrowser(t)
	p := br.signedInTab(t, one.srv.URL, "ada")
	p.waitLive()
	p.goTo("/notifications")
	p.waitUntil("bob's five likes listed", stepTimeout, rowsAre("4+ 3+ 2+ 1+ 0+"))
	// The rows as they are now, marked to be told apart from any made
	// again; and the focus on the second's sender, as tabbing puts it.
	eval[bool](p, `(() => {
		const rows = document.querySelectorAll('[data-testid="notes-list"] [data-testid="note"]');
		for (const li of rows) li.shownFirst = true;
		const who = rows[1].querySelector('a.note-who');
		who.focusedFirst = true;
		who.focus();
		return true;
	})()`)
	p.waitUntil("the reader on the second row", stepTimeout, rowsAre("4 3@ 2 1 0"))
	stillFocused := func(when string) {
		t.Helper()
		if !eval[bool](p, `document.activeElement.focusedFirst === true`) {
			t.Errorf("%s: the focus left the link it was on, for %s", when,
				eval[string](p, `document.activeElement === document.body ? 'the page' : document.activeElement.outerHTML`))
		}
	}

	bob.like(posts[5].ID)
	p.waitUntil("a like arrived above, the rows below kept", stepTimeout, rowsAre("5+ 4 3@ 2 1 0"))
	stillFocused("a like arrived")

	bob.react("DELETE", "like", posts[0].ID)
	p.waitUntil("the oldest like taken back, the others kept", stepTimeout, rowsAre("5+ 4 3@ 2 1"))
	stillFocused("a like was taken back")

	carol.like(posts[5].ID)
	p.waitUntil("carol's like joined bob's of the same post", stepTimeout, rowsAre("5×2+ 4 3@ 2 1"))
	stillFocused("a like joined a group")

	bob.react("DELETE", "like", posts[3].ID)
	p.waitUntil("the reader's row taken back, the focus on the next", stepTimeout, rowsAre("5×2+ 4 2@ 1"))
	if got := eval[string](p, `document.activeElement.className`); got != "note-who" {
		t.Errorf("with the reader's row gone, the focus is on %q, not the next row's sender", got)
	}
}

// rowsAre is a check that the notifications page lists, newest first, the
// rows want says, each as the number of ada's post it is about, then
// "×N" for a group of N, "+" for a row not marked shownFirst (made since
// the test marked them), and "@" for the row holding the focus.
func rowsAre(want string) string {
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="notes-list"] [data-testid="note"]')].map((li) =>
			li.querySelector('[data-testid="note-status"]').textContent.replace("ada's post ", '') +
			(li.dataset.count === '1' ? '' : '×' + li.dataset.count) +
			(li.shownFirst ? '' : '+') +
			(li.contains(document.activeElement) ? '@' : '')).join(' ');
		const on = document.activeElement === document.body ? 'the page' : document.activeElement.className;
		return got === ` + js(want) + ` ? '' : 'rows ' + got + ', the focus on ' + on;
	})()`
}

// A notifications page left open does not grow without end: past 300
// notifications held, one arriving pushes the oldest out, and "Load more"
// brings them back.
func TestBrowserNotificationsPageKeepsTheNewest(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	one := in.start()
	one.signUpAs(t, "ada", "Ada Lovelace")
	bob := one.signUpAs(t, "bob", "Bob Babbage")
	const most = 300 // notifications.js's MAX_SHOWN
	for i := range most + 1 {
		bob.post(fmt.Sprintf("@ada note %d", i))
	}

	br := newBrowser(t)
	p := br.signedInTab(t, one.srv.URL, "ada")
	p.waitLive()
	p.goTo("/notifications")
	for shown := 30; ; shown = min(shown+30, most+1) {
		p.waitUntil(fmt.Sprintf("paged to %d", shown), stepTimeout, notesPaged(shown, fmt.Sprintf("@ada note %d", most+1-shown), shown == most+1))
		if shown == most+1 {
			break
		}
		p.click(testID("notes-more"))
	}

	bob.post(fmt.Sprintf("@ada note %d", most+1))
	p.waitUntil("the newest in, the two oldest out", stepTimeout, notesPaged(most, "@ada note 2", false))
	if got := eval[string](p, `document.querySelector('[data-testid="note-status"]').textContent`); got != fmt.Sprintf("@ada note %d", most+1) {
		t.Errorf("the newest row is about %q", got)
	}
	p.click(testID("notes-more"))
	p.waitUntil("the two oldest paged back", stepTimeout, notesPaged(most+2, "@ada note 0", true))
}

// notesPaged is a check that the notifications page lists n rows, the
// last about the status ending with last, and either says it has all
// (end) or offers "Load more".
func notesPaged(n int, last string, end bool) string {
	return fmt.Sprintf(`(() => {
		const rows = document.querySelectorAll('[data-testid="notes-list"] [data-testid="note"]');
		const more = document.querySelector('[data-testid="notes-more"]');
		const said = document.querySelector('[data-testid="notes-note"]').textContent;
		const oldest = rows.length ? rows[rows.length - 1].querySelector('[data-testid="note-status"]').textContent : '';
		const got = rows.length + ' rows, the last ' + oldest + (more.hidden ? '' : ', ' + more.textContent) + (said ? ', ' + said : '');
		const ok = rows.length === %d && oldest === %s && (%t ? more.hidden && said === 'That is all.' : !more.hidden && more.textContent === 'Load more' && said === '');
		return ok ? '' : got;
	})()`, n, js(last), end)
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

// carol followed ada, then bob liked her post and followed her, and was
// suspended: his notifications are left out of ada's page, and counted
// on her bell until she opens the page, which reads them with the rest
// and clears the bell, after a reload too. With nothing else to show, the
// page does the same.
func TestBrowserNotificationsOfTheSuspendedRead(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Spammer")
	carol := in.signUpAs(t, "carol", "Carol Cook")
	root := in.signUpAs(t, "root", "Root Admin")
	st := ada.post("Ada's thoughts on engines")
	carol.follow("ada")
	bob.like(st.ID)
	bob.follow("ada")
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/bob", nil, nil)

	unread := func(n int) string {
		return fmt.Sprintf(`document.querySelector('[data-testid="notes-button"]')?.dataset.unread === '%d' ? '' : 'unread ' + document.querySelector('[data-testid="notes-button"]')?.dataset.unread`, n)
	}
	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.waitUntil("bob's two counted with carol's", stepTimeout, unread(3))
	p.goTo("/notifications")
	p.waitUntil("carol's follow alone shown", stepTimeout, `document.querySelectorAll('[data-testid="note"]').length === 1 ? '' : 'notes: ' + document.querySelectorAll('[data-testid="note"]').length`)
	p.waitUntil("nothing unread once the page is shown", stepTimeout, unread(0))
	p.open("/")
	p.waitLive()
	p.waitUntil("nothing unread after a reload", stepTimeout, unread(0))

	// Nothing to show: bob likes and follows erin, and is suspended again.
	root.must(http.StatusNoContent, "DELETE", "/api/v1/admin/suspensions/bob", nil, nil)
	erin := in.signUpAs(t, "erin", "Erin Noether")
	bob = in.signIn(t, "bob") // the suspension ended his sessions
	bob.like(erin.post("Erin's post").ID)
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/bob", nil, nil)
	e := br.signedInTab(t, in.srv.URL, "erin")
	e.waitLive()
	e.waitUntil("bob's like counted", stepTimeout, unread(1))
	e.goTo("/notifications")
	e.waitUntil("nothing unread once the empty page is shown", stepTimeout, unread(0))
}
