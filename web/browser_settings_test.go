package web_test

import (
	"net/http"
	"testing"

	"chorus/social"
)

// ada opens Settings from her profile: a new name shows in her header at
// once and in her friend bob's sidebar live; her bio shows on her profile,
// its link a link and its markup as text; a wrong current password is told
// in the form without signing her out; a new one signs out her other
// session; and deleting the account, with her password, signs her out.
func TestBrowserSettings(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	br := newBrowser(t)
	a := br.newTab(t, "ada", in.srv.URL)
	a.signUpUI("ada", "Ada", "password-ada")
	b := br.newTab(t, "bob", in.srv.URL)
	b.signUpUI("bob", "Bob", "password-bob")
	ada, bob := in.signIn(t, "ada"), in.signIn(t, "bob") // other sessions, by the API
	befriend(ada, bob)
	b.open("/")
	b.waitUntil("ada in bob's sidebar", stepTimeout, `(() => {
		const el = document.querySelector('[data-testid$="friend"][data-login="ada"] .friend-name');
		return el && el.textContent === 'Ada' ? '' : 'shows ' + el?.textContent;
	})()`)
	b.waitLive()

	a.goTo("/u/ada")
	a.waitVisible(testID("edit-profile"))
	a.click(testID("edit-profile"))
	a.waitVisible(testID("settings-name"))
	eval[bool](a, `(document.querySelector('[data-testid="settings-name"]').value = '', true)`)
	a.typeInto(testID("settings-name"), "Ada Lovelace")
	a.typeInto(testID("settings-bio"), `Notes at https://example.com/notes <b>bold</b>`)
	a.click(testID("settings-profile-submit"))
	a.waitUntil("the profile saved", stepTimeout, `(() => {
		const note = document.querySelector('[data-testid="settings-profile-note"]:not([hidden])')?.textContent;
		const name = document.querySelector('.me-name')?.textContent;
		return note === 'Profile saved.' && name === 'Ada Lovelace' ? '' : 'note ' + note + ', header ' + name;
	})()`)
	b.waitUntil("the new name in bob's sidebar, live", stepTimeout, `(() => {
		const el = document.querySelector('[data-testid$="friend"][data-login="ada"] .friend-name');
		return el && el.textContent === 'Ada Lovelace' ? '' : 'shows ' + el?.textContent;
	})()`)
	a.keep("settings-1280-light")

	b.goTo("/u/ada")
	b.waitUntil("the bio on ada's profile", stepTimeout, `(() => {
		const bio = document.querySelector('[data-testid="profile-bio"]');
		if (!bio) return 'no bio';
		const link = bio.querySelector('a');
		if (bio.querySelector('b')) return 'markup made HTML';
		return link && link.href === 'https://example.com/notes' && bio.textContent.includes('<b>bold</b>') ? '' : 'bio ' + bio.innerHTML;
	})()`)

	// A wrong current password is told in the form; she stays signed in.
	a.typeInto(testID("settings-current"), "password-wrong")
	a.typeInto(testID("settings-new"), "violin-case-77")
	a.click(testID("settings-password-submit"))
	a.waitUntil("the wrong password told", stepTimeout, `(() => {
		const note = document.querySelector('[data-testid="settings-password-note"]:not([hidden])')?.textContent;
		return note === 'The current password is wrong.' ? '' : 'note ' + note;
	})()`)
	if !eval[bool](a, `document.querySelector('[data-testid="me"]') !== null`) {
		t.Fatal("a wrong current password signed ada out")
	}
	eval[bool](a, `(document.querySelector('[data-testid="settings-current"]').value = '', true)`)
	a.typeInto(testID("settings-current"), "password-ada")
	a.click(testID("settings-password-submit"))
	a.waitUntil("the password changed", stepTimeout, `(() => {
		const note = document.querySelector('[data-testid="settings-password-note"]:not([hidden])')?.textContent ?? '';
		return note.startsWith('Password changed.') ? '' : 'note ' + note;
	})()`)
	if res := ada.do("GET", "/api/v1/me", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("ada's other session after the change: %d", res.Status)
	}
	if href := eval[string](a, `document.querySelector('[data-testid="settings-export"]').getAttribute('href')`); href != "/api/v1/me/export" {
		t.Fatalf("the export link goes to %q", href)
	}

	a.typeInto(testID("settings-delete-password"), "violin-case-77")
	a.click(testID("settings-delete-submit"))
	a.waitUntil("signed out after the deletion", stepTimeout, `(() => {
		if (document.querySelector('[data-testid="me"]')) return 'still signed in';
		return location.pathname === '/' ? '' : 'at ' + location.pathname;
	})()`)
	if res := in.anon(t).do("GET", "/api/v1/users/ada", nil); res.Status != http.StatusNotFound {
		t.Fatalf("ada's profile after the deletion: %d", res.Status)
	}
}
