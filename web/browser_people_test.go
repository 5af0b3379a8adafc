package web_test

import (
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
)

// followToggle is the selector of the follow button for login inside scope.
func followToggle(scope, login string) string {
	return scope + ` [data-testid="follow-toggle"][data-login="` + login + `"]`
}

// buttonSays is a check that the button sel reads label and is enabled.
func buttonSays(sel, label string) string {
	return `(() => {
		const b = document.querySelector(` + js(sel) + `);
		if (!b) return 'no button ' + ` + js(sel) + `;
		const text = b.querySelector('.follow-label')?.textContent;
		if (b.disabled) return 'button disabled';
		return text === ` + js(label) + ` ? '' : 'button says ' + text;
	})()`
}

// foundLogins is a check that the search results are exactly logins, in order.
func foundLogins(logins string) string {
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="search-results"] [data-testid="user"]')].map((li) => li.dataset.login).join(',');
		return got === ` + js(logins) + ` ? '' : 'results: ' + JSON.stringify(got) + ', note: ' + (document.querySelector('[data-testid="search-note"]')?.textContent ?? '');
	})()`
}

// A visitor searches from the header's Search link: results come as they
// type, by the start of a name and of a login, and a result opens the
// profile. The search rides in the address.
func TestBrowserPeopleSearch(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	in.signUpAs(t, "grace", "Grace Hopper")
	in.signUpAs(t, "adele", "Adele Goldberg")

	br := newBrowser(t)
	v := br.newTab(t, "visitor", in.srv.URL)
	v.open("/global")
	v.waitVisible(`#nav a[href="/search"]`)
	v.click(`#nav a[href="/search"]`)
	input := testID("search-input")
	v.waitVisible(input)
	v.waitUntil("the box has the focus", stepTimeout, `document.activeElement?.dataset.testid === 'search-input' ? '' : 'focus on ' + document.activeElement?.tagName`)

	// By a later word of the name.
	v.typeInto(input, "hop")
	v.waitUntil("grace found by name", stepTimeout, foundLogins("grace"))
	// "ho" finds grace too: on a busy machine its answer may come first,
	// so the address is waited for, not read once.
	v.waitUntil("the address names the search", stepTimeout, `location.pathname + location.search === '/search?q=hop' ? '' : 'address ' + location.pathname + location.search`)
	// No follow buttons for a visitor.
	if eval[bool](v, `document.querySelector('[data-testid="follow-toggle"]') !== null`) {
		t.Fatal("a visitor is offered Follow")
	}
	v.keep("search-1280-light")

	// By the start of a login: ada first (exact), then adele.
	eval[bool](v, `(() => { const i = document.querySelector('[data-testid="search-input"]'); i.value = ''; i.dispatchEvent(new Event('input')); return true; })()`)
	v.typeInto(input, "ada")
	v.waitUntil("ada found by login", stepTimeout, foundLogins("ada"))
	eval[bool](v, `(() => { const i = document.querySelector('[data-testid="search-input"]'); i.value = 'ad'; i.dispatchEvent(new Event('input')); return true; })()`)
	v.waitUntil("both by login prefix", stepTimeout, foundLogins("ada,adele"))
	v.waitUntil("nothing for zzz", stepTimeout, `(() => {
		const i = document.querySelector('[data-testid="search-input"]');
		if (i.value !== 'zzz') { i.value = 'zzz'; i.dispatchEvent(new Event('input')); }
		return document.querySelector('[data-testid="search-note"]').textContent.startsWith('No one') ? '' : 'note: ' + document.querySelector('[data-testid="search-note"]').textContent;
	})()`)

	// Reloaded, the address brings the search back; a click opens the profile.
	v.open("/search?q=Lovelace")
	v.waitUntil("ada by surname after a reload", stepTimeout, foundLogins("ada"))
	v.viewport(360, 780, true)
	v.waitUntil("search fits 360 px", stepTimeout, noSideScroll)
	v.keep("search-360-light")
	v.click(`[data-testid="search-results"] [data-login="ada"] a.user-link`)
	v.waitUntil("ada's profile", stepTimeout, `(() => {
		if (location.pathname !== '/u/ada') return 'at ' + location.pathname;
		return document.querySelector('.profile-name')?.textContent === 'Ada Lovelace' ? '' : 'no profile yet';
	})()`)
}

const noSideScroll = `(() => {
	const de = document.documentElement;
	return de.scrollWidth <= de.clientWidth ? '' : 'the page scrolls sideways: ' + de.scrollWidth + ' > ' + de.clientWidth;
})()`

// bob follows ada; on her followers list ada sees "Follows you" and
// "Follow back"; pressing it makes it "Following", and the server agrees.
func TestBrowserPeopleFollowBack(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	bob.follow("ada")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/u/ada/followers")
	btn := followToggle(`[data-testid="user-list"]`, "bob")
	p.waitUntil("Follow back for bob", stepTimeout, buttonSays(btn, "Follow back"))
	p.waitVisible(testID("user", `[data-login="bob"] `, testID("follows-you")))
	p.click(btn)
	p.waitUntil("Following bob", stepTimeout, buttonSays(btn, "Following"))
	if u := ada.user("bob"); u.YouFollow == nil || !*u.YouFollow {
		t.Fatalf("the server says ada follows bob: %v", u.YouFollow)
	}
	// ada on her following list: no button for herself on bob's list either.
	p.goTo("/u/bob/followers")
	p.waitVisible(testID("user", `[data-login="ada"]`))
	if eval[bool](p, `document.querySelector('[data-testid="user"][data-login="ada"] [data-testid="follow-toggle"]') !== null`) {
		t.Fatal("a follow button for yourself")
	}
	// Following again unfollows.
	p.goTo("/u/ada/followers")
	p.waitUntil("Following bob, fetched", stepTimeout, buttonSays(btn, "Following"))
	p.click(btn)
	p.waitUntil("Follow back again", stepTimeout, buttonSays(btn, "Follow back"))
	testio.Eventually(t, 5*time.Second, func() string {
		if u := ada.user("bob"); u.YouFollow != nil && !*u.YouFollow {
			return ""
		}
		return "ada still follows bob"
	})
	_ = bob
}

// Who to follow: carol follows ada; bob, whom ada follows, follows dan; the
// sidebar says why each, and following one, there or on their profile,
// takes them off the list.
func TestBrowserPeopleSuggestions(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	in.signUpAs(t, "dan", "Dan Bricklin")
	ada.follow("bob")
	bob.follow("dan")
	carol.follow("ada")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	reason := func(login, want string) string {
		return `(() => {
			const r = document.querySelector('[data-testid="suggestion"][data-login="` + login + `"] [data-testid="suggestion-reason"]');
			if (!r) return 'no suggestion ` + login + `';
			return r.textContent === ` + js(want) + ` ? '' : 'reason: ' + r.textContent;
		})()`
	}
	p.waitUntil("carol follows you", stepTimeout, reason("carol", "Follows you"))
	p.waitUntil("dan followed by bob", stepTimeout, reason("dan", "Followed by @bob"))
	p.keep("suggestions-1280-light")
	btn := followToggle(testID("suggestions"), "dan")
	p.waitUntil("Follow for dan", stepTimeout, buttonSays(btn, "Follow"))
	p.click(btn)
	// The list is read again: dan leaves it, carol stays, and the focus
	// stays in the panel.
	p.waitUntil("dan gone from Who to follow", stepTimeout, suggested("carol"))
	if !eval[bool](p, `document.querySelector('[data-testid="suggestions"]').contains(document.activeElement)`) {
		t.Error("the focus left Who to follow with dan's row")
	}
	if u := ada.user("dan"); u.YouFollow == nil || !*u.YouFollow {
		t.Fatal("the server does not say ada follows dan")
	}
	// Following from elsewhere, carol's profile, reads it again too.
	p.followUI("carol")
	p.goTo("/")
	p.waitUntil("carol gone from Who to follow", stepTimeout, suggested())
}

// suggested is a check that Who to follow lists exactly logins, in order.
func suggested(logins ...string) string {
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="suggestion"]')].map((r) => r.dataset.login).join(' ');
		return got === ` + js(strings.Join(logins, " ")) + ` ? '' : 'suggested: ' + got;
	})()`
}

// ada's page is open; bob follows her through the API: the bell counts one
// at once and says so; it leads to the notifications page, which lists bob
// as unread and clears the bell; the page fits a phone.
func TestBrowserPeopleNotifications(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	bell := testID("notes-button")
	if got := eval[string](p, `document.querySelector('[data-testid="notes-button"]').dataset.unread`); got != "0" {
		t.Fatalf("unread %q before anything", got)
	}
	bob.follow("ada")
	p.waitUntil("one unread", stepTimeout, `(() => {
		const c = document.querySelector('[data-testid="notes-count"]');
		const b = document.querySelector('[data-testid="notes-button"]');
		if (b.getAttribute('aria-label') !== 'Notifications, 1 unread') return 'bell named ' + b.getAttribute('aria-label');
		return c && !c.hidden && c.textContent === '1' ? '' : 'count: ' + (c && !c.hidden ? c.textContent : 'hidden');
	})()`)
	if got := eval[string](p, `document.querySelector('[data-testid="notes-live"]').textContent`); !contains(got, "Bob Babbage followed you") {
		t.Fatalf("the live region says %q", got)
	}
	p.keep("bell-1280-light")
	p.click(bell)
	p.waitUntil("the notifications page", stepTimeout, notesAre("Bob Babbage followed you|true"))
	p.waitUntil("read once open", stepTimeout, `document.querySelector('[data-testid="notes-count"]').hidden ? '' : 'still counted'`)
	if got := eval[string](p, `document.querySelector('[data-testid="notes-button"]').getAttribute('aria-current') ?? ''`); got != "page" {
		t.Fatalf("the bell's aria-current is %q on its page", got)
	}
	p.keep("notes-1280-light")
	p.viewport(360, 780, true)
	p.waitUntil("notes fit 360 px", stepTimeout, noSideScroll)
	p.keep("notes-360-light")
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// ada, on Home, follows carol from the sidebar's suggestions: carol's
// posts, which the follow brought into ada's home timeline, show in the
// feed there and then, not at the next visit, and carol leaves the
// suggestions.
func TestBrowserFollowFromSuggestionsFillsTheFeed(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Lovelock")
	carol := in.signUpAs(t, "carol", "Carol Cook")
	bob.follow("carol")
	ada.follow("bob")
	bob.post("Bob's post")
	st := carol.post("Carol's post")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("bob's post in the feed", stepTimeout, statusIn("feed", "Bob's post"))
	suggested := `[data-testid="suggestion"][data-login="carol"]`
	p.waitVisible(suggested)
	p.click(suggested + ` [data-testid="follow-toggle"]`)
	p.waitUntil("carol's post in the feed", stepTimeout, statusIn("feed", st.Message))
	p.waitUntil("carol no longer suggested", stepTimeout, `document.querySelector(`+js(suggested)+`) ? 'still suggested' : ''`)
}
