package web_test

import (
	"fmt"
	"testing"

	"chorus/social"
)

// atPage is a check that the address is path and the page's list (a
// data-testid) shows a status whose text is message.
func atPage(path, list, message string) string {
	return `(() => {
		if (location.pathname !== ` + js(path) + `) return 'at ' + location.pathname;
		return ` + statusIn(list, message) + `;
	})()`
}

// A visitor who is not signed in reads a profile, a status and the global
// timeline by their addresses; back and forward move between the pages
// without loading the client again; an old "#/" link still lands; and
// signing in from the header comes back to the page.
func TestBrowserVisitorPages(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUp(t, "ada")
	first := ada.post("Notes on the analytical engine")
	ada.post("It weaves algebraic patterns as the loom weaves flowers")
	in.signUp(t, "grace").post("A ship in port is safe")

	br := newBrowser(t)
	v := br.newTab(t, "visitor", in.srv.URL)

	v.open("/u/ada")
	v.waitUntil("ada's posts", stepTimeout, atPage("/u/ada", "timeline", first.Message))
	v.waitVisible(testID("visitor", ` `, testID("signin-link")))
	if got := eval[string](v, `document.querySelector('.profile-name')?.textContent ?? ''`); got != "Name ada" {
		t.Fatalf("profile heading %q, want ada's name", got)
	}
	// The address is the page: the visitor sees no follow button but a way in.
	if eval[bool](v, `document.querySelector('[data-testid="follow-button"]') !== null`) {
		t.Fatal("a follow button for a visitor")
	}
	v.keep("profile-1280-light")
	eval[bool](v, `window.__sameDocument = true`)

	statusPath := fmt.Sprintf("/s/%d", first.ID)
	v.click(testID("timeline", fmt.Sprintf(` [data-id="%d"] a.status-time`, first.ID)))
	v.waitUntil("the status page", stepTimeout, atPage(statusPath, "status-page", first.Message))
	v.waitVisible(testID("status-page-author"))
	if eval[bool](v, `document.querySelector('[data-testid="status-delete"]') !== null`) {
		t.Fatal("a visitor is offered Delete")
	}
	v.keep("status-1280-light")

	v.goTo("/global")
	v.waitUntil("the global timeline", stepTimeout, atPage("/global", "timeline", "A ship in port is safe"))
	v.keep("global-1280-light")

	// Back twice and forward once, all in one document.
	eval[bool](v, `(history.back(), true)`)
	v.waitUntil("back at the status", stepTimeout, atPage(statusPath, "status-page", first.Message))
	eval[bool](v, `(history.back(), true)`)
	v.waitUntil("back at ada's profile", stepTimeout, atPage("/u/ada", "timeline", first.Message))
	eval[bool](v, `(history.forward(), true)`)
	v.waitUntil("forward at the status", stepTimeout, atPage(statusPath, "status-page", first.Message))
	if !eval[bool](v, `window.__sameDocument === true`) {
		t.Fatal("moving through history loaded the page again")
	}

	// A link from before history routing.
	v.open("/#/u/grace")
	v.waitUntil("the old link redirected", stepTimeout, atPage("/u/grace", "timeline", "A ship in port is safe"))

	// A status opened directly, then sign in from the header: back on it,
	// signed in, with Delete for its author.
	v.open(statusPath)
	v.waitUntil("the status page by address", stepTimeout, atPage(statusPath, "status-page", first.Message))
	v.viewport(390, 800, true)
	v.colorScheme("dark")
	v.keep("status-390-dark")
	v.click(testID("signin-link"))
	form := testID("signin-form")
	v.waitVisible(form)
	v.keep("signin-390-dark")
	v.typeInto(form+` input[name="login"]`, "ada")
	v.typeInto(form+` input[name="password"]`, "password-ada")
	v.click(form + ` button[type="submit"]`)
	v.waitUntil("back on the status, signed in", stepTimeout, `(() => {
		if (location.pathname !== `+js(statusPath)+`) return 'at ' + location.pathname;
		return document.querySelector('[data-testid="status-page"] [data-testid="status-delete"]') ? '' : 'no Delete on the status page';
	})()`)
	v.waitLive()

	// Delete asks first; Keep keeps, Delete deletes.
	item := testID("status-page", ` `)
	v.click(item + testID("status-delete"))
	v.waitVisible(item + testID("status-delete-cancel"))
	v.keep("confirm-390-dark")
	v.click(item + testID("status-delete-cancel"))
	v.waitUntil("the confirmation closed", stepTimeout, `document.querySelector('.status-confirm:not([hidden])') ? 'still asking' : ''`)
	v.deleteUI("status-page", fmt.Sprint(first.ID))
	v.waitVisible(testID("status-gone"))
	if res := in.anon(t).do("GET", fmt.Sprintf("/api/v1/statuses/%d", first.ID), nil); res.Status != 404 {
		t.Fatalf("the deleted status answers %d", res.Status)
	}

	// Signing out keeps to the sign-in form, on the home page.
	v.click(testID("signout"))
	v.waitUntil("signed out", stepTimeout, `(() => {
		if (location.pathname !== '/') return 'at ' + location.pathname;
		return document.querySelector('[data-testid="signin-form"]') ? '' : 'no sign-in form';
	})()`)
}

// An address that is no page opens the client's not-found page, whatever
// its shape, and a page's address with a slash after it lands on the page.
func TestBrowserUnknownAddresses(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	srv := in.start()
	srv.signUpAs(t, "alice", "Alice")

	br := newBrowser(t)
	p := br.newTab(t, "visitor", srv.srv.URL)
	for _, path := range []string{"/s/abc", "/u/alice/likes", "/lists/abc"} {
		p.open(path)
		p.waitUntil("not found at "+path, stepTimeout, `(() => {
			const h1 = document.querySelector('main h1');
			if (document.body.innerText.includes('"error"')) return 'raw JSON: ' + document.body.innerText.slice(0, 80);
			return h1 && h1.textContent === 'Page not found' ? '' : 'heading is ' + (h1 && h1.textContent);
		})()`)
	}
	p.open("/u/alice/")
	p.waitUntil("alice's profile at /u/alice", stepTimeout, `(() => {
		if (location.pathname !== '/u/alice') return 'at ' + location.pathname;
		const h1 = document.querySelector('main h1');
		return h1 && h1.textContent.includes('Alice') ? '' : 'heading is ' + (h1 && h1.textContent);
	})()`)
}
