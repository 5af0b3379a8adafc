package web_test

import (
	"fmt"
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

// usersListed is a check that the settings section of kind (blocks or
// mutes) lists exactly the logins want (space-separated), in order.
func usersListed(kind, want string) string {
	return `(() => {
		const got = [...document.querySelectorAll(` + js(testID("settings-"+kind, ` [data-testid="user"]`)) + `)]
			.map((li) => li.dataset.login).join(' ');
		return got === ` + js(want) + ` ? '' : 'listed: ' + got;
	})()`
}

// ada's settings list whom she blocks and whom she mutes, newest first,
// each with a button to take it back: Unblock from the keyboard takes the
// row out (the focus to the row beside it) and lets bob's posts in again.
// A block and a mute made on another device come in live, at the top,
// and one taken back there leaves.
func TestBrowserSettingsListsBlocksAndMutes(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	for _, login := range []string{"bob", "carol", "dan", "eve"} {
		in.signUpAs(t, login, login)
	}
	for _, path := range []string{"/api/v1/blocks/bob", "/api/v1/blocks/carol", "/api/v1/mutes/dan"} {
		ada.must(http.StatusNoContent, "PUT", path, nil, nil)
	}

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/settings")
	p.waitUntil("both blocks, newest first", stepTimeout, usersListed("blocks", "carol bob"))
	p.waitUntil("the mute", stepTimeout, usersListed("mutes", "dan"))
	p.waitLive()
	eval[bool](p, `(document.querySelector(`+js(testID("settings-blocks"))+`).scrollIntoView(), true)`)
	p.keep("settings-blocks-1280-light")

	undo := testID("settings-blocks", ` [data-login="carol"] [data-testid="settings-blocks-undo"]`)
	eval[bool](p, `(document.querySelector(`+js(undo)+`).focus(), true)`)
	p.press("\r")
	p.waitUntil("carol unblocked", stepTimeout, usersListed("blocks", "bob"))
	p.waitUntil("the focus on bob's row", stepTimeout, `document.activeElement?.closest('[data-testid="user"]')?.dataset.login === 'bob' ? '' : 'focus on ' + document.activeElement?.outerHTML.slice(0, 80)`)
	var blocks struct{ Users []userJSON }
	ada.must(http.StatusOK, "GET", "/api/v1/blocks", nil, &blocks)
	if len(blocks.Users) != 1 || blocks.Users[0].Login != "bob" {
		t.Errorf("the server's blocks after the unblock: %+v, want bob alone", blocks.Users)
	}

	// Another device of ada's.
	ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/eve", nil, nil)
	ada.must(http.StatusNoContent, "PUT", "/api/v1/mutes/carol", nil, nil)
	p.waitUntil("eve's block, live, at the top", stepTimeout, usersListed("blocks", "eve bob"))
	p.waitUntil("carol's mute, live, at the top", stepTimeout, usersListed("mutes", "carol dan"))
	ada.must(http.StatusNoContent, "DELETE", "/api/v1/mutes/dan", nil, nil)
	p.waitUntil("dan's mute gone, live", stepTimeout, usersListed("mutes", "carol"))
	for _, path := range []string{"/api/v1/blocks/eve", "/api/v1/blocks/bob", "/api/v1/mutes/carol"} {
		ada.must(http.StatusNoContent, "DELETE", path, nil, nil)
	}
	p.waitUntil("no block left", stepTimeout, usersListed("blocks", ""))
	p.waitUntil("no mute left", stepTimeout, usersListed("mutes", ""))
	p.waitUntil("the empty lists say so", stepTimeout, `(() => {
		const notes = [...document.querySelectorAll('[data-testid="settings-blocks"] .timeline-note, [data-testid="settings-mutes"] .timeline-note')].map((n) => n.textContent);
		return notes.length === 2 && notes.every((n) => n.startsWith('You ')) ? '' : 'notes: ' + JSON.stringify(notes);
	})()`)
}

// With more blocks than a page, the list reads on when the rows shown are
// all taken back (here on another device): it shows the block left
// behind "Load more", not that there is none.
func TestBrowserSettingsBlocksReadOn(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	var logins []string
	for i := range 31 {
		login := fmt.Sprintf("u%02d", i)
		in.signUpAs(t, login, login)
		ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/"+login, nil, nil)
		logins = append(logins, login)
	}
	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/settings")
	rows := `document.querySelectorAll(` + js(testID("settings-blocks", ` [data-testid="user"]`)) + `).length`
	p.waitUntil("a page of 30", stepTimeout, rows+` === 30 ? '' : 'rows: ' + `+rows)
	p.waitLive()
	for _, login := range logins[1:] { // the newest 30, shown
		ada.must(http.StatusNoContent, "DELETE", "/api/v1/blocks/"+login, nil, nil)
	}
	p.waitUntil("the block left read on", stepTimeout, usersListed("blocks", "u00"))
}

// bob has his friend ada's profile open when she takes a new name: the
// page's heading and title show it without a reload, as his sidebar does.
func TestBrowserFriendRenamedOnOpenProfile(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Byron")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	befriend(ada, bob)

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "bob")
	p.waitLive()
	p.goTo("/u/ada")
	named := func(name string) string {
		return `(() => {
			const got = document.querySelector('.profile-name')?.textContent;
			return got === ` + js(name) + ` && document.title.startsWith(` + js(name+" (@ada)") + `) ? '' : 'heading ' + got + ', title ' + document.title;
		})()`
	}
	p.waitUntil("ada's profile", stepTimeout, named("Ada Byron"))

	ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"name": "Ada Lovelace"}, nil)
	p.waitUntil("the open profile renamed, live", stepTimeout, named("Ada Lovelace"))
}
