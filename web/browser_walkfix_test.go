package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"chorus/social"
)

// holdFetches makes the page's fetch hold every request whose address
// matches the JavaScript regular expression re (and, when method is not
// empty, whose method is method) until window.__release() is called.
// window.__held counts the requests held, window.__aborted says whether
// one's signal was aborted, window.__settled whether a released one ended.
func holdFetches(p *tab, re, method string) {
	p.tb.Helper()
	eval[bool](p, `(() => {
		const f = window.fetch;
		const waiting = [];
		window.__held = 0;
		window.__aborted = false;
		window.__settled = false;
		window.__release = () => { for (const go of waiting.splice(0)) go(); return true; };
		window.fetch = (u, o) => {
			const m = ((o && o.method) || 'GET').toUpperCase();
			if (!`+re+`.test(String(u)) || (`+js(method)+` && m !== `+js(method)+`)) return f(u, o);
			window.__held++;
			if (o && o.signal) o.signal.addEventListener('abort', () => { window.__aborted = true; });
			return new Promise((resolve, reject) => waiting.push(() => f(u, o).then(resolve, reject).finally(() => { window.__settled = true; })));
		};
		return true;
	})()`)
}

// focusIs is a check that the element sel has the keyboard focus.
func focusIs(sel string) string {
	return `(() => {
		const want = document.querySelector(` + js(sel) + `);
		if (!want) return 'no ' + ` + js(sel) + `;
		const a = document.activeElement;
		return a === want ? '' : 'focus on ' + (a ? a.tagName + ' ' + (a.dataset.testid || a.textContent.slice(0, 40)) : 'nothing');
	})()`
}

// Typing "a", then "n", then taking the "n" back before the answer for
// "an" comes: the search for "an" is cancelled, the address says ?q=a and
// the results stay those for "a".
func TestBrowserWalkFixSearchTakenBack(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "zed", "Zed")
	in.signUpAs(t, "abe", "Abe")
	in.signUpAs(t, "ann", "Ann")
	in.signUpAs(t, "anne", "Anne")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "zed")
	p.goTo("/search")
	box := testID("search-input")
	p.waitVisible(box)
	p.typeInto(box, "a")
	p.waitUntil("the results for a", stepTimeout, foundLogins("abe,ann,anne"))

	holdFetches(p, `/[?&]q=an(&|$)/`, "GET")
	p.press("n")
	p.waitUntil("the search for an under way", stepTimeout, `window.__held === 1 ? '' : window.__held + ' held'`)
	p.press(kb.Backspace)
	p.waitUntil("the search for an cancelled, the address ?q=a", stepTimeout, `(() => {
		const box = document.querySelector(`+js(box)+`).value;
		const busy = document.querySelector('[data-testid="search-results"]').hasAttribute('aria-busy');
		if (box !== 'a') return 'box holds ' + box;
		if (location.search !== '?q=a') return 'address ' + location.search;
		if (!window.__aborted) return 'the search for an not cancelled';
		return busy ? 'results still busy' : '';
	})()`)
	eval[bool](p, `window.__release()`)
	p.waitUntil("the released answer ended", stepTimeout, `window.__settled ? '' : 'not yet'`)
	p.waitUntil("the results still those for a", stepTimeout, `(() => {
		const note = document.querySelector('[data-testid="search-note"]').textContent;
		return note === '3 people found' ? '' : 'note: ' + note;
	})()`)
	p.waitUntil("the results still those for a", stepTimeout, foundLogins("abe,ann,anne"))
}

// A button at work keeps the keyboard focus: Follow on a profile and in a
// list of people, a settings form's submit, a list's Create. Pressed twice
// at once, Create makes one list.
func TestBrowserWalkFixBusyButtonsKeepFocus(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	in.signUpAs(t, "cyd", "Cyd Young")
	bob := in.signUpAs(t, "bob", "Bob Babbage")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "bob")

	// Follow on a profile.
	p.goTo("/u/ada")
	btn := testID("follow-button")
	p.waitUntil("Follow ready", stepTimeout, `(() => {
		const b = document.querySelector(`+js(btn)+`);
		return b && !b.disabled && b.textContent === 'Follow' ? '' : 'button: ' + (b && b.textContent);
	})()`)
	p.click(btn)
	p.waitUntil("following ada, the focus on the button", stepTimeout, `(() => {
		const b = document.querySelector(`+js(btn)+`);
		if (b.textContent !== 'Unfollow' || b.hasAttribute('aria-busy')) return 'button: ' + b.textContent;
		return `+focusIs(btn)+`;
	})()`)

	// Follow in a list of people.
	p.goTo("/search")
	p.waitVisible(testID("search-input"))
	p.typeInto(testID("search-input"), "cyd")
	toggle := testID("follow-toggle", `[data-login="cyd"]`)
	p.waitVisible(toggle)
	p.click(toggle)
	p.waitUntil("following cyd, the focus on the button", stepTimeout, `(() => {
		const b = document.querySelector(`+js(toggle)+`);
		if (b.dataset.state !== 'following' || b.hasAttribute('aria-busy')) return 'button: ' + b.dataset.state;
		return `+focusIs(toggle)+`;
	})()`)

	// A settings form's submit.
	p.goTo("/settings")
	save := testID("settings-profile-submit")
	p.waitVisible(save)
	p.click(save)
	p.waitUntil("the profile saved, the focus on Save", stepTimeout, `(() => {
		const n = document.querySelector('[data-testid="settings-profile-note"]');
		if (n.hidden || n.textContent !== 'Profile saved.') return 'note: ' + n.textContent;
		if (document.querySelector(`+js(save)+`).hasAttribute('aria-disabled')) return 'still busy';
		return `+focusIs(save)+`;
	})()`)

	// A list's Create, pressed twice at once.
	p.goTo("/lists")
	create := testID("list-create-submit")
	p.waitUntil("no lists yet", stepTimeout, `document.querySelector('[data-testid="lists-note"]')?.textContent === 'You have no lists yet.' ? '' : 'no note yet'`)
	p.typeInto(testID("list-create-input"), "Engines")
	p.click(create) // focuses it
	p.waitUntil("the list made, the focus on Create", stepTimeout, `(() => {
		if (document.querySelector(`+js(create)+`).hasAttribute('aria-busy')) return 'still busy';
		const r = `+listRowsSay("Engines")+`;
		return r || `+focusIs(create)+`;
	})()`)
	p.typeInto(testID("list-create-input"), "Twice")
	eval[bool](p, `(() => { const b = document.querySelector(`+js(create)+`); b.click(); b.click(); return true; })()`)
	p.waitUntil("one list made of two presses", stepTimeout, `(() => {
		if (document.querySelector(`+js(create)+`).hasAttribute('aria-busy')) return 'still busy';
		return `+listRowsSay("Engines,Twice")+`;
	})()`)
	var out struct {
		Lists []struct{ Name string } `json:"lists"`
	}
	bob.must(http.StatusOK, "GET", "/api/v1/lists", nil, &out)
	if len(out.Lists) != 2 {
		t.Fatalf("the server holds %d lists, want 2: %+v", len(out.Lists), out.Lists)
	}
}

// A list of more than a page: removing one of the first page's members,
// then "Load more", shows every other member, none skipped.
func TestBrowserWalkFixListRemoveThenLoadMore(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	own := in.signUpAs(t, "own", "Owner")
	var made struct {
		List struct {
			ID int64 `json:"id"`
		} `json:"list"`
	}
	own.must(http.StatusCreated, "POST", "/api/v1/lists", map[string]string{"name": "Many"}, &made)
	const n = 32
	for i := range n {
		login := fmt.Sprintf("mem%02d", i)
		in.signUpAs(t, login, fmt.Sprintf("Member %02d", i))
		own.follow(login)
		own.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/lists/%d/members/%s", made.List.ID, login), nil, nil)
	}

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "own")
	p.goTo(fmt.Sprintf("/lists/%d", made.List.ID))
	shown := `[...document.querySelectorAll('[data-testid="list-members"] [data-testid="user"]')].map((li) => li.dataset.login)`
	p.waitUntil("the first page of members", stepTimeout, `(() => {
		const d = document.querySelector('[data-testid="list-members"]');
		if (!d || d.hidden) return 'no members';
		d.open = true;
		const got = `+shown+`;
		return got.length === 30 ? '' : got.length + ' shown';
	})()`)
	first := eval[string](p, shown+`[0]`)
	p.click(testID("member-remove", `[data-login="`+first+`"]`))
	p.waitUntil(first+" removed", stepTimeout, `(() => {
		const count = document.querySelector('[data-testid="list-count"]')?.textContent;
		const got = `+shown+`;
		return count === '31 members' && !got.includes(`+js(first)+`) ? '' : count + ', ' + got.length + ' shown';
	})()`)
	more := `[data-testid="list-members"] .timeline-foot button`
	p.waitVisible(more)
	p.click(more)
	p.waitUntil("every other member shown once", stepTimeout, `(() => {
		const got = `+shown+`;
		const want = Array.from({ length: `+fmt.Sprint(n)+` }, (_, i) => 'mem' + String(i).padStart(2, '0')).filter((l) => l !== `+js(first)+`);
		const missing = want.filter((l) => !got.includes(l));
		if (got.length !== want.length || missing.length) return got.length + ' shown, missing ' + missing.join(',');
		return new Set(got).size === got.length ? '' : 'some shown twice';
	})()`)
}

// Rename's error of the last time is gone when Rename opens again.
func TestBrowserWalkFixRenameErrorCleared(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "bob", "Bob Babbage")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "bob")
	p.goTo("/lists")
	p.waitVisible(testID("list-create-input"))
	p.typeInto(testID("list-create-input"), "Engines")
	p.click(testID("list-create-submit"))
	p.waitUntil("the list made", stepTimeout, listRowsSay("Engines"))
	id := eval[string](p, `document.querySelector('[data-testid="list-row"]').dataset.id`)
	row := testID("list-row", `[data-id="`+id+`"] `)
	input := testID("list-rename-" + id + "-input")
	errSel := testID("list-rename-" + id + "-error")

	p.click(row + testID("list-rename"))
	p.waitVisible(input)
	eval[bool](p, `(document.querySelector(`+js(input)+`).value = '', true)`)
	p.click(testID("list-rename-" + id + "-submit"))
	p.waitUntil("the empty name refused", stepTimeout, `(() => {
		const e = document.querySelector(`+js(errSel)+`);
		return !e.hidden && document.querySelector(`+js(input)+`).getAttribute('aria-invalid') === 'true' ? '' : 'no error shown';
	})()`)
	p.click(row + testID("list-rename")) // closes it
	p.waitUntil("rename closed", stepTimeout, `document.querySelector(`+js(testID("list-rename-"+id))+`).hidden ? '' : 'open'`)
	p.click(row + testID("list-rename"))
	p.waitVisible(input)
	if got := eval[string](p, `(() => {
		const e = document.querySelector(`+js(errSel)+`);
		const i = document.querySelector(`+js(input)+`);
		return (e.hidden ? '' : 'error shown: ' + e.textContent + '; ') + (i.getAttribute('aria-invalid') === 'true' ? 'aria-invalid' : '');
	})()`); got != "" {
		t.Fatalf("Rename reopened: %s", got)
	}
}

// Escape while a report is being sent leaves the menu open, so that its
// outcome shows.
func TestBrowserWalkFixEscapeWhileReporting(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	in.signUpAs(t, "bob", "Bob Babbage")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/u/bob")
	p.waitVisible(testID("profile-menu"))
	p.click(testID("profile-menu"))
	items := testID("profile-menu-items")
	p.waitVisible(items + " " + testID("report"))
	p.click(items + " " + testID("report"))
	p.waitVisible(items + " " + testID("report-reason"))
	p.typeInto(items+" "+testID("report-reason"), "Spam, and lots of it")
	holdFetches(p, `/\/api\/v1\/reports$/`, "POST")
	confirm := items + " " + testID("report-confirm")
	p.click(confirm)
	p.waitUntil("the report under way", stepTimeout, `window.__held === 1 ? '' : window.__held + ' held'`)
	p.waitUntil("the focus on Send report", stepTimeout, focusIs(confirm))
	p.press(kb.Escape)
	eval[bool](p, `window.__release()`)
	p.waitUntil("the report's outcome shown", stepTimeout, `(() => {
		const items = document.querySelector(`+js(items)+`);
		if (items.hidden) return 'the menu closed';
		const done = items.querySelector('[data-testid="report-done"]');
		return !done.hidden && done.offsetParent !== null && done.textContent.startsWith('Reported') ? '' : 'not told: ' + done.textContent;
	})()`)
}

// pressRepeat sends key as a held key's repeats do (autoRepeat).
func (p *tab) pressRepeat(key rune) {
	p.tb.Helper()
	p.do("press and hold "+string(key), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, ev := range kb.Encode(key) {
			if ev.Type == kb.KeyChar {
				continue
			}
			if ev.Type == input.DispatchKeyEventTypeKeyDown || ev.Type == input.DispatchKeyEventTypeRawKeyDown {
				repeat := true
				ev.AutoRepeat = &repeat
			}
			if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, *ev); err != nil {
				return err
			}
		}
		return nil
	}))
}

// After a post is deleted the focus moves to the next; an Enter meant for
// Delete (pressed again at once, or held) does not open that post. One
// pressed later does.
func TestBrowserWalkFixEnterAfterDelete(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	older := ada.post("the older post")
	newer := ada.post("the newer post")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("both posts in the feed", stepTimeout, statusIn("feed", "the newer post"))
	p.waitUntil("both posts in the feed", stepTimeout, statusIn("feed", "the older post"))
	olderID, newerID := fmt.Sprint(older.ID), fmt.Sprint(newer.ID)
	// Every address the client moves to is noted; the first post to take
	// the focus gets an Enter at once, as a second press of the one that
	// confirmed the delete would.
	eval[bool](p, `(() => {
		window.__navs = [];
		const push = history.pushState.bind(history);
		history.pushState = (s, t, u) => { window.__navs.push(String(u)); return push(s, t, u); };
		window.__moved = null;
		document.addEventListener('focusin', (ev) => {
			if (window.__moved || !(ev.target instanceof Element) || !ev.target.matches('[data-testid="status"]')) return;
			window.__moved = { id: ev.target.dataset.id, at: performance.now() };
			queueMicrotask(() => ev.target.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true })));
		}, true);
		return true;
	})()`)
	p.deleteUI("feed", newerID)
	post := testID("feed", ` [data-testid="status"][data-id="`+olderID+`"]`)
	p.waitUntil("the focus on the older post", stepTimeout, `(() => {
		if (!window.__moved) return 'the focus not moved to a post; ' + location.pathname;
		return window.__moved.id === `+js(olderID)+` ? '' : 'moved to ' + window.__moved.id;
	})()`)
	if navs := eval[[]string](p, `window.__navs`); len(navs) != 0 {
		t.Fatalf("an Enter at once after the delete opened %v", navs)
	}
	p.waitUntil("the focus on the older post", stepTimeout, focusIs(post))

	// Later, a held Enter does not open it either; a pressed one does.
	p.waitUntil("a while after the focus moved", stepTimeout, `performance.now() - window.__moved.at > 700 ? '' : 'not yet'`)
	p.pressRepeat('\r')
	if navs := eval[[]string](p, `window.__navs`); len(navs) != 0 {
		t.Fatalf("a held Enter opened %v", navs)
	}
	p.press("\r")
	p.waitUntil("Enter opens the post", stepTimeout, `(() => {
		const navs = window.__navs || [];
		return navs.join(',') === `+js("/s/"+olderID)+` ? '' : 'opened ' + navs.join(',');
	})()`)
}

// An export cut short is told, not downloaded: a body short of its
// Content-Length, and one without that does not end as the document does.
func TestBrowserWalkFixExportCutShort(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/settings")
	link := testID("settings-export")
	note := testID("settings-export-note")
	p.waitVisible(link)
	for _, c := range []struct{ name, body, headers string }{
		{"cut inside an item", `{"exported":"x","statuses":[{"id":1,"message":"hi"}`, `{}`},
		{"short of its Content-Length", `{"exported":"x","likes":[]}`, `{"Content-Length":"9999"}`},
	} {
		eval[bool](p, `(() => {
			const f = window.__realFetch || (window.__realFetch = window.fetch);
			window.fetch = (u, o) => String(u).endsWith('/api/v1/me/export')
				? Promise.resolve(new Response(`+js(c.body)+`, { status: 200, headers: { 'Content-Type': 'application/json', ...`+c.headers+` } }))
				: f(u, o);
			document.querySelector(`+js(note)+`).hidden = true;
			return true;
		})()`)
		p.click(link)
		p.waitUntil(c.name+": told", stepTimeout, `(() => {
			const n = document.querySelector(`+js(note)+`);
			return !n.hidden && n.textContent.includes('cut short') ? '' : 'note: ' + (n.hidden ? '(hidden)' : n.textContent);
		})()`)
	}
}

// "Load more" of a list of users, pressed from the keyboard, keeps the
// focus: it stays in place while it loads, and the focus then goes to the
// first user it brought, not to the page's start.
func TestBrowserWalkFixLoadMoreUsersKeepsFocus(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "star", "Star")
	const n = 32
	for i := range n {
		fan := in.signUpAs(t, fmt.Sprintf("fan%02d", i), fmt.Sprintf("Fan %02d", i))
		fan.follow("star")
	}

	br := newBrowser(t)
	p := br.newTab(t, "visitor", in.srv.URL)
	p.open("/u/star/followers")
	shown := `document.querySelectorAll('[data-testid="user-list"] [data-testid="user"]').length`
	p.waitUntil("the first page of followers", stepTimeout, `(() => { const n = `+shown+`; return n === 30 ? '' : n + ' shown'; })()`)
	more := `.list-card .timeline-foot button`
	p.waitVisible(more)
	if !eval[bool](p, `(() => { const b = document.querySelector(`+js(more)+`); b.focus(); return document.activeElement === b; })()`) {
		t.Fatal("Load more took no focus")
	}
	p.press(kb.Enter)
	p.waitUntil("the rest loaded, the focus on the first of them", stepTimeout, `(() => {
		const n = `+shown+`;
		if (n !== `+fmt.Sprint(n)+`) return n + ' shown';
		const items = document.querySelectorAll('[data-testid="user-list"] [data-testid="user"]');
		const a = document.activeElement;
		return items[30].contains(a) ? '' : 'focus on ' + (a === document.body ? 'BODY' : a.outerHTML.slice(0, 80));
	})()`)
}

// A timeline's "Load more", tabbed to (which brings it into view, and so
// starts the load), keeps the keyboard focus: the focus goes to the first
// older post it brought, not to the page's start.
func TestBrowserWalkFixLoadMorePostsKeepsFocus(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	const n = 45
	for i := range n {
		ada.post(fmt.Sprintf("Note %02d on the engine", i))
	}

	br := newBrowser(t)
	p := br.newTab(t, "visitor", in.srv.URL)
	p.open("/u/ada")
	rows := `document.querySelectorAll('.timeline-wrap ol.timeline [data-testid="status"]')`
	p.waitUntil("the first page of posts", stepTimeout, `(() => { const n = `+rows+`.length; return n > 0 && n < `+fmt.Sprint(n)+` ? '' : n + ' shown'; })()`)
	more := `.timeline-wrap .timeline-foot button`
	p.waitUntil("Load more shown", stepTimeout, `document.querySelector(`+js(more)+`)?.hidden === false ? '' : 'no button'`)
	shown := eval[int](p, rows+`.length`)
	if !eval[bool](p, `(() => { const b = document.querySelector(`+js(more)+`); b.focus(); return document.activeElement === b; })()`) {
		t.Fatal("Load more took no focus")
	}
	p.press(kb.Enter)
	p.waitUntil("older posts, the focus on the first of them", stepTimeout, `(() => {
		const all = `+rows+`;
		if (all.length <= `+fmt.Sprint(shown)+`) return all.length + ' shown';
		const a = document.activeElement;
		return a === all[`+fmt.Sprint(shown)+`] ? '' : 'focus on ' + (a === document.body ? 'BODY' : a.outerHTML.slice(0, 80));
	})()`)
}
