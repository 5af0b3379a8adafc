package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"chorus/social"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
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

// thread is ada's post answered by bob and carol, and carol's answered by
// bob, open in a tab of ada's.
type thread struct {
	in                       *instance
	ada                      *client
	br                       *browser
	p                        *tab
	root, fromBob, fromCarol statusJSON
}

// openThread writes the thread and opens it in ada's tab named name.
func openThread(t *testing.T, name string) thread {
	t.Helper()
	th := thread{in: newEnv(t, social.Options{}).start()}
	th.ada = th.in.signUpAs(t, "ada", "Ada Lovelace")
	bob := th.in.signUpAs(t, "bob", "Bob Babbage")
	carol := th.in.signUpAs(t, "carol", "Carol Shaw")
	th.root = th.ada.post("Who will fund the engine?")
	th.fromBob = bob.reply(th.root.ID, "Not I")
	th.fromCarol = carol.reply(th.root.ID, "Nor I")
	bob.reply(th.fromCarol.ID, "Nor carol")
	th.br = newBrowser(t)
	th.p = th.br.newTab(t, name, th.in.srv.URL)
	th.p.signInUI("ada", "password-ada")
	th.p.goTo(fmt.Sprintf("/s/%d", th.root.ID))
	th.p.waitUntil("the whole thread", stepTimeout, threadAuthors("ada bob carol bob"))
	return th
}

// ada mutes carol and blocks bob from the "…" menus of their replies in a
// thread: each one's replies leave the thread there and then, as they
// leave timelines, and what stays is what a reload reads.
func TestBrowserLiveHideFromThread(t *testing.T) {
	t.Parallel()
	th := openThread(t, "ada")
	p, root, fromBob, fromCarol := th.p, th.root, th.fromBob, th.fromCarol

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

// ada mutes carol and blocks bob on another device while a thread of
// theirs is open here, and bob's profile in another tab: their replies
// leave the thread, and the profile's menu says Unblock, as if done
// here. Her unblock elsewhere turns the menu back.
func TestBrowserLiveHideFromAnotherDevice(t *testing.T) {
	t.Parallel()
	th := openThread(t, "ada-thread")
	p, ada := th.p, th.ada
	p.waitLive()
	profile := th.br.newTab(t, "ada-profile", th.in.srv.URL)
	profile.signInUI("ada", "password-ada")
	profile.goTo("/u/bob")
	profile.waitVisible(testID("profile-menu"))
	profile.waitLive()
	menuSays := func(testid string) string {
		return `document.querySelector(` + js(testID(testid)) + `) ? '' : 'no ` + testid + ` in the menu'`
	}
	profile.waitUntil("the menu offers Block", stepTimeout, menuSays("block"))

	ada.must(http.StatusNoContent, "PUT", "/api/v1/mutes/carol", nil, nil)
	p.waitUntil("carol's reply gone, bob's answer to it kept", stepTimeout, threadAuthors("ada bob bob"))
	ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/bob", nil, nil)
	p.waitUntil("bob's replies gone", stepTimeout, threadAuthors("ada"))
	profile.waitUntil("the menu offers Unblock", stepTimeout, menuSays("unblock"))
	// The focus on Unblock as it is taken back elsewhere goes to Block.
	profile.click(testID("profile-menu"))
	profile.waitVisible(testID("unblock"))
	eval[bool](profile, `(document.querySelector(`+js(testID("unblock"))+`).focus(), true)`)
	ada.must(http.StatusNoContent, "DELETE", "/api/v1/blocks/bob", nil, nil)
	profile.waitUntil("the menu offers Block again", stepTimeout, menuSays("block"))
	profile.waitUntil("the focus on Block", stepTimeout, `document.activeElement?.dataset.testid === 'block' ? '' : 'focus on ' + document.activeElement?.outerHTML.slice(0, 80)`)
}

// Counts told by frames that do not carry the reply itself: ada, who
// does not follow bob, opens her feed after bob answered her post, and
// his deletion of the answer counts it out there (its notification's
// removal names the post); carol, on the global timeline, counts bob's
// next answer in as it comes there.
func TestBrowserLiveCountsWithoutTheReply(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	in.signUpAs(t, "carol", "Carol Herschel")
	post := ada.post("Which engine first?")
	first := bob.reply(post.ID, "The difference engine")

	br := newBrowser(t)
	home := br.newTab(t, "ada-home", in.srv.URL)
	home.signInUI("ada", "password-ada")
	home.waitUntil("bob's answer counted", stepTimeout, actionIs("feed", post.ID, "reply", "Reply, 1 reply", ""))
	home.waitLive()
	global := br.newTab(t, "carol-global", in.srv.URL)
	global.signInUI("carol", "password-carol")
	global.goTo("/global")
	global.waitUntil("ada's post, bob's answer counted", stepTimeout, actionIs("timeline", post.ID, "reply", "Reply, 1 reply", ""))
	global.waitLive()

	bob.deleteStatus(first.ID)
	home.waitUntil("bob's deleted answer counted out", stepTimeout, actionIs("feed", post.ID, "reply", "Reply, 0 replies", ""))
	global.waitUntil("and on the global timeline", stepTimeout, actionIs("timeline", post.ID, "reply", "Reply, 0 replies", ""))
	second := bob.reply(post.ID, "The analytical engine")
	global.waitUntil("bob's next answer on the global timeline", stepTimeout, statusIn("timeline", second.Message))
	global.waitUntil("and counted on ada's post there", stepTimeout, actionIs("timeline", post.ID, "reply", "Reply, 1 reply", ""))
	home.waitUntil("and in ada's feed", stepTimeout, actionIs("feed", post.ID, "reply", "Reply, 1 reply", ""))
}

// feedAndPostTabs opens two tabs signed in as login, each live: Home,
// showing post, and post's own page.
func feedAndPostTabs(t *testing.T, in *instance, login string, post statusJSON) (home, page *tab) {
	t.Helper()
	br := newBrowser(t)
	home = br.newTab(t, login+"-home", in.srv.URL)
	home.signInUI(login, "password-"+login)
	home.waitUntil("the post in "+login+"'s feed", stepTimeout, statusIn("feed", post.Message))
	home.waitLive()
	page = br.newTab(t, login+"-post", in.srv.URL)
	page.signInUI(login, "password-"+login)
	page.goTo(fmt.Sprintf("/s/%d", post.ID))
	page.waitUntil("the post's page", stepTimeout, statusIn("status-page", post.Message))
	page.waitLive()
	return home, page
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

	home, page := feedAndPostTabs(t, in, "ada", post)
	page.waitUntil("the post, nothing counted", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 0 likes", "false"))

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

// carol, who follows bob, has ada's post open in one tab and her feed in
// another when bob answers it, then deletes his answer on his own
// device: both tabs count the reply, then count it out again, though
// carol had no notification of either (the reply's status_deleted frame
// names the post it answered).
func TestBrowserLiveReplyDeletedElsewhere(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Herschel")
	carol.follow("ada")
	carol.follow("bob")
	bob.follow("ada")
	post := ada.post("Who has seen the comet?")

	home, page := feedAndPostTabs(t, in, "carol", post)
	page.waitUntil("the post, no reply counted", stepTimeout, actionIs("status-page", post.ID, "reply", "Reply, 0 replies", ""))

	reply := bob.reply(post.ID, "I have, last night")
	tabs := []struct {
		p    *tab
		list string
	}{{home, "feed"}, {page, "status-page"}}
	for _, tc := range tabs {
		tc.p.waitUntil("bob's reply counted", stepTimeout, actionIs(tc.list, post.ID, "reply", "Reply, 1 reply", ""))
	}
	home.waitUntil("bob's reply in carol's feed", stepTimeout, statusIn("feed", reply.Message))
	bob.deleteStatus(reply.ID)
	for _, tc := range tabs {
		tc.p.waitUntil("bob's deleted reply counted out", stepTimeout, actionIs(tc.list, post.ID, "reply", "Reply, 0 replies", ""))
	}
	home.waitUntil("bob's reply gone from carol's feed", stepTimeout,
		`document.querySelector(`+js(testID("feed", fmt.Sprintf(` [data-id="%d"]`, reply.ID)))+`) === null ? '' : 'still shown'`)
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
	p := br.signedInTab(t, in.srv.URL, "ada")
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

// countReads wraps the page's fetch so that each GET of a single status
// counts, by id, in window.statusReads (the counts read again).
func (p *tab) countReads() {
	p.tb.Helper()
	eval[bool](p, `(() => {
		window.statusReads = {};
		if (!window.countingReads) {
			window.countingReads = true;
			const fetch = window.fetch;
			window.fetch = (url, init) => {
				const m = /\/api\/v1\/statuses\/(\d+)$/.exec(String(url));
				if (m && (!init || !init.method || init.method === 'GET')) window.statusReads[m[1]] = (window.statusReads[m[1]] || 0) + 1;
				return fetch(url, init);
			};
		}
		return true;
	})()`)
}

// readsOf is how many times, since countReads, the page read the
// statuses ids.
func (p *tab) readsOf(ids []int64) int {
	p.tb.Helper()
	b, err := json.Marshal(ids)
	if err != nil {
		p.tb.Fatal(err)
	}
	return eval[int](p, `(`+string(b)+`).reduce((n, id) => n + (window.statusReads[id] || 0), 0)`)
}

// bob replies to many of ada's posts at once, first while her feed is
// kept off-screen (she is on a post's page), then while it is shown:
// the replies are counted by reading the posts again, but not the kept
// feed's, and not more than the page's budget of reads, however many
// posts the replies name. Each time ada's own reply, always read for,
// marks when the reads of the burst before it have all been sent.
func TestBrowserLiveRereadsBudgeted(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	marker := ada.post("The marker")
	const burst = 28 // with the marker, within the feed's first page of 30
	var ids []int64
	for i := range burst {
		ids = append(ids, ada.post(fmt.Sprintf("Note %02d", i)).ID)
	}

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("the marker in the feed", stepTimeout, statusIn("feed", marker.Message))
	p.waitUntil("the last note in the feed", stepTimeout, statusIn("feed", fmt.Sprintf("Note %02d", burst-1)))
	p.waitLive()
	p.countReads()

	p.goTo(fmt.Sprintf("/s/%d", marker.ID))
	p.waitUntil("the marker's page", stepTimeout, actionIs("status-page", marker.ID, "reply", "Reply, 0 replies", ""))
	for _, id := range ids {
		bob.reply(id, "Noted")
	}
	p.waitUntil("every reply told", stepTimeout, badgeIs(burst))
	p.click(actionSel("status-page", marker.ID, "reply"))
	box := testID("status-page", " .is-focus ")
	p.waitVisible(box + testID("reply-input"))
	p.typeInto(box+testID("reply-input"), "Marked")
	p.click(box + testID("reply-submit"))
	p.waitUntil("ada's reply counted", stepTimeout, actionIs("status-page", marker.ID, "reply", "Reply, 1 reply", ""))
	if got := p.readsOf(ids); got != 0 {
		t.Errorf("the page read the posts of the feed kept off-screen %d times, want none", got)
	}

	p.goTo("/")
	p.waitUntil("the marker in the feed again", stepTimeout, actionIs("feed", marker.ID, "reply", "Reply, 1 reply", ""))
	p.countReads()
	for _, id := range ids {
		bob.reply(id, "Noted again")
	}
	p.waitUntil("every reply told", stepTimeout, badgeIs(2*burst))
	parent := testID("feed", fmt.Sprintf(` > [data-id="%d"] `, marker.ID))
	p.click(parent + testID("reply-button"))
	p.waitVisible(parent + testID("reply-input"))
	p.typeInto(parent+testID("reply-input"), "Marked again")
	p.click(parent + testID("reply-submit"))
	p.waitUntil("ada's second reply counted", stepTimeout, actionIs("feed", marker.ID, "reply", "Reply, 2 replies", ""))
	// The budget is 10 reads a minute; the burst takes some seconds on a
	// busy machine, in which a few more come due.
	if got, most := p.readsOf(ids), 16; got > most {
		t.Errorf("the page read the %d posts replied to %d times, want at most %d", burst, got, most)
	}
}

// A like's notification frame brings its status's counts as read before
// the frame went, and ada's own liked: one read before her like, and
// before a like that came after it, comes last. Her post still counts
// both likes, and shows hers.
func TestBrowserLiveLikeFrameNeverLowers(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	post := ada.post("Counting engines")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo(fmt.Sprintf("/s/%d", post.ID))
	p.waitUntil("the post, nothing counted", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 0 likes", "false"))
	p.waitLive()

	bob.like(post.ID)
	p.waitUntil("bob's like counted", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 1 like", "false"))
	p.waitUntil("bob's like told", stepTimeout, badgeIs(1))
	p.click(actionSel("status-page", post.ID, "like"))
	p.waitUntil("ada's like counted", stepTimeout, actionIs("status-page", post.ID, "like", "Like, 2 likes", "true"))

	// The frame of a like read before ada's: one like, not hers.
	var got struct{ Status map[string]any }
	ada.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", post.ID), nil, &got)
	older := got.Status
	older["likes"], older["liked"] = 1, false
	frame, err := json.Marshal(map[string]any{"type": "notification", "notification": map[string]any{
		"id": 1000000, "type": "liked", "status": older, "created": "2026-01-01T00:00:00Z",
		"from": map[string]any{"id": bob.id, "login": "bob", "name": "Bob Babbage"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	in.publish(t, in.social.UserChannel(ada.id), string(frame))
	p.waitUntil("the older frame told", stepTimeout, badgeIs(2))
	if got := eval[string](p, actionIs("status-page", post.ID, "like", "Like, 2 likes", "true")); got != "" {
		t.Errorf("after a like's frame read before ada's like: %s, want Like, 2 likes / pressed=true", got)
	}
}

// A thread open in ada's tab follows replies that reach her by no other
// frame (erin, whom she does not follow, answers carol): each takes its
// place under the post it answers and leaves when deleted; one of her own
// from another device shows once.
func TestBrowserLiveThreadReplies(t *testing.T) {
	t.Parallel()
	th := openThread(t, "ada")
	p := th.p
	p.waitLive()
	p.waitVisible(`[data-testid="status-page"][data-live="true"]`)
	erin := th.in.signUpAs(t, "erin", "Erin Ada")
	fromErin := erin.reply(th.fromCarol.ID, "I will")
	p.waitUntil("erin's reply under carol's, after bob's", stepTimeout, threadAuthors("ada bob carol bob erin"))
	erin.deleteStatus(fromErin.ID)
	p.waitUntil("erin's reply gone", stepTimeout, threadAuthors("ada bob carol bob"))
	th.ada.reply(th.fromBob.ID, "Then I shall")
	p.waitUntil("ada's own reply once, under bob's", stepTimeout, threadAuthors("ada bob ada carol bob"))
	erin.reply(th.fromBob.ID, "And I")
	p.waitUntil("erin's next reply after ada's", stepTimeout, threadAuthors("ada bob ada erin carol bob"))
}

// socketTap makes the tab's next page record its WebSockets in
// window.tapped, and drop each message whose text holds window.tapDrop
// while that is set: frames the page never gets, as over a gap.
func socketTap(p *tab) {
	p.tb.Helper()
	const source = `(() => {
		const Native = window.WebSocket;
		window.tapped = [];
		window.tapDrop = '';
		window.WebSocket = class extends Native {
			constructor(...args) {
				super(...args);
				window.tapped.push(this);
			}
			get onmessage() { return super.onmessage; }
			set onmessage(f) {
				super.onmessage = f && ((ev) => {
					if (window.tapDrop && String(ev.data).includes(window.tapDrop)) return;
					f.call(this, ev);
				});
			}
		};
	})()`
	p.do("tap the sockets", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: source})
		return err
	}))
}

// A reply deleted while the page's watch was down (its frame never came)
// leaves at the next watching frame's reading of the thread, which finds
// it no more among its parent's replies; the rest stays.
func TestBrowserLiveThreadDeletedUnheard(t *testing.T) {
	t.Parallel()
	th := openThread(t, "ada")
	p := th.p
	socketTap(p)
	p.open(fmt.Sprintf("/s/%d", th.root.ID))
	p.waitLive()
	p.waitVisible(`[data-testid="status-page"][data-live="true"]`)
	erin := th.in.signUpAs(t, "erin", "Erin Ada")
	fromErin := erin.reply(th.fromCarol.ID, "I will")
	p.waitUntil("erin's reply under carol's", stepTimeout, threadAuthors("ada bob carol bob erin"))

	eval[string](p, `window.tapDrop = 'thread_status_deleted'`)
	erin.deleteStatus(fromErin.ID)
	// A reply after the deletion comes after its frame, dropped: the
	// deleted one is still shown.
	erin.reply(th.fromBob.ID, "And I")
	p.waitUntil("erin's next reply, the deleted one kept", stepTimeout, threadAuthors("ada bob erin carol bob erin"))

	eval[string](p, `window.tapDrop = ''`)
	eval[bool](p, `(window.tapped.forEach((ws) => ws.close()), true)`)
	p.waitUntil("the deleted reply gone after the stream came back", stepTimeout, threadAuthors("ada bob erin carol bob"))
}
