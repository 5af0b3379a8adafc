package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"chorus/social"
)

// listRowsSay is a check that the lists page shows exactly the lists
// named, in order.
func listRowsSay(names string) string {
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="list-row"] [data-testid="list-name"]')].map((el) => el.textContent).join(',');
		return got === ` + js(names) + ` ? '' : 'lists: ' + JSON.stringify(got) + ', note: ' + (document.querySelector('[data-testid="lists-note"]')?.textContent ?? '');
	})()`
}

// bob follows ada, makes a list from the header's Lists link, renames it, opens it and
// adds ada by her login: her post shows in the list's timeline, which only
// bob reads (a visitor at its address finds no list). Removing her takes it away, and
// the list is deleted from the lists page, asking first.
func TestBrowserLists(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	note := ada.post("Notes on the analytical engine")

	br := newBrowser(t)
	b := br.newTab(t, "bob", in.srv.URL)
	b.signUpUI("bob", "Bob Babbage", "password-bob")
	b.followUI("ada") // only those one follows may be put in one's lists
	b.waitVisible(`#nav a[href="/lists"]`)
	b.click(`#nav a[href="/lists"]`)
	b.waitUntil("no lists yet", stepTimeout, `(() => {
		if (location.pathname !== '/lists') return 'at ' + location.pathname;
		return document.querySelector('[data-testid="lists-note"]')?.textContent === 'You have no lists yet.' ? '' : 'no note yet';
	})()`)

	b.typeInto(testID("list-create-input"), "Engines")
	b.click(testID("list-create-submit"))
	b.waitUntil("the list made", stepTimeout, listRowsSay("Engines"))
	id := eval[string](b, `document.querySelector('[data-testid="list-row"]').dataset.id`)
	row := testID("list-row", `[data-id="`+id+`"] `)
	b.click(row + testID("list-rename"))
	input := testID("list-rename-" + id + "-input")
	b.waitVisible(input)
	eval[bool](b, `(document.querySelector(`+js(input)+`).value = '', true)`)
	b.typeInto(input, "Analytical engines")
	b.click(testID("list-rename-" + id + "-submit"))
	b.waitUntil("the list renamed", stepTimeout, listRowsSay("Analytical engines"))
	b.keep("lists-1280-light")

	b.click(row + `a.list-link`)
	listPage := "/lists/" + id
	b.waitUntil("the list's page", stepTimeout, `(() => {
		if (location.pathname !== `+js(listPage)+`) return 'at ' + location.pathname;
		const h = document.querySelector('[data-testid="list-title"]')?.textContent;
		return h === 'Analytical engines' ? '' : 'heading ' + h;
	})()`)
	if !eval[bool](b, `document.querySelector('#nav a[href="/lists"]').getAttribute('aria-current') === 'page'`) {
		t.Error("the header's Lists tab is not marked current on a list's page")
	}
	b.waitVisible(testID("list-add-input"))
	b.typeInto(testID("list-add-input"), "@ada")
	b.click(testID("list-add-submit"))
	b.waitUntil("ada's post in the list", stepTimeout, statusIn("timeline", note.Message))
	b.waitUntil("ada among the members", stepTimeout, `(() => {
		const count = document.querySelector('[data-testid="list-count"]')?.textContent;
		if (count !== '1 member') return 'count ' + count;
		return document.querySelector('[data-testid="list-members"] [data-testid="user"][data-login="ada"]') ? '' : 'ada not listed';
	})()`)
	b.keep("list-1280-light")

	// The list is its owner's alone: a visitor at its address finds no
	// list, none of its posts, no members and nothing to change.
	v := br.newTab(t, "visitor", in.srv.URL)
	v.open(listPage)
	v.waitUntil("the visitor told there is no list", stepTimeout, `(() => {
		const h = document.querySelector('[data-testid="list-title"]')?.textContent;
		return h === 'List not found' ? '' : 'heading ' + h;
	})()`)
	if eval[bool](v, `document.querySelector('[data-testid="status"], [data-testid="list-add"], [data-testid="member-remove"], [data-testid="user"]') !== null`) {
		t.Fatal("a visitor is shown the list's posts or members, or offered to change it")
	}
	v.viewport(390, 800, true)
	v.waitUntil("the list fits 390 px", stepTimeout, noSideScroll)
	v.keep("list-390-visitor")

	b.click(testID("member-remove", `[data-login="ada"]`))
	b.waitUntil("ada's post gone with her", stepTimeout, `(() => {
		const n = document.querySelectorAll('[data-testid="timeline"] [data-testid="status"]').length;
		const count = document.querySelector('[data-testid="list-count"]')?.textContent;
		return n === 0 && count === '0 members' ? '' : n + ' statuses, ' + count;
	})()`)

	b.goTo("/lists")
	b.waitUntil("back on the lists page", stepTimeout, listRowsSay("Analytical engines"))
	b.click(row + testID("list-delete"))
	b.waitVisible(row + testID("list-delete-confirm"))
	b.click(row + testID("list-delete-confirm"))
	b.waitUntil("the list deleted", stepTimeout, listRowsSay(""))
	if res := in.anon(t).do("GET", fmt.Sprintf("/api/v1/lists/%s", id), nil); res.Status != http.StatusNotFound {
		t.Fatalf("the deleted list answers %d", res.Status)
	}
}

// The Lists page tells ada what a list may hold, and it is what the
// server allows: people she follows. It promises nothing the server
// refuses: adding bob, whom she does not follow, is refused on the list's
// page, and told that only those she follows may be put in a list.
func TestBrowserListsIntroMatchesRule(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	in.signUpAs(t, "bob", "Bob Babbage")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/lists")
	p.typeInto(testID("list-create-input"), "Engines")
	p.click(testID("list-create-submit"))
	p.waitUntil("the list made", stepTimeout, listRowsSay("Engines"))
	intro := eval[string](p, `document.querySelector('main .page-head .muted')?.textContent ?? ''`)
	if !contains(intro, "people you follow") || contains(intro, "whether or not you follow") {
		t.Errorf("the Lists page says %q: it should say a list holds people you follow, as the server has it", intro)
	}
	p.click(testID("list-row") + ` a.list-link`)
	p.waitVisible(testID("list-add-input"))
	p.typeInto(testID("list-add-input"), "bob")
	p.click(testID("list-add-submit"))
	p.waitUntil("adding bob, not followed, refused", stepTimeout, `(() => {
		const e = document.querySelector('[data-testid="list-add-error"]:not([hidden])');
		return e && e.textContent.includes('follow') ? '' : 'error: ' + e?.textContent;
	})()`)
}
