package web_test

import (
	"net/http"
	"strconv"
	"testing"

	"chorus/social"
)

// reportRowsSay is a check that the list of reports (a data-testid) holds
// exactly the reports of ids, in order.
func reportRowsSay(list string, ids ...string) string {
	want := ""
	for i, id := range ids {
		if i > 0 {
			want += ","
		}
		want += id
	}
	return `(() => {
		const list = document.querySelector(` + js(testID(list)) + `);
		if (!list) return 'no ` + list + `';
		const got = [...list.querySelectorAll('[data-testid="report"]')].map((li) => li.dataset.id).join(',');
		if (got === ` + js(want) + `) return '';
		const err = [...document.querySelectorAll('[data-testid="admin-action-error"]:not([hidden]), .status-error:not([hidden])')].map((e) => e.textContent).join('; ');
		return '` + list + `: ' + JSON.stringify(got) + (err ? ', error: ' + err : '');
	})()`
}

// auditSays is a check that the page's audit log reads actions, newest
// first, each "action target".
func auditSays(actions ...string) string {
	want := ""
	for i, a := range actions {
		if i > 0 {
			want += ","
		}
		want += a
	}
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="audit-log"] [data-testid="audit-entry"]')]
			.map((li) => li.dataset.action + ' ' + li.dataset.target).join(',');
		return got === ` + js(want) + ` ? '' : 'audit log: ' + JSON.stringify(got);
	})()`
}

// ada reports bob's post; root, an admin, finds the Moderation link in the
// header, sees the report with the post's text on /admin, and suspends bob
// from it, confirming first: bob's open page, on another instance, is
// signed out at once. Resolving the report moves it under the resolved
// ones, the audit log on the page shows both actions, newest first, and
// lifting the suspension empties the suspended accounts.
func TestBrowserModeration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{Admins: []string{"root"}})
	in1, in2 := e.start(), e.start()
	ada := in1.signUpAs(t, "ada", "Ada Lovelace")

	br := newBrowser(t)
	b := br.newTab(t, "bob", in2.srv.URL)
	b.signUpUI("bob", "Bob Spammer", "kettle-drum-41")
	spam := "Cheap watches at <b>http://spam.example</b> today"
	b.postUI(spam)
	b.waitUntil("bob's post in his feed", stepTimeout, statusIn("feed", spam))
	b.waitLive()
	statusID, err := strconv.ParseInt(b.statusID("feed", spam), 10, 64)
	if err != nil {
		t.Fatalf("bob's post has no id: %v", err)
	}
	var filed struct{ Report struct{ ID int64 } }
	ada.must(http.StatusCreated, "POST", "/api/v1/reports",
		map[string]any{"login": "bob", "status_ids": []int64{statusID}, "reason": "Spam, over and over"}, &filed)
	id := strconv.FormatInt(filed.Report.ID, 10)

	r := br.newTab(t, "root", in1.srv.URL)
	r.signUpUI("root", "Root Admin", "kettle-drum-42")
	r.waitVisible(`#nav a[href="/admin"]`)
	r.click(`#nav a[href="/admin"]`)
	r.waitUntil("the open report", stepTimeout, reportRowsSay("reports-open", id))
	report := testID("reports-open", ` [data-testid="report"][data-id="`+id+`"] `)
	r.waitUntil("the report's account, reporter, reason and post", stepTimeout, `(() => {
		const li = document.querySelector(`+js(report)+`);
		const account = li.querySelector('[data-testid="report-account"]');
		if (account?.getAttribute('href') !== '/u/bob') return 'account link ' + account?.getAttribute('href');
		const reporter = li.querySelector('[data-testid="report-reporter"]')?.dataset.login;
		if (reporter !== 'ada') return 'reporter ' + reporter;
		const reason = li.querySelector('[data-testid="report-reason"]')?.textContent;
		if (reason !== 'Spam, over and over') return 'reason ' + reason;
		const text = [...li.querySelectorAll('[data-testid="report-status-text"]')].map((p) => p.textContent);
		if (JSON.stringify(text) !== JSON.stringify([`+js(spam)+`])) return 'posts ' + JSON.stringify(text);
		if (li.querySelector('b')) return 'the post was read as HTML';
		return document.querySelector('[data-testid="suspended-note"]')?.textContent === 'No account is suspended.' ? '' : 'suspended note';
	})()`)
	if got := eval[string](r, `document.querySelector('#nav a[href="/admin"]').getAttribute('aria-current') ?? ''`); got != "page" {
		t.Errorf("the Moderation tab is not marked current on /admin (aria-current %q)", got)
	}
	r.keep("admin-1280-light")

	// Suspend, confirming first: nothing happens before the confirmation.
	r.click(report + testID("report-suspend"))
	r.waitVisible(report + testID("report-suspend-confirm"))
	if got := eval[string](r, `document.activeElement?.dataset.testid ?? ''`); got != "report-suspend-confirm" {
		t.Errorf("focus after Suspend is on %q, want the confirmation", got)
	}
	if res := ada.do("GET", "/api/v1/users/bob", nil); res.Status != http.StatusOK {
		t.Fatalf("bob is suspended before the confirmation: %d %s", res.Status, res.Body)
	}
	r.click(report + testID("report-suspend-confirm"))
	r.waitUntil("bob among the suspended", stepTimeout, `(() => {
		const got = [...document.querySelectorAll('[data-testid="suspended"] [data-testid="suspended-user"]')].map((li) => li.dataset.login).join(',');
		return got === 'bob' ? '' : 'suspended: ' + JSON.stringify(got);
	})()`)
	r.waitUntil("the report still open, saying suspended, focus on its Resolve", stepTimeout, `(() => {
		const li = document.querySelector(`+js(report)+`);
		if (!li) return 'no report';
		if (!li.querySelector('[data-testid="report-suspended"]')) return 'not marked suspended';
		return document.activeElement === li.querySelector('[data-testid="report-resolve"]') ? '' : 'focus on ' + document.activeElement?.outerHTML.slice(0, 80);
	})()`)
	if res := ada.do("GET", "/api/v1/users/bob", nil); res.Status != http.StatusNotFound {
		t.Errorf("bob's profile after the suspension: %d, want 404", res.Status)
	}
	// Bob's page, open on the other instance, is signed out.
	b.waitUntil("bob signed out", stepTimeout, `document.querySelector('[data-testid="visitor"]') ? '' : 'still signed in: ' + (document.querySelector('[data-testid="conn-state"]')?.dataset.state ?? 'no state')`)

	// Resolve: the report moves under the resolved ones, and focus goes to
	// the open reports' heading, none being left.
	r.click(report + testID("report-resolve"))
	r.waitUntil("the report resolved", stepTimeout, reportRowsSay("reports-resolved", id))
	r.waitUntil("no open report left", stepTimeout, reportRowsSay("reports-open"))
	r.waitUntil("focus on the open reports' heading", stepTimeout, `document.activeElement?.id === 'reports-open-heading' ? '' : 'focus on ' + document.activeElement?.outerHTML.slice(0, 80)`)
	if got := eval[string](r, `document.querySelector('[data-testid="reports-resolved"] [data-testid="report-resolved"] .login')?.textContent ?? ''`); got != "root" {
		t.Errorf("the resolved report says resolved by %q, want root", got)
	}
	r.waitUntil("the audit log", stepTimeout, auditSays("resolve_report bob", "suspend bob"))
	r.keep("admin-resolved-1280-light")

	// Lift the suspension.
	lift := testID("suspended", ` [data-login="bob"] `) + testID("suspension-lift")
	if got := eval[string](r, `document.querySelector(`+js(lift)+`)?.getAttribute('aria-label') ?? ''`); got != "Lift the suspension of @bob" {
		t.Errorf("the Lift suspension button is named %q", got)
	}
	r.click(lift)
	r.waitUntil("no account suspended", stepTimeout, `document.querySelector('[data-testid="suspended-note"]')?.textContent === 'No account is suspended.' ? '' : 'note: ' + document.querySelector('[data-testid="suspended-note"]')?.textContent`)
	r.waitUntil("the lift in the audit log", stepTimeout, auditSays("unsuspend bob", "resolve_report bob", "suspend bob"))
	r.waitUntil("focus on the suspended accounts' heading", stepTimeout, `document.activeElement?.id === 'suspended-heading' ? '' : 'focus on ' + document.activeElement?.outerHTML.slice(0, 80)`)
	if res := ada.do("GET", "/api/v1/users/bob", nil); res.Status != http.StatusOK {
		t.Errorf("bob's profile after the suspension is lifted: %d, want 200", res.Status)
	}
}

// Anyone but an admin, signed in or not, finds no page at /admin and no
// link to it: the client asks the server nothing under /admin, and no
// report shows.
func TestBrowserModerationNotForOthers(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	in.signUp(t, "bob")
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	ada.must(http.StatusCreated, "POST", "/api/v1/reports", map[string]any{"login": "bob", "reason": "A secret reason"}, nil)

	br := newBrowser(t)
	noAdmin := `(() => {
		if (location.pathname !== '/admin') return 'at ' + location.pathname;
		if (document.querySelector('main h1')?.textContent !== 'Page not found') return 'heading ' + document.querySelector('main h1')?.textContent;
		if (document.querySelector('#nav a[href="/admin"]')) return 'a Moderation link';
		if (document.querySelector('[data-testid="admin"]')) return 'the moderation page';
		if (document.body.textContent.includes('A secret reason')) return 'the report shows';
		const asked = performance.getEntriesByType('resource').map((r) => new URL(r.name).pathname).filter((p) => p.startsWith('/api/v1/admin'));
		return asked.length ? 'asked ' + asked.join(', ') : '';
	})()`
	c := br.newTab(t, "carol", in.srv.URL)
	c.signUpUI("carol", "Carol", "kettle-drum-41")
	c.waitVisible(`#nav a[href="/lists"]`)
	c.goTo("/admin")
	c.waitUntil("no moderation page, signed in", stepTimeout, noAdmin)
	c.open("/admin")
	c.waitVisible(testID("me"))
	c.waitUntil("no moderation page, loaded afresh", stepTimeout, noAdmin)

	v := br.newTab(t, "visitor", in.srv.URL)
	v.open("/admin")
	v.waitVisible(testID("visitor"))
	v.waitUntil("no moderation page for a visitor", stepTimeout, noAdmin)
}

// Under -registrations approval, the sign-ups waiting show on /admin, each
// with Approve: approving one lets it sign in, takes it off the list, says
// so in the audit log and leaves focus on the part's heading, none being
// left.
func TestBrowserModerationApprovals(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Registrations: social.RegistrationsApproval, Admins: []string{"root"}}).start()
	anon := in.anon(t)
	newbie := map[string]string{"login": "newbie", "name": "New Person", "password": "kettle-drum-43"}
	anon.must(http.StatusAccepted, "POST", "/api/v1/users", newbie, nil)

	br := newBrowser(t)
	r := br.newTab(t, "root", in.srv.URL)
	r.signUpUI("root", "Root Admin", "kettle-drum-42") // an admin is never held
	r.goTo("/admin")
	approve := testID("approvals", ` [data-login="newbie"] `) + testID("approval-approve")
	r.waitVisible(approve)
	if got := eval[string](r, `document.querySelector(`+js(approve)+`).getAttribute('aria-label')`); got != "Approve @newbie" {
		t.Errorf("the Approve button is named %q", got)
	}
	r.click(approve)
	r.waitUntil("no sign-up waiting", stepTimeout, `document.querySelector('[data-testid="approvals-note"]')?.textContent === 'No sign-up is waiting.' ? '' : 'note: ' + document.querySelector('[data-testid="approvals-note"]')?.textContent`)
	r.waitUntil("the approval in the audit log", stepTimeout, auditSays("approve newbie"))
	r.waitUntil("focus on the approvals' heading", stepTimeout, `document.activeElement?.id === 'approvals-heading' ? '' : 'focus on ' + document.activeElement?.outerHTML.slice(0, 80)`)
	anon.must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "newbie", "password": "kettle-drum-43"}, nil)
}

// A report on an account deleted since reads as on "a deleted account":
// nothing to suspend, and it can still be resolved.
func TestBrowserModerationDeletedAccount(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	dave, carol := in.signUp(t, "dave"), in.signUp(t, "carol")
	var filed struct{ Report struct{ ID int64 } }
	carol.must(http.StatusCreated, "POST", "/api/v1/reports", map[string]any{"login": "dave", "reason": "Gone soon"}, &filed)
	dave.must(http.StatusNoContent, "DELETE", "/api/v1/me", map[string]string{"password": "password-dave"}, nil)
	id := strconv.FormatInt(filed.Report.ID, 10)

	br := newBrowser(t)
	r := br.newTab(t, "root", in.srv.URL)
	r.signUpUI("root", "Root Admin", "kettle-drum-42")
	r.goTo("/admin")
	r.waitUntil("the open report", stepTimeout, reportRowsSay("reports-open", id))
	report := testID("reports-open", ` [data-testid="report"][data-id="`+id+`"] `)
	r.waitUntil("the report on a deleted account", stepTimeout, `(() => {
		const li = document.querySelector(`+js(report)+`);
		const account = li.querySelector('[data-testid="report-account"]');
		if (account?.textContent !== 'a deleted account' || account.getAttribute('href')) return 'account ' + account?.outerHTML;
		if (li.querySelector('[data-testid="report-suspend"]')) return 'a Suspend button';
		const name = li.querySelector('[data-testid="report-resolve"]')?.getAttribute('aria-label');
		return name === 'Resolve the report on a deleted account' ? '' : 'Resolve is named ' + name;
	})()`)
	r.click(report + testID("report-resolve"))
	r.waitUntil("the report resolved", stepTimeout, reportRowsSay("reports-resolved", id))
}

// The moderation page reads each list a page at a time: past a page of
// suspended accounts (100) and of the audit log (50), "Load more" reads the
// next, and goes once the list is read to its end. A report's account past
// the first page of suspended accounts still shows as suspended.
func TestBrowserModerationLoadsMore(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	root := in.signUp(t, "root")
	ada := in.signUp(t, "ada")
	const n = 101
	for i := range n {
		login := "user" + strconv.Itoa(i)
		in.signUp(t, login)
		if i == 0 {
			ada.must(http.StatusCreated, "POST", "/api/v1/reports", map[string]any{"login": login, "reason": "Spam"}, nil)
		}
		root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/"+login, nil, nil)
	}

	br := newBrowser(t)
	r := br.signedInTab(t, in.srv.URL, "root")
	r.goTo("/admin")
	rows := func(list, row string, want int) string {
		return `(() => {
			const got = document.querySelectorAll(` + js(testID(list)+" "+testID(row)) + `).length;
			return got === ` + strconv.Itoa(want) + ` ? '' : '` + list + `: ' + got;
		})()`
	}
	shown := func(testid string, want bool) string {
		return `(() => {
			const b = document.querySelector(` + js(testID(testid)) + `);
			if (!b) return 'no ` + testid + `';
			return b.hidden === ` + strconv.FormatBool(!want) + ` ? '' : '` + testid + ` hidden: ' + b.hidden;
		})()`
	}
	r.waitUntil("a page of suspended accounts", stepTimeout, rows("suspended", "suspended-user", 100))
	r.waitUntil("a page of the audit log", stepTimeout, rows("audit-log", "audit-entry", 50))
	r.waitUntil("the first account suspended, reported, marked so", stepTimeout,
		`document.querySelector('[data-testid="reports-open"] [data-testid="report-suspended"]') ? '' : 'not marked suspended'`)
	r.waitUntil("more suspended accounts offered", stepTimeout, shown("suspended-more", true))
	r.waitUntil("no more reports offered", stepTimeout, shown("reports-more", false))

	r.click(testID("suspended-more"))
	r.waitUntil("every suspended account", stepTimeout, rows("suspended", "suspended-user", n))
	r.waitUntil("no more suspended accounts offered", stepTimeout, shown("suspended-more", false))
	r.click(testID("audit-log-more"))
	r.waitUntil("two pages of the audit log", stepTimeout, rows("audit-log", "audit-entry", 100))
	r.click(testID("audit-log-more"))
	r.waitUntil("the whole audit log", stepTimeout, rows("audit-log", "audit-entry", n))
	r.waitUntil("no more of the audit log offered", stepTimeout, shown("audit-log-more", false))
	if got := eval[string](r, `document.querySelector('[data-testid="audit-log"] [data-testid="audit-entry"]:last-child')?.dataset.target ?? ''`); got != "user0" {
		t.Errorf("the audit log's oldest entry names %q, want user0", got)
	}
}
