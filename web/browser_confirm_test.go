package web_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
)

// focusIsOn is a check that the focused element is a status, or the
// page's heading, never <body>.
const focusIsOn = `(() => {
	const a = document.activeElement;
	if (!a || a === document.body) return 'focus on <body>';
	if (a.dataset.testid === 'status' || a.tagName === 'H1') return '';
	return 'focus on ' + a.tagName + ' ' + (a.dataset.testid || a.textContent);
})()`

// enterOn focuses sel and presses Enter on it, as a keyboard user does
// after tabbing there.
func (p *tab) enterOn(sel string) {
	p.tb.Helper()
	p.waitVisible(sel)
	eval[bool](p, `(() => { document.querySelector(`+js(sel)+`).focus(); return true; })()`)
	p.press("\r")
}

// A reply posted under a post on Home and then deleted leaves the page at
// once, from under the post too, with no question left standing, and the
// post's reply count drops back.
func TestBrowserConfirmDeleteInlineReply(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")
	bob.post("hello from bob")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("bob's post in the feed", stepTimeout, statusIn("feed", "hello from bob"))
	p.waitLive()
	parent := testID("feed", ` > [data-id="`+p.statusID("feed", "hello from bob")+`"]`)
	count := parent + ` > .status-body > ` + testID("status-actions") + ` ` + testID("reply-count")
	p.click(parent + ` ` + testID("reply-button"))
	p.waitVisible(parent + ` ` + testID("reply-input"))
	p.typeInto(parent+` `+testID("reply-input"), "a reply to bob")
	p.click(parent + ` ` + testID("reply-submit"))
	inline := parent + ` .inline-replies ` + testID("status")
	p.waitVisible(inline)
	p.waitUntil("the reply counted", stepTimeout, `document.querySelector(`+js(count)+`)?.textContent === '1' ? '' : 'count says ' + document.querySelector(`+js(count)+`)?.textContent`)
	id := eval[string](p, `document.querySelector(`+js(inline)+`).dataset.id`)

	p.click(inline + ` ` + testID("status-delete"))
	p.waitVisible(inline + ` ` + testID("status-delete-confirm"))
	p.click(inline + ` ` + testID("status-delete-confirm"))
	p.waitUntil("the reply gone from the whole page", stepTimeout, `(() => {
		const left = document.querySelectorAll('[data-testid="status"][data-id="`+id+`"]');
		if (left.length === 0) return '';
		return left.length + ' left, saying ' + [...left].map((li) => li.querySelector('.status-confirm:not([hidden])')?.textContent ?? 'no question').join('; ');
	})()`)
	p.waitUntil("the reply count back to none", stepTimeout, `document.querySelector(`+js(count)+`)?.textContent === '' ? '' : 'count says ' + document.querySelector(`+js(count)+`)?.textContent`)
	p.waitUntil("after deleting the reply: the focus kept", stepTimeout, focusIsOn)
	if res := ada.do("GET", "/api/v1/statuses/"+id, nil); res.Status != http.StatusNotFound {
		t.Errorf("GET the deleted reply: %d, want 404", res.Status)
	}
}

// Deleting a post, muting and blocking, each with the keyboard (Enter on
// the button, then Enter on the confirm button it focuses), leave the
// focus on a post beside the one gone, or on the heading, not on <body>.
func TestBrowserConfirmKeepsFocus(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	cat := in.signUpAs(t, "cat", "Cat Herder")
	ada.follow("bob")
	ada.follow("cat")
	ada.post("ada one")
	bob.post("bob one")
	cat.post("cat one")
	ada.post("ada two")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	for _, m := range []string{"ada one", "bob one", "cat one", "ada two"} {
		p.waitUntil(m+" in the feed", stepTimeout, statusIn("feed", m))
	}
	p.waitLive()

	confirmByKeyboard := func(what, item, open, testid string) {
		t.Helper()
		if open != "" {
			p.enterOn(item + testID(open))
		}
		p.enterOn(item + testID(testid))
		p.waitUntil(what+": the confirm button focused", stepTimeout, `document.activeElement?.dataset.testid === `+js(testid+"-confirm")+` ? '' : 'focus on ' + document.activeElement?.tagName`)
		p.press("\r")
		p.waitUntil(what+": the post gone", stepTimeout, `document.querySelector(`+js(item)+`) === null ? '' : 'still shown'`)
		p.waitUntil(what+": the focus kept", stepTimeout, focusIsOn)
	}
	item := func(message string) string {
		return testID("feed", ` > [data-id="`+p.statusID("feed", message)+`"] `)
	}
	confirmByKeyboard("delete", item("ada two"), "", "status-delete")
	confirmByKeyboard("mute", item("bob one"), "status-menu", "mute")
	confirmByKeyboard("block", item("cat one"), "status-menu", "block")
}

// Muting someone from one of their posts on their profile turns the
// profile's own menu to Unmute, and the emptied timeline says why it is
// empty; Unmute there brings their posts back.
func TestBrowserConfirmProfileFollowsMute(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	cat := in.signUpAs(t, "cat", "Cat Herder")
	cat.post("cat one")
	cat.post("cat two")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/u/cat")
	p.waitUntil("cat's posts", stepTimeout, statusIn("timeline", "cat two"))
	p.waitVisible(testID("profile-menu"))
	item := testID("timeline", ` > [data-id="`+p.statusID("timeline", "cat two")+`"] `)
	p.click(item + testID("status-menu"))
	p.click(item + testID("mute"))
	p.click(item + testID("mute-confirm"))
	p.waitUntil("cat's posts hidden", stepTimeout, `document.querySelector('[data-testid="timeline"] [data-testid="status"]') === null ? '' : 'still shown'`)
	testio.Eventually(t, 5*time.Second, func() string {
		if u := ada.user("cat"); u.Muting != nil && *u.Muting {
			return ""
		}
		return "the server does not say ada mutes cat"
	})

	p.click(testID("profile-menu"))
	menu := testID("profile-menu-items")
	p.waitUntil("the profile menu offers Unmute", stepTimeout, `(() => {
		const m = document.querySelector(`+js(menu)+`);
		if (m.querySelector('[data-testid="unmute"]') && !m.querySelector('[data-testid="mute"]')) return '';
		return 'menu offers ' + [...m.querySelectorAll('button')].map((b) => b.textContent).join(', ');
	})()`)
	p.waitUntil("the timeline says cat is muted", stepTimeout, `(() => {
		const e = document.querySelector('[data-testid="profile-empty"]');
		const note = document.querySelector('.timeline-note')?.textContent ?? '';
		if (!e || e.closest('[hidden]')) return 'no empty text shown';
		if (!/You muted @cat/.test(e.textContent)) return 'empty text: ' + e.textContent;
		return note === '' ? '' : 'note: ' + note;
	})()`)

	p.click(menu + ` ` + testID("unmute"))
	p.waitUntil("cat's posts back", stepTimeout, statusIn("timeline", "cat two"))
	p.waitUntil("the profile menu offers Mute", stepTimeout, `document.querySelector(`+js(menu+` `+testID("mute"))+`) ? '' : 'no Mute'`)
}

// reportsJSON is GET /admin/reports as the tests read it.
type reportsJSON struct {
	Reports []struct {
		ID       int64 `json:"id"`
		Reporter struct {
			Login string `json:"login"`
		} `json:"reporter"`
		Account struct {
			Login string `json:"login"`
		} `json:"account"`
		Statuses []struct {
			ID int64 `json:"id"`
		} `json:"statuses"`
		Reason string `json:"reason"`
	} `json:"reports"`
}

// ada reports bob's post from its "…" menu with the keyboard: the reason
// field takes the focus, an empty reason is refused in place, and a
// reason sent (pressed twice) files one report, with the post, that the
// admins read.
func TestBrowserReportFromPost(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	root := in.signUp(t, "root")
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")
	st := bob.post("buy cheap watches")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("bob's post in the feed", stepTimeout, statusIn("feed", "buy cheap watches"))
	item := testID("feed", ` > [data-id="`+strconv.FormatInt(st.ID, 10)+`"] `)
	p.enterOn(item + testID("status-menu"))
	p.enterOn(item + testID("report"))
	p.waitUntil("the reason focused", stepTimeout, `document.activeElement?.dataset.testid === 'report-reason' ? '' : 'focus on ' + document.activeElement?.tagName`)
	if got := eval[string](p, `document.activeElement.labels[0]?.textContent ?? ''`); got == "" {
		t.Errorf("the reason field has no label")
	}

	confirm := item + testID("report-confirm")
	p.click(confirm)
	p.waitUntil("an empty reason refused", stepTimeout, `(() => {
		const e = [...document.querySelectorAll(`+js(item+`.status-error`)+`)].find((e) => !e.hidden);
		return e && /1 to 1,000 characters/.test(e.textContent) ? '' : 'no error shown';
	})()`)

	p.typeInto(item+testID("report-reason"), "  Spam, again and again  ")
	eval[bool](p, `(() => { const b = document.querySelector(`+js(confirm)+`); b.click(); b.click(); return true; })()`)
	p.waitUntil("the report said to be sent", stepTimeout, `(() => {
		const d = document.querySelector(`+js(item+testID("report-done"))+`);
		const e = [...document.querySelectorAll(`+js(item+`.status-error`)+`)].find((e) => !e.hidden);
		if (e) return 'error: ' + e.textContent;
		return d && !d.hidden && /Reported/.test(d.textContent) ? '' : 'not said';
	})()`)

	var got reportsJSON
	root.must(http.StatusOK, "GET", "/api/v1/admin/reports", nil, &got)
	if len(got.Reports) != 1 {
		raw, _ := json.Marshal(got)
		t.Fatalf("reports: %s, want one", raw)
	}
	r := got.Reports[0]
	if r.Reporter.Login != "ada" || r.Account.Login != "bob" || r.Reason != "Spam, again and again" ||
		len(r.Statuses) != 1 || r.Statuses[0].ID != st.ID {
		raw, _ := json.Marshal(r)
		t.Errorf("report: %s, want ada reporting bob's post %d for \"Spam, again and again\"", raw, st.ID)
	}
}

// ada reports bob from his profile: the report names no post. Once bob is
// suspended, a second report shows the API's answer in place.
func TestBrowserReportFromProfile(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	root := in.signUp(t, "root")
	in.signUpAs(t, "ada", "Ada Lovelace")
	in.signUpAs(t, "bob", "Bob Babbage")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/u/bob")
	menu := testID("profile-menu-items") + " "
	p.waitVisible(testID("profile-menu"))
	p.click(testID("profile-menu"))
	p.click(menu + testID("report"))
	p.typeInto(menu+testID("report-reason"), "Impersonates me")
	p.click(menu + testID("report-confirm"))
	p.waitUntil("the report said to be sent", stepTimeout, `(() => {
		const d = document.querySelector(`+js(menu+testID("report-done"))+`);
		return d && !d.hidden ? '' : 'not said';
	})()`)
	var got reportsJSON
	root.must(http.StatusOK, "GET", "/api/v1/admin/reports", nil, &got)
	if len(got.Reports) != 1 || got.Reports[0].Account.Login != "bob" || got.Reports[0].Reason != "Impersonates me" || len(got.Reports[0].Statuses) != 0 {
		raw, _ := json.Marshal(got)
		t.Fatalf("reports: %s, want ada's of bob, naming no post", raw)
	}

	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/bob", nil, nil)
	var refused struct {
		Error struct{ Message string } `json:"error"`
	}
	root.must(http.StatusNotFound, "POST", "/api/v1/reports", map[string]string{"login": "bob", "reason": "x"}, &refused)
	p.click(menu + testID("report"))
	p.typeInto(menu+testID("report-reason"), "Still at it")
	p.click(menu + testID("report-confirm"))
	p.waitUntil("the API's refusal shown", stepTimeout, `(() => {
		const e = [...document.querySelectorAll(`+js(menu+`.status-error`)+`)].find((e) => !e.hidden);
		if (!e) return 'no error shown';
		return e.textContent === `+js("Could not report: "+refused.Error.Message)+` ? '' : 'error: ' + e.textContent;
	})()`)
}
