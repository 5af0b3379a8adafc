package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"chorus/social"
)

// threadAuthors is a check that the thread on a status's page shows, in
// order, posts by exactly the logins want (space-separated).
func threadAuthors(want string) string {
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="status-page"] > [data-testid="status"]')]
			.map((li) => li.dataset.author).join(' ');
		return got === ` + js(want) + ` ? '' : 'thread by: ' + got;
	})()`
}

// ada mutes carol and blocks bob from the "…" menus of their replies in a
// thread: each one's replies leave the thread there and then, as they
// leave timelines, and what stays is what a reload reads.
func TestBrowserLiveHideFromThread(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	root := ada.post("Who will fund the engine?")
	fromBob := bob.reply(root.ID, "Not I")
	fromCarol := carol.reply(root.ID, "Nor I")
	bob.reply(fromCarol.ID, "Nor carol")

	br := newBrowser(t)
	p := br.newTab(t, "ada", in.srv.URL)
	p.signInUI("ada", "password-ada")
	p.goTo(fmt.Sprintf("/s/%d", root.ID))
	p.waitUntil("the whole thread", stepTimeout, threadAuthors("ada bob carol bob"))

	hide := func(id int64, what string) {
		t.Helper()
		item := testID("status-page", fmt.Sprintf(` > [data-id="%d"] `, id))
		p.click(item + testID("status-menu"))
		p.waitVisible(item + testID(what))
		p.click(item + testID(what))
		p.waitVisible(item + testID(what+"-confirm"))
		p.click(item + testID(what+"-confirm"))
	}
	hide(fromCarol.ID, "mute")
	p.waitUntil("carol's reply gone, bob's answer to it kept", stepTimeout, threadAuthors("ada bob bob"))
	hide(fromBob.ID, "block")
	p.waitUntil("bob's replies gone", stepTimeout, threadAuthors("ada"))
	p.open(fmt.Sprintf("/s/%d", root.ID))
	p.waitUntil("the same after a reload", stepTimeout, threadAuthors("ada"))
}

// bob likes, reposts and replies to ada's post while she has Home open in
// one tab and the post's page in another: both tabs count each at once,
// and the post's page shows bob's reply under it. bob's unlike counts
// down. ada's own reply from the post's page counts once, though its
// status frame comes too, and shows once.
func TestBrowserLiveCounts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")
	post := ada.post("The engine can weave algebra")

	br := newBrowser(t)
	home := br.newTab(t, "ada-home", in.srv.URL)
	home.signInUI("ada", "password-ada")
	home.waitUntil("ada's post in her feed", stepTimeout, statusIn("feed", post.Message))
	home.waitLive()
	page := br.newTab(t, "ada-post", in.srv.URL)
	page.signInUI("ada", "password-ada")
	page.goTo(fmt.Sprintf("/s/%d", post.ID))
	page.waitUntil("the post, nothing counted", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 0 likes", "false"))
	page.waitLive()

	bob.like(post.ID)
	bob.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/repost", post.ID), nil, nil)
	tabs := []struct {
		p    *tab
		list string
	}{{home, "feed"}, {page, "status-page"}}
	for _, tc := range tabs {
		tc.p.waitUntil("bob's like counted", stepTimeout, actionIs(tc.list, post.ID, "like", "Like, 1 like", "false"))
		tc.p.waitUntil("bob's repost counted", stepTimeout, actionIs(tc.list, post.ID, "repost", "Repost, 1 repost", "false"))
	}
	reply := bob.reply(post.ID, "It weaves flowers too")
	// Its status frame and its notification both come: one reply.
	for _, tc := range tabs {
		tc.p.waitUntil("bob's reply counted", stepTimeout, actionIs(tc.list, post.ID, "reply", "Reply, 1 reply", ""))
		tc.p.waitUntil("bob's reply shown", stepTimeout, statusIn(tc.list, reply.Message))
		tc.p.waitUntil("three notifications", stepTimeout, badgeIs(3))
		if got := eval[string](tc.p, `document.querySelector(`+js(actionSel(tc.list, post.ID, "reply"))+`).getAttribute('aria-label')`); got != "Reply, 1 reply" {
			t.Errorf("%s counts %q after bob's reply came both ways, want Reply, 1 reply", tc.p.name, got)
		}
	}
	page.waitUntil("bob's reply under the post", stepTimeout, `(() => {
		const items = [...document.querySelectorAll('[data-testid="status-page"] > [data-testid="status"]')];
		const got = items.map((li) => li.dataset.id + ':' + (li.dataset.depth ?? '0')).join(' ');
		return got === `+js(fmt.Sprintf("%d:0 %d:1", post.ID, reply.ID))+` ? '' : 'thread: ' + got;
	})()`)

	bob.must(http.StatusOK, "DELETE", fmt.Sprintf("/api/v1/statuses/%d/like", post.ID), nil, nil)
	home.waitUntil("bob's unlike counted", stepTimeout, actionIs("feed", post.ID, "like", "Like, 0 likes", "false"))
	page.waitUntil("bob's unlike counted", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 0 likes", "false"))

	// ada answers from the post's page: one more reply, not two, in both
	// tabs, once the other tab has her reply's frame.
	page.click(actionSel("status-page", post.ID, "reply"))
	box := testID("status-page", " .is-focus ") + testID("reply-input")
	page.waitVisible(box)
	page.typeInto(box, "And numbers")
	page.click(testID("status-page", " .is-focus ") + testID("reply-submit"))
	home.waitUntil("ada's reply in her feed", stepTimeout, statusIn("feed", "And numbers"))
	home.waitUntil("ada's reply counted once at home", stepTimeout, actionIs("feed", post.ID, "reply", "Reply, 2 replies", ""))
	page.waitUntil("ada's reply shown once", stepTimeout, statusIn("status-page", "And numbers"))
	page.waitUntil("ada's reply counted once on the post's page", stepTimeout, actionIs("status-page", post.ID, "reply", "Reply, 2 replies", ""))
	// Its frame may come after the answer; the home tab has had it, so
	// this tab has too, or nearly: the count still says two.
	if got := eval[string](page, `document.querySelector(`+js(actionSel("status-page", post.ID, "reply"))+`).getAttribute('aria-label')`); got != "Reply, 2 replies" {
		t.Errorf("the post's page counts %q after ada's reply, want Reply, 2 replies", got)
	}
}

// An admin suspends bob while ada has his post in her feed: liking it
// takes it off the page with a word why, as a deletion would, instead of
// leaving it there with "No such status."
func TestBrowserLiveSuspendedPostLeaves(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	root := in.signUpAs(t, "root", "Root Admin")
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Spammer")
	ada.follow("bob")
	ada.post("Ada's own post")
	post := bob.post("Cheap watches today")

	br := newBrowser(t)
	p := br.newTab(t, "ada", in.srv.URL)
	p.signInUI("ada", "password-ada")
	p.waitUntil("bob's post in the feed", stepTimeout, statusIn("feed", post.Message))
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/bob", nil, nil)
	p.click(actionSel("feed", post.ID, "like"))
	p.waitUntil("bob's post gone, with a word why", stepTimeout, `(() => {
		if (document.querySelector('[data-testid="feed"] [data-id="`+fmt.Sprint(post.ID)+`"]')) return 'still shown';
		const toast = document.getElementById('toast');
		return toast && !toast.hidden && toast.textContent === 'That post is no longer available.' ? '' : 'toast: ' + (toast && toast.textContent);
	})()`)
	p.waitUntil("ada's post stays", stepTimeout, statusIn("feed", "Ada's own post"))
}
