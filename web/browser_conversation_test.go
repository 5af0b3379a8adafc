package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"

	"github.com/chromedp/chromedp/kb"
	"github.com/go-redis/redis_rate/v10"
)

// actionIs is a check that the kind ("like", "repost", "reply") button of
// status id in list (a data-testid) is named name (its count in words) and
// has aria-pressed pressed ("" for none), with no answer awaited.
func actionIs(list string, id int64, kind, name, pressed string) string {
	sel := testID(list, fmt.Sprintf(` [data-id="%d"] `, id)) + testID(kind+"-button")
	return `(() => {
		const b = document.querySelector(` + js(sel) + `);
		if (!b) return 'no ` + kind + ` button';
		if (b.getAttribute('aria-busy') === 'true') return 'awaiting the server';
		const got = b.getAttribute('aria-label') + ' / pressed=' + (b.getAttribute('aria-pressed') ?? '');
		const want = ` + js(name+" / pressed="+pressed) + `;
		return got === want ? '' : got;
	})()`
}

// actionSel is the selector of the kind button of status id in list.
func actionSel(list string, id int64, kind string) string {
	return testID(list, fmt.Sprintf(` [data-id="%d"] `, id)) + testID(kind+"-button")
}

// reply posts message as c in answer to status parent.
func (c *client) reply(parent int64, message string) statusJSON {
	c.tb.Helper()
	var out struct{ Status statusJSON }
	c.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]any{"message": message, "reply_to": parent}, &out)
	return out.Status
}

// like likes status id as c.
func (c *client) like(id int64) {
	c.tb.Helper()
	c.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/like", id), nil, nil)
}

// Two people like and repost one post from their feeds: the counts and
// each one's own state (aria-pressed) agree across both, and with the
// server after a reload; a reply from the feed shows under the post; a
// follower of the reposter sees "↻ reposted" over the original; a visitor
// sees the counts, and Like takes them to sign in.
func TestBrowserActionRow(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	bob.follow("ada")
	carol.follow("bob")
	post := ada.post("The engine weaves algebraic patterns")

	br := newBrowser(t)
	b := br.signedInTab(t, in.srv.URL, "bob")
	b.waitUntil("ada's post in bob's feed", stepTimeout, statusIn("feed", post.Message))
	b.waitUntil("no likes yet", stepTimeout, actionIs("feed", post.ID, "like", "Like, 0 likes", "false"))
	b.waitUntil("no reposts yet", stepTimeout, actionIs("feed", post.ID, "repost", "Repost, 0 reposts", "false"))
	b.waitUntil("no replies yet", stepTimeout, actionIs("feed", post.ID, "reply", "Reply, 0 replies", ""))
	b.click(actionSel("feed", post.ID, "like"))
	b.waitUntil("bob's like shown", stepTimeout, actionIs("feed", post.ID, "like", "Like, 1 like", "true"))
	b.click(actionSel("feed", post.ID, "repost"))
	b.waitUntil("bob's repost shown", stepTimeout, actionIs("feed", post.ID, "repost", "Repost, 1 repost", "true"))
	b.keep("actions-1280-light")

	// ada sees bob's like and repost, not as hers; she likes too.
	a := br.signedInTab(t, in.srv.URL, "ada")
	a.goTo(fmt.Sprintf("/s/%d", post.ID))
	a.waitUntil("bob's like, counted for ada", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 1 like", "false"))
	a.waitUntil("bob's repost, counted for ada", stepTimeout, actionIs("status-page", post.ID, "repost", "Repost, 1 repost", "false"))
	a.click(actionSel("status-page", post.ID, "like"))
	a.waitUntil("ada's like shown", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 2 likes", "true"))

	// The server holds both: bob's reload shows two likes, his among them.
	b.open("/")
	b.waitUntil("two likes after a reload", stepTimeout, actionIs("feed", post.ID, "like", "Like, 2 likes", "true"))
	b.waitUntil("bob's repost after a reload", stepTimeout, actionIs("feed", post.ID, "repost", "Repost, 1 repost", "true"))
	// Taking the like back counts down, here and on the server.
	b.click(actionSel("feed", post.ID, "like"))
	b.waitUntil("bob's like taken back", stepTimeout, actionIs("feed", post.ID, "like", "Like, 1 like", "false"))
	a.open(fmt.Sprintf("/s/%d", post.ID))
	a.waitUntil("one like left, ada's", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 1 like", "true"))

	// Reply under the post in the feed: the reply shows under it, counted.
	b.click(actionSel("feed", post.ID, "reply"))
	box := testID("feed", fmt.Sprintf(` [data-id="%d"] `, post.ID)) + testID("reply-input")
	b.waitVisible(box)
	b.typeInto(box, "Patterns like a loom's")
	b.click(testID("feed", fmt.Sprintf(` [data-id="%d"] `, post.ID)) + testID("reply-submit"))
	b.waitUntil("the reply under the post", stepTimeout, `(() => {
		const li = document.querySelector('[data-testid="feed"] > [data-id="`+fmt.Sprint(post.ID)+`"]');
		const r = li && li.querySelector('.inline-replies [data-testid="status"]');
		if (!r) return 'no reply under the post';
		if (li.querySelector('[data-testid="reply-composer"]')) return 'the reply box is still open';
		const line = r.querySelector('[data-testid="status-reply"]')?.textContent;
		return r.querySelector('[data-testid="status-message"]').textContent === "Patterns like a loom's" && line === 'Replying to ada' ? '' : 'reply reads ' + r.textContent;
	})()`)
	b.waitUntil("one reply counted", stepTimeout, `(() => {
		const btn = document.querySelector('[data-testid="feed"] > [data-id="`+fmt.Sprint(post.ID)+`"] > .status-body > [data-testid="status-actions"] [data-testid="reply-button"]');
		return btn && btn.getAttribute('aria-label') === 'Reply, 1 reply' ? '' : 'reply button: ' + (btn && btn.getAttribute('aria-label'));
	})()`)

	// carol follows bob, not ada: bob's repost brings ada's post to her.
	c := br.signedInTab(t, in.srv.URL, "carol")
	c.waitUntil("the repost in carol's feed", stepTimeout, `(() => {
		const li = document.querySelector('[data-testid="feed"] [data-original="`+fmt.Sprint(post.ID)+`"]');
		if (!li) return 'no repost of ada\'s post';
		const by = li.querySelector('[data-testid="status-repost"]')?.textContent ?? '';
		const msg = li.querySelector('[data-testid="status-message"]')?.textContent ?? '';
		const author = li.querySelector('[data-testid="status-author"] .login')?.textContent ?? '';
		if (!by.includes('bob') || !by.endsWith('reposted')) return 'repost line reads ' + JSON.stringify(by);
		return msg === `+js(post.Message)+` && author === 'ada' ? '' : 'shows ' + author + ': ' + msg;
	})()`)
	c.keep("repost-1280-light")

	// A visitor sees the counts; Like leads to the sign-in form, and back.
	v := br.newTab(t, "visitor", in.srv.URL)
	v.open(fmt.Sprintf("/s/%d", post.ID))
	v.waitUntil("counts for a visitor", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 1 like", ""))
	v.waitUntil("replies for a visitor", stepTimeout, actionIs("status-page", post.ID, "reply", "Reply, 1 reply", ""))
	v.waitUntil("reposts for a visitor", stepTimeout, actionIs("status-page", post.ID, "repost", "Repost, 1 repost", ""))
	v.click(actionSel("status-page", post.ID, "like"))
	v.waitVisible(testID("signin-form"))
	form := testID("signin-form")
	v.typeInto(form+` input[name="login"]`, "carol")
	v.typeInto(form+` input[name="password"]`, "password-carol")
	v.click(form + ` button[type="submit"]`)
	v.waitUntil("back on the post, signed in", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 1 like", "false"))
}

// A like the server refuses (past the reaction limit) goes back at once,
// with the API's message, and the server holds what it held.
func TestBrowserActionRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits.ReactionsPerUser = redis_rate.Limit{Rate: 2, Period: time.Hour, Burst: 2}
	in := e.start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	in.signUpAs(t, "bob", "Bob Babbage")
	post := ada.post("Refuse me if you can")

	br := newBrowser(t)
	b := br.signedInTab(t, in.srv.URL, "bob")
	b.goTo(fmt.Sprintf("/s/%d", post.ID))
	b.waitUntil("the post", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 0 likes", "false"))
	b.click(actionSel("status-page", post.ID, "like"))
	b.waitUntil("liked", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 1 like", "true"))
	b.click(actionSel("status-page", post.ID, "like"))
	b.waitUntil("unliked", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 0 likes", "false"))
	b.click(actionSel("status-page", post.ID, "like"))
	b.waitUntil("the third refused and put back, saying why", stepTimeout, `(() => {
		const err = document.querySelector('[data-testid="status-page"] [data-testid="action-error"]');
		if (!err || err.hidden) return 'no error shown';
		return err.textContent.startsWith('Could not like this post: You are liking and reposting too fast.') ? '' : 'error: ' + err.textContent;
	})()`)
	b.waitUntil("the button put back", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 0 likes", "false"))
	b.keep("like-refused-1280-light")
	var out struct{ Status struct{ Likes int64 } }
	ada.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", post.ID), nil, &out)
	if out.Status.Likes != 0 {
		t.Fatalf("the server counts %d likes, want 0", out.Status.Likes)
	}
}

// A thread: the status's page shows what it answers, then it, then the
// replies under it, indented by depth; a reply written in the box under the
// status, with an @mention picked from the suggestions by keyboard,
// appears in place, links the mention, and counts. A reply to a deleted
// post says so.
func TestBrowserThreadReply(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	in.signUpAs(t, "carla", "Carla Other")
	root := ada.post("Shall we build the difference engine?")
	mid := bob.reply(root.ID, "Only if the funding holds")
	leaf := carol.reply(mid.ID, "It never does")
	aside := ada.reply(root.ID, "A word to @nobody_here about the budget")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo(fmt.Sprintf("/s/%d", mid.ID))
	order := `[...document.querySelectorAll('[data-testid="status-page"] > [data-testid="status"]')]
		.map((li) => li.dataset.id + ':' + (li.dataset.depth ?? '0') + (li.classList.contains('is-focus') ? '*' : '')).join(' ')`
	p.waitUntil("the thread around bob's reply", stepTimeout, `(() => {
		const got = `+order+`;
		return got === `+js(fmt.Sprintf("%d:0 %d:0* %d:1", root.ID, mid.ID, leaf.ID))+` ? '' : 'thread: ' + got;
	})()`)
	p.waitUntil("bob's reply says whom it answers", stepTimeout, `(() => {
		const r = document.querySelector('[data-testid="status-page"] .is-focus [data-testid="status-reply"]');
		const a = r && r.querySelector('a');
		if (!a) return 'no reply line with a link';
		return r.textContent === 'Replying to ada' && a.getAttribute('href') === `+js(fmt.Sprintf("/s/%d", root.ID))+` ? '' : r.textContent + ' -> ' + a.getAttribute('href');
	})()`)

	// Reply from the box under the status, mentioning carol by keyboard.
	p.click(actionSel("status-page", mid.ID, "reply"))
	box := testID("status-page", " .is-focus ") + testID("reply-input")
	p.waitVisible(box)
	if got := eval[string](p, `document.activeElement.dataset.testid ?? ''`); got != "reply-input" {
		t.Fatalf("focus on %q after Reply, want the reply box", got)
	}
	p.typeInto(box, "Then we ask @car")
	p.waitUntil("suggestions for @car", stepTimeout, `(() => {
		const box = document.querySelector(`+js(box)+`);
		const list = document.getElementById(box.getAttribute('aria-controls'));
		if (!list || list.hidden) return 'no suggestions shown';
		if (box.getAttribute('role') !== 'combobox' || box.getAttribute('aria-expanded') !== 'true') return 'box not an expanded combobox';
		if (list.getAttribute('role') !== 'listbox') return 'list role ' + list.getAttribute('role');
		const opts = [...list.querySelectorAll('[role="option"]')].map((o) => o.dataset.login);
		return opts.length >= 2 && opts.includes('carol') && opts.includes('carla') && opts.length <= 5 ? '' : 'options: ' + opts.join(' ');
	})()`)
	p.keep("mention-suggestions-1280-light")
	// Down to carol, whichever place she has, and Enter takes her.
	for range 5 {
		if eval[string](p, `document.getElementById(document.querySelector(`+js(box)+`).getAttribute('aria-activedescendant'))?.dataset.login ?? ''`) == "carol" {
			break
		}
		p.press(kb.ArrowDown)
	}
	p.press("\r")
	p.waitUntil("carol taken", stepTimeout, `document.querySelector(`+js(box)+`).value === 'Then we ask @carol ' ? '' : 'box holds ' + JSON.stringify(document.querySelector(`+js(box)+`).value)`)
	p.typeInto(box, "about it")
	p.click(testID("status-page", " .is-focus ") + testID("reply-submit"))
	p.waitUntil("the reply in place, under bob's, after carol's", stepTimeout, `(() => {
		const items = [...document.querySelectorAll('[data-testid="status-page"] > [data-testid="status"]')];
		const last = items[items.length - 1];
		const msg = last && last.querySelector('[data-testid="status-message"]');
		if (!msg || msg.textContent !== 'Then we ask @carol about it') return 'thread: ' + `+order+`;
		if (last.dataset.depth !== '1') return 'depth ' + last.dataset.depth;
		const a = msg.querySelector('a.mention');
		return a && a.textContent === '@carol' && a.getAttribute('href') === '/u/carol' ? '' : 'the mention is no link to carol';
	})()`)
	p.waitUntil("bob's reply counts two replies", stepTimeout, actionIs("status-page", mid.ID, "reply", "Reply, 2 replies", ""))
	p.keep("thread-1280-light")

	// The server has it: a reload shows the same thread.
	p.open(fmt.Sprintf("/s/%d", mid.ID))
	p.waitUntil("the reply after a reload", stepTimeout, `(() => {
		const got = `+order+`;
		return got.split(' ').length === 4 && got.startsWith(`+js(fmt.Sprintf("%d:0 %d:0* %d:1 ", root.ID, mid.ID, leaf.ID))+`) && got.endsWith(':1') ? '' : 'thread: ' + got;
	})()`)

	// On a phone, in the dark, the thread fits.
	p.viewport(360, 780, true)
	p.colorScheme("dark")
	p.waitUntil("the thread fits 360 px", stepTimeout, fitsCheck)
	p.keep("thread-360-dark")
	p.viewport(1280, 800, false)
	p.colorScheme("light")

	// An @word that names no one stays text.
	p.goTo(fmt.Sprintf("/s/%d", aside.ID))
	p.waitUntil("the unknown mention as text", stepTimeout, `(() => {
		const m = document.querySelector('[data-testid="status-page"] .is-focus [data-testid="status-message"]');
		if (!m) return 'no status';
		return m.textContent.includes('@nobody_here') && !m.querySelector('a') ? '' : 'message holds a link';
	})()`)

	// The root deleted, bob's reply answers a deleted post.
	ada.deleteStatus(root.ID)
	p.open(fmt.Sprintf("/s/%d", mid.ID))
	p.waitUntil("a reply to a deleted post", stepTimeout, `(() => {
		const r = document.querySelector('[data-testid="status-page"] .is-focus [data-testid="status-reply"]');
		return r && r.textContent === 'Replying to a deleted post' ? '' : 'reply line: ' + (r && r.textContent);
	})()`)
	// So does bob's profile, freshly loaded, which asks once the reply is seen.
	p.open("/u/bob")
	p.waitUntil("a reply to a deleted post on a profile", stepTimeout, `(() => {
		const r = document.querySelector('[data-testid="timeline"] [data-id="`+fmt.Sprint(mid.ID)+`"] [data-testid="status-reply"]');
		return r && r.textContent === 'Replying to a deleted post' ? '' : 'reply line: ' + (r && r.textContent);
	})()`)
	// carol's answers bob's reply, which is there: it keeps its link.
	p.goTo("/u/carol")
	p.waitUntil("a reply to a post that exists", stepTimeout, `(() => {
		const r = document.querySelector('[data-testid="timeline"] [data-id="`+fmt.Sprint(leaf.ID)+`"] [data-testid="status-reply"]');
		return r && r.textContent === 'Replying to bob' && r.querySelector('a') ? '' : 'reply line: ' + (r && r.textContent);
	})()`)
}

// noteIs is a check that the notifications page lists exactly want: one
// entry per group, "text|unread" newest first.
func notesAre(want ...string) string {
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="notes-list"] [data-testid="note"]')]
			.map((li) => li.querySelector('[data-testid="note-text"]').textContent.replace(/^Unread: /, '') + '|' + li.dataset.unread).join('\n');
		return got === ` + js(strings.Join(want, "\n")) + ` ? '' : 'notes:\n' + got;
	})()`
}

// badgeIs is a check that the bell says n unread, and (on a phone) the tab
// bar's Notifications too.
func badgeIs(n int) string {
	return `(() => {
		const bell = document.querySelector('[data-testid="notes-button"]');
		const tab = document.querySelector('[data-testid="tab-notifications"]');
		if (!bell || !tab) return 'no bell or tab';
		if (bell.dataset.unread !== '` + fmt.Sprint(n) + `') return 'bell says ' + bell.dataset.unread;
		const name = tab.getAttribute('aria-label') ?? tab.textContent;
		const want = ` + js(map[bool]string{true: "Notifications", false: fmt.Sprintf("Notifications, %d unread", n)}[n == 0]) + `;
		return name === want ? '' : 'tab named ' + name;
	})()`
}

// Notifications last: a follow and two likes arrive live and count on the
// bell; after a reload the count is still there (the server's); the page
// groups the likes, marks what is unread, and reading it clears the bell
// here and, live, in another session of the same person; after another
// reload nothing is marked. An arrival while the page is open is shown
// and read at once.
func TestBrowserNotificationsPage(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	dan := in.signUpAs(t, "dan", "Dan Bricklin")
	post := ada.post("Notes on the analytical engine")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	other := br.newTab(t, "ada-phone", in.srv.URL)
	other.viewport(360, 780, true)
	other.signInUI("ada", "password-ada")
	other.waitLive()

	bob.follow("ada")
	bob.like(post.ID)
	carol.like(post.ID)
	p.waitUntil("three unread, live", stepTimeout, badgeIs(3))
	other.waitUntil("three unread on the phone, live", stepTimeout, badgeIs(3))
	other.keep("tabbar-badge-360-light")

	p.open("/")
	p.waitLive()
	p.waitUntil("three unread after a reload", stepTimeout, badgeIs(3))

	p.goTo("/notifications")
	p.waitUntil("grouped and marked", stepTimeout, notesAre(
		"Carol Shaw and Bob Babbage liked your post|true",
		"Bob Babbage followed you|true",
	))
	p.waitUntil("the bell cleared by reading", stepTimeout, badgeIs(0))
	other.waitUntil("the phone's badge cleared live", stepTimeout, badgeIs(0))
	p.keep("notifications-1280-light")
	var unread struct {
		Count    int    `json:"count"`
		LastRead *int64 `json:"last_read"`
	}
	ada.must(http.StatusOK, "GET", "/api/v1/notifications/unread", nil, &unread)
	if unread.Count != 0 || unread.LastRead == nil {
		t.Fatalf("after the page: unread %+v, want 0 and a marker", unread)
	}

	// Read on the server: a reload marks nothing.
	p.open("/notifications")
	p.waitUntil("nothing marked after a reload", stepTimeout, notesAre(
		"Carol Shaw and Bob Babbage liked your post|false",
		"Bob Babbage followed you|false",
	))
	// One more like while the page is open: it joins the group, read.
	dan.like(post.ID)
	p.waitUntil("dan's like joins the group", stepTimeout, notesAre(
		"Dan Bricklin and 2 others liked your post|true",
		"Bob Babbage followed you|false",
	))
	p.waitUntil("the bell stays clear", stepTimeout, badgeIs(0))
	testio.Eventually(t, stepTimeout, func() string {
		ada.must(http.StatusOK, "GET", "/api/v1/notifications/unread", nil, &unread)
		if unread.Count != 0 {
			return fmt.Sprintf("dan's like not read on the server: %+v", unread)
		}
		return ""
	})
	other.waitUntil("the phone's badge stays clear", stepTimeout, badgeIs(0))
}

// On a phone (360 px), signed in, the tab bar at the foot of the screen
// holds Home, Global, Search, Notifications and Profile, each whole on the
// screen, named, and marked on its page; nothing scrolls sideways and the
// feed's end is not hidden under the bar, in light and dark. On a desktop
// there is no tab bar and the header keeps its links.
func TestBrowserPhoneTabBar(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	for i := range 12 {
		ada.post(fmt.Sprintf("Ada's note number %d", i))
	}

	br := newBrowser(t)
	p := br.newTab(t, "ada", in.srv.URL)
	p.viewport(360, 780, true)
	p.signInUI("ada", "password-ada")
	p.waitUntil("the feed", stepTimeout, statusIn("feed", "Ada's note number 11"))
	tabs := `(() => {
		const bar = document.querySelector('nav.tabbar');
		if (!bar || bar.hidden || getComputedStyle(bar).display === 'none') return 'no tab bar shown';
		const de = document.documentElement;
		if (de.scrollWidth > de.clientWidth) return 'the page scrolls sideways: ' + de.scrollWidth;
		const r = bar.getBoundingClientRect();
		if (Math.abs(r.bottom - window.innerHeight) > 1) return 'the bar ends at ' + r.bottom + ' of ' + window.innerHeight;
		const links = [...bar.querySelectorAll('a')];
		const names = links.map((a) => (a.getAttribute('aria-label') ?? a.textContent).trim());
		if (names.join(',') !== 'Home,Global,Search,Notifications,Profile') return 'tabs: ' + names.join(',');
		for (const a of links) {
			const b = a.getBoundingClientRect();
			if (b.left < 0 || b.right > de.clientWidth + 0.5 || b.width < 44 || b.height < 44) return a.dataset.testid + ' at ' + b.left + '..' + b.right + ', ' + b.width + 'x' + b.height;
			const at = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
			if (!a.contains(at)) return a.dataset.testid + ' is covered';
			const icon = a.querySelector('svg');
			if (!icon || icon.getBoundingClientRect().width === 0) return a.dataset.testid + ' shows no icon';
			const cs = getComputedStyle(a);
			if (cs.color === getComputedStyle(bar).backgroundColor) return a.dataset.testid + ' draws in its background colour';
		}
		// What the bar repeats leaves the header; Lists stays there.
		const shown = [...document.querySelectorAll('#nav a')].filter((a) => a.offsetParent).map((a) => a.firstChild.textContent);
		if (shown.join(',') !== 'Lists') return 'header links shown: ' + shown.join(',');
		const home = bar.querySelector('[data-route="home"]');
		return home.getAttribute('aria-current') === 'page' ? '' : 'Home is not marked current';
	})()`
	for _, scheme := range []string{"light", "dark"} {
		p.colorScheme(scheme)
		p.waitUntil("the tab bar, "+scheme, stepTimeout, tabs)
		p.keep("tabbar-360-" + scheme)
	}
	// The end of the feed clears the bar.
	eval[bool](p, `(window.scrollTo(0, document.documentElement.scrollHeight), true)`)
	p.waitUntil("the last post above the bar", stepTimeout, `(() => {
		const items = document.querySelectorAll('[data-testid="feed"] [data-testid="status"]');
		const last = items[items.length - 1].getBoundingClientRect();
		const bar = document.querySelector('nav.tabbar').getBoundingClientRect();
		return last.bottom <= bar.top + 0.5 ? '' : 'the last post ends at ' + last.bottom + ', the bar starts at ' + bar.top;
	})()`)
	// A tab goes to its page and is marked there.
	p.click(testID("tab-search"))
	p.waitUntil("on the search page", stepTimeout, `location.pathname === '/search' && document.querySelector('[data-testid="tab-search"]').getAttribute('aria-current') === 'page' ? '' : 'at ' + location.pathname`)
	p.click(testID("tab-profile"))
	p.waitUntil("on ada's profile", stepTimeout, `location.pathname === '/u/ada' ? '' : 'at ' + location.pathname`)

	// A desktop has no tab bar; the header has its links.
	p.viewport(1280, 800, false)
	p.waitUntil("no tab bar on a desktop", stepTimeout, `(() => {
		if (getComputedStyle(document.querySelector('nav.tabbar')).display !== 'none') return 'tab bar shown';
		const shown = [...document.querySelectorAll('#nav a')].filter((a) => a.offsetParent).map((a) => a.firstChild.textContent);
		return shown.join(',') === 'Home,Global,Profile,Search,Lists' ? '' : 'header links: ' + shown.join(',');
	})()`)
}

// More notifications than a page: the page shows the newest thirty, and
// "Load more" the rest, all marked unread.
func TestBrowserNotificationsPaged(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	for i := range 32 {
		bob.post(fmt.Sprintf("Note %d for @ada", i))
	}

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("32 unread", stepTimeout, badgeIs(32))
	p.goTo("/notifications")
	count := func(n int) string {
		return `(() => {
			const all = [...document.querySelectorAll('[data-testid="notes-list"] [data-testid="note"]')];
			const unread = all.filter((li) => li.dataset.unread === 'true').length;
			if (all.length !== ` + fmt.Sprint(n) + ` || unread !== all.length) return all.length + ' shown, ' + unread + ' unread';
			const first = all[0].querySelector('[data-testid="note-status"]')?.textContent;
			return first === 'Note 31 for @ada' ? '' : 'newest: ' + first;
		})()`
	}
	p.waitUntil("the first page", stepTimeout, count(30))
	p.click(testID("notes-more"))
	p.waitUntil("the rest", stepTimeout, count(32))
	p.waitUntil("the bell cleared", stepTimeout, badgeIs(0))
	if !eval[bool](p, `document.querySelector('[data-testid="notes-more"]').hidden`) {
		t.Fatal("Load more still offered at the end")
	}
}

// A person picked with the arrows among the suggestions stays picked when
// the list comes again for a longer term (the answer of a lookup that was
// under way), wherever they are in it: Enter takes whom the writer chose.
func TestBrowserMentionPickKeptWhenListComesAgain(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUp(t, "ada")
	in.signUp(t, "carla")
	in.signUp(t, "carol")
	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	box := testID("composer-input")
	p.waitVisible(box)
	p.typeInto(box, "hi @ca")
	options := `[...document.querySelectorAll('[data-testid="mention-option"]')]`
	picked := `(document.getElementById(document.querySelector(` + js(box) + `).getAttribute('aria-activedescendant'))?.dataset.login ?? '')`
	p.waitUntil("suggestions for @ca", stepTimeout, `(() => {
		const opts = `+options+`.map((o) => o.dataset.login);
		return opts.includes('carol') && opts.includes('carla') ? '' : 'options: ' + opts.join(' ');
	})()`)
	// The list shown now is marked, to tell the next one from it.
	eval[bool](p, `(`+options+`.forEach((o) => { o.dataset.old = '1'; }), true)`)
	for range 5 {
		if eval[string](p, picked) == "carol" {
			break
		}
		p.press(kb.ArrowDown)
	}
	if got := eval[string](p, picked); got != "carol" {
		t.Fatalf("picked %q with the arrows, want carol", got)
	}
	p.typeInto(box, "r")
	p.waitUntil("the list for @car, carol still picked", stepTimeout, `(() => {
		const opts = `+options+`;
		if (opts.length === 0 || opts.some((o) => o.dataset.old)) return 'the list for @ca still shown';
		return `+picked+` === 'carol' ? '' : 'picked: ' + `+picked+`;
	})()`)
	p.press("\r")
	p.waitUntil("carol taken", stepTimeout, `document.querySelector(`+js(box)+`).value === 'hi @carol ' ? '' : 'box holds ' + JSON.stringify(document.querySelector(`+js(box)+`).value)`)
}
