package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"chorus/social"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// signUpAs creates a user with a name of its choosing and returns a client
// signed in as them; the password is "password-" + login.
func (in *instance) signUpAs(tb testing.TB, login, name string) *client {
	tb.Helper()
	c := in.anon(tb)
	var out struct {
		User  userJSON `json:"user"`
		Token string   `json:"token"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/users",
		map[string]string{"login": login, "name": name, "password": "password-" + login}, &out)
	c.token, c.login, c.id = out.Token, out.User.Login, out.User.ID
	return c
}

// signInUI signs in through the form on the home page.
func (p *tab) signInUI(login, password string) {
	p.tb.Helper()
	p.open("/")
	form := testID("signin-form")
	p.waitVisible(form)
	p.typeInto(form+` input[name="login"]`, login)
	p.typeInto(form+` input[name="password"]`, password)
	p.click(form + ` button[type="submit"]`)
	p.waitUntil("signed in as "+login, stepTimeout, `(() => {
		const me = document.querySelector('[data-testid="me"]');
		const err = document.querySelector('[data-testid="form-error"]:not([hidden])');
		if (err) return 'form error: ' + err.textContent;
		return me && me.textContent === `+js(login)+` ? '' : 'not signed in yet';
	})()`)
}

// fitsCheck is a check that the page does not scroll sideways and that
// every status's text lies whole inside the viewport and inside every
// ancestor that clips.
const fitsCheck = `(() => {
	const de = document.documentElement;
	if (de.scrollWidth > de.clientWidth) {
		const wide = [...document.querySelectorAll('body *')]
			.filter((el) => el.getBoundingClientRect().right > de.clientWidth + 0.5)
			.map((el) => el.tagName.toLowerCase() + '.' + el.className);
		return 'the page scrolls sideways: ' + de.scrollWidth + ' > ' + de.clientWidth + ': ' + wide.slice(0, 5).join(', ');
	}
	const msgs = [...document.querySelectorAll('[data-testid="status-message"]')];
	if (msgs.length === 0) return 'no status on the page';
	for (const m of msgs) {
		const r = m.getBoundingClientRect();
		if (r.left < -0.5 || r.right > de.clientWidth + 0.5) return 'a status runs out of the viewport: ' + r.left + '..' + r.right;
		if (m.scrollWidth > m.clientWidth + 1) return 'a status is wider than its box: ' + m.scrollWidth + ' > ' + m.clientWidth;
		for (let el = m.parentElement; el && el !== document.body; el = el.parentElement) {
			const cs = getComputedStyle(el);
			if (cs.overflowX === 'visible' && cs.overflowY === 'visible') continue;
			const pr = el.getBoundingClientRect();
			if (r.left < pr.left - 0.5 || r.right > pr.right + 0.5) return 'a status is clipped by ' + el.tagName + '.' + el.className;
		}
	}
	return '';
})()`

// A user with a 32-character login and a 64-character name posts; on a
// phone nothing scrolls sideways and the post reads whole, on home, their
// profile and their followers page, whatever the colour scheme.
func TestBrowserLongNames(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	srv := in.start()
	long := "Wolfeschlegelsteinhausenberger_" + "X" // 32 characters
	name := strings.Repeat("Hubert Blaine Wolfeschlegelsteinhausenbergerdorff ", 2)[:64]
	if len(long) != 32 {
		t.Fatalf("login of %d characters", len(long))
	}
	author := srv.signUpAs(t, long, name)
	friend := srv.signUpAs(t, "Ottoline_Violet_Anne_Cavendish_", "Lady Ottoline Violet Anne Cavendish-Bentinck Morrell of Garsington"[:64])
	author.follow(friend.login)
	friend.follow(author.login)
	// Listed in the author's settings, with Unmute beside the long name.
	author.must(http.StatusNoContent, "PUT", "/api/v1/mutes/"+friend.login, nil, nil)
	message := "A post by someone whose login and name are both as long as Chorus allows, " +
		"with a link https://example.com/a/rather/long/path/that/goes/on/and/on and @" + friend.login
	first := author.post(message)
	author.post("Supercalifragilisticexpialidocious_and_then_some_more_letters_without_a_single_space_anywhere")

	br := newBrowser(t)
	p := br.newTab(t, "author", srv.srv.URL)
	p.signInUI(long, "password-"+long)
	p.waitLive()
	p.waitUntil("the post in the feed", stepTimeout, statusIn("feed", message))

	for _, width := range []int64{360, 390} {
		p.viewport(width, 780, true)
		for _, page := range []struct{ label, path, list string }{
			{"home", "/", "feed"},
			{"profile", "/u/" + long, "timeline"},
			{"global", "/global", "timeline"},
			{"status", fmt.Sprintf("/s/%d", first.ID), "status-page"},
		} {
			p.goTo(page.path)
			p.waitUntil("the post on "+page.label, stepTimeout, statusIn(page.list, message))
			p.waitUntil(fmt.Sprintf("%s fits %d px", page.label, width), stepTimeout, fitsCheck)
		}
		for _, page := range []struct{ label, path string }{
			{"followers", "/u/" + long + "/followers"},
			{"settings", "/settings"},
		} {
			p.goTo(page.path)
			p.waitVisible(testID("user", `[data-login="`+friend.login+`"]`))
			p.waitUntil(fmt.Sprintf("%s fit %d px", page.label, width), stepTimeout, `(() => {
				const de = document.documentElement;
				return de.scrollWidth <= de.clientWidth ? '' : 'the page scrolls sideways: ' + de.scrollWidth + ' > ' + de.clientWidth;
			})()`)
		}
	}

	// For a person to look at: each page on a phone and a desktop, light and dark.
	for _, scheme := range []string{"light", "dark"} {
		p.colorScheme(scheme)
		for _, size := range []struct {
			width  int64
			mobile bool
		}{{360, true}, {1280, false}} {
			p.viewport(size.width, 800, size.mobile)
			for _, page := range []struct{ label, path, ready string }{
				{"home", "/", statusIn("feed", message)},
				{"profile", "/u/" + long, statusIn("timeline", message)},
				{"followers", "/u/" + long + "/followers", `document.querySelector('[data-testid="user"]') ? '' : 'no users'`},
				{"status", fmt.Sprintf("/s/%d", first.ID), statusIn("status-page", message)},
				{"settings-mutes", "/settings", `(() => {
					const el = document.querySelector('[data-testid="settings-mutes"] [data-testid="user"]');
					return el ? (el.scrollIntoView(), '') : 'no mute listed';
				})()`},
			} {
				p.goTo(page.path)
				p.waitUntil(page.label, stepTimeout, page.ready)
				p.keep(fmt.Sprintf("%s-%d-%s", page.label, size.width, scheme))
			}
		}
	}
}

// A three-letter login, the shortest there is, reads whole beside its name
// in every timeline, on a desktop and on a phone: only a login too long for
// the line gives way to an ellipsis.
func TestBrowserShortLoginWhole(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	srv := in.start()
	author := srv.signUpAs(t, "bob", "Bo")
	message := "A post by someone with a short login"
	first := author.post(message)

	br := newBrowser(t)
	p := br.signedInTab(t, srv.srv.URL, "bob")
	// scrollWidth and clientWidth round to whole pixels, and a login a
	// fraction of a pixel too wide for its box already shows as "@b…": so
	// the box is measured against the login's own width, unbounded.
	whole := `(() => {
		const logins = [...document.querySelectorAll('.status-author .login')];
		if (logins.length === 0) return 'no login shown';
		for (const l of logins) {
			const shown = l.getBoundingClientRect().width;
			const saved = l.style.cssText;
			l.style.cssText = 'max-width: none; min-width: max-content; flex: none';
			const natural = l.getBoundingClientRect().width;
			l.style.cssText = saved;
			if (shown < natural - 0.01 || l.scrollWidth > l.clientWidth) return 'login ' + l.textContent + ' clipped: ' + shown + ' < ' + natural;
		}
		return '';
	})()`
	for _, size := range []struct {
		width  int64
		mobile bool
	}{{1280, false}, {360, true}} {
		p.viewport(size.width, 800, size.mobile)
		for _, page := range []struct{ label, path, list string }{
			{"home", "/", "feed"},
			{"profile", "/u/bob", "timeline"},
			{"global", "/global", "timeline"},
			{"status", fmt.Sprintf("/s/%d", first.ID), "status-page"},
		} {
			p.goTo(page.path)
			p.waitUntil("the post on "+page.label, stepTimeout, statusIn(page.list, message))
			p.waitUntil(fmt.Sprintf("the login whole on %s at %d px", page.label, size.width), stepTimeout, whole)
		}
	}
}

// On a phone, a control reached by Tab or Shift+Tab on a long page (the
// settings, with blocks listed) scrolls into view clear of the sticky
// header, however tall it wraps, and of the fixed tab bar: never under
// either, even in part.
func TestBrowserFocusClearOfTheBars(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	for i := range 6 {
		login := fmt.Sprintf("user%d", i)
		in.signUpAs(t, login, "User "+login)
		ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/"+login, nil, nil)
	}
	br := newBrowser(t)
	p := br.newTab(t, "ada", in.srv.URL)
	p.viewport(360, 800, true)
	p.signInUI("ada", "password-ada")
	p.goTo("/settings")
	p.waitUntil("the blocks listed", stepTimeout, usersListed("blocks", "user5 user4 user3 user2 user1 user0"))
	covered := `(() => {
		const a = document.activeElement;
		if (!a || a === document.body || a.closest('.site-header, .tabbar, .skip-link')) return ''; // the skip link shows over the header
		const r = a.getBoundingClientRect();
		const header = document.querySelector('.site-header').getBoundingClientRect().bottom;
		const bar = document.querySelector('.tabbar');
		const tabbar = bar && getComputedStyle(bar).display !== 'none' ? bar.getBoundingClientRect().top : innerHeight;
		if (r.top >= header - 1 && r.bottom <= tabbar + 1) return '';
		const what = a.tagName + ' "' + (a.getAttribute('aria-label') || a.textContent).trim().slice(0, 30) + '"';
		return what + ' at ' + r.top.toFixed(0) + '..' + r.bottom.toFixed(0) + ', clear between ' + header.toFixed(0) + ' and ' + tabbar.toFixed(0);
	})()`
	eval[bool](p, `(document.querySelector('h1').focus(), true)`)
	var faults []string
	for i := range 40 {
		p.press("\t")
		if v := eval[string](p, covered); v != "" {
			faults = append(faults, fmt.Sprintf("Tab %d: %s", i+1, v))
		}
	}
	for i := range 40 {
		p.do("shift-tab", chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
		if v := eval[string](p, covered); v != "" {
			faults = append(faults, fmt.Sprintf("Shift+Tab %d: %s", i+1, v))
		}
	}
	if len(faults) > 0 {
		t.Errorf("focused controls under a bar:\n%s", strings.Join(faults, "\n"))
	}
}

// headerClear is a check that, in the site header, the visible nav links,
// the connection dot, the signed-in login and Sign out each show whole
// and none overlaps another.
const headerClear = `(() => {
	const parts = [
		...[...document.querySelectorAll('#nav a')].filter((a) => a.offsetParent).map((a) => ['link ' + a.textContent, a]),
		['conn dot', document.querySelector('.conn-dot')],
		['login', document.querySelector('[data-testid="me"]')],
		['sign out', document.querySelector('[data-testid="signout"]')],
	];
	const boxes = [];
	const bad = [];
	for (const [name, el] of parts) {
		if (!el) return 'no ' + name;
		const r = el.getBoundingClientRect();
		if (r.width < 1 || r.height < 1) bad.push(name + ' not shown (' + r.width.toFixed(1) + 'x' + r.height.toFixed(1) + ')');
		else if (el.scrollWidth > el.clientWidth + 1 && name !== 'login') bad.push(name + ' cut short');
		else boxes.push([name, r]);
	}
	for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
		const [a, ra] = boxes[i], [b, rb] = boxes[j];
		if (ra.left < rb.right - 0.5 && rb.left < ra.right - 0.5 && ra.top < rb.bottom - 0.5 && rb.top < ra.bottom - 0.5)
			bad.push(a + ' (' + ra.left.toFixed(1) + '..' + ra.right.toFixed(1) + ') overlaps ' + b + ' (' + rb.left.toFixed(1) + '..' + rb.right.toFixed(1) + ')');
	}
	const de = document.documentElement;
	if (de.scrollWidth > de.clientWidth) bad.push('the page scrolls sideways: ' + de.scrollWidth + ' > ' + de.clientWidth);
	return bad.join('; ');
})()`

// sessionOnBrandLine is whether the signed-in session shares the brand's
// line in the header, rather than taking a line of its own.
const sessionOnBrandLine = `(() => {
	const brand = document.querySelector('.brand').getBoundingClientRect();
	const session = document.querySelector('#session').getBoundingClientRect();
	return session.top < brand.bottom && brand.top < session.bottom;
})()`

// On a phone, 390 or 320 px wide, an admin's header holds Lists,
// Moderation, the connection dot, their login and Sign out, each whole
// and none drawn over another, as a member's does: the extra Moderation
// link does not put the dot over it or squeeze the login away. Where the
// line is too short for them all, the dot, login and Sign out take the
// line below; a member's header at 390 px keeps to one line.
func TestBrowserPhoneAdminHeader(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	in.signUpAs(t, "root", "Root Admin")
	in.signUpAs(t, "bob", "Bob Babbage")

	br := newBrowser(t)
	for _, login := range []string{"root", "bob"} {
		p := br.newTab(t, login, in.srv.URL)
		p.viewport(390, 844, true)
		p.signInUI(login, "password-"+login)
		p.waitLive()
		if login == "root" {
			p.waitVisible(`#nav a[data-route="admin"]`)
		}
		for _, width := range []int64{390, 320} {
			p.viewport(width, 700, true)
			p.waitUntil(fmt.Sprintf("%s's header clear at %d px", login, width), stepTimeout, headerClear)
			if login == "bob" && width == 390 && !eval[bool](p, sessionOnBrandLine) {
				t.Errorf("a member's header at 390 px takes two lines")
			}
			for _, scheme := range []string{"light", "dark"} {
				p.colorScheme(scheme)
				p.keep(fmt.Sprintf("header-%d-%s", width, scheme))
			}
		}
	}
}

// Signing out and in again, the friends panel's Away group and "Who to
// follow" still open beside the feed and close on a phone as the window's
// width changes, and the panels of the sessions signed out of are let go:
// after three sign-ins the page listens to the width as often as after one.
func TestBrowserLayoutPanelsFollowWidthAcrossSignIns(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")

	br := newBrowser(t)
	p := br.newTab(t, "ada", in.srv.URL)
	// Count the listeners on media queries, from before the page's scripts.
	p.do("count media listeners", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `(() => {
			window.mediaListeners = 0;
			const add = EventTarget.prototype.addEventListener, remove = EventTarget.prototype.removeEventListener;
			MediaQueryList.prototype.addEventListener = function (...a) { window.mediaListeners++; return add.apply(this, a); };
			MediaQueryList.prototype.removeEventListener = function (...a) { window.mediaListeners--; return remove.apply(this, a); };
		})()`})
		return err
	}))
	p.signInUI("ada", "password-ada")
	p.waitUntil("the friends panel", stepTimeout, `document.querySelector('details.away-group') ? '' : 'not yet'`)
	first := eval[int](p, `window.mediaListeners`)
	for range 2 {
		p.click(testID("signout"))
		p.waitVisible(testID("signin-form"))
		p.signInOn("ada", "password-ada")
		p.waitUntil("signed in again", stepTimeout, `document.querySelector('[data-testid="me"]') && document.querySelector('details.away-group') ? '' : 'not yet'`)
	}
	if last := eval[int](p, `window.mediaListeners`); last != first {
		t.Errorf("media query listeners: %d after the first sign-in, %d after the third", first, last)
	}

	groups := `[...document.querySelectorAll('details.away-group, details.suggest-group')]`
	p.viewport(375, 740, true)
	p.waitUntil("the groups closed on a phone", stepTimeout, groups+`.filter((d) => d.open).map((d) => d.className).join(' ') || ''`)
	p.viewport(1280, 800, false)
	p.waitUntil("the groups open beside the feed", stepTimeout, `(() => {
		const g = `+groups+`;
		if (g.length !== 2) return g.length + ' groups in the page';
		return g.filter((d) => !d.open).map((d) => d.className + ' closed').join(' ');
	})()`)
}
