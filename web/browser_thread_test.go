package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"chorus/social"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// A status's page follows its thread live (thread_status,
// thread_status_deleted): what a reader meets opening a reply's page,
// moving between pages, deleting, hiding people and replying. See also
// TestBrowserLiveThreadReplies and TestBrowserLiveThreadDeletedUnheard.

// talk is openThread's thread (ada's post, answered by bob and carol, and
// carol's answer by bob) with its people signed in through the API, the id
// of bob's answer to carol, and erin, whom nobody follows, to answer.
type talk struct {
	thread
	bob, carol, erin *client
	toCarol          int64
}

// openTalk writes the talk and opens ada's tab on her post's page, as
// openThread does.
func openTalk(t *testing.T) *talk {
	t.Helper()
	w := &talk{thread: openThread(t, "ada")}
	w.bob, w.carol = w.in.signIn(t, "bob"), w.in.signIn(t, "carol")
	w.erin = w.in.signUpAs(t, "erin", "Erin Noether")
	id, err := strconv.ParseInt(w.p.statusID("status-page", "Nor carol"), 10, 64)
	if err != nil {
		t.Fatalf("bob's answer to carol: %v", err)
	}
	w.toCarol = id
	return w
}

// threadIs is a check that the thread on a status's page shows, in order,
// posts by the logins of want, as threadAuthors, each with ":depth" when
// indented, "^" on a post the status answers and "*" on the status
// itself: "ada^ carol* bob:1".
func threadIs(want string) string {
	return `(() => {
		const got = [...document.querySelectorAll('[data-testid="status-page"] > [data-testid="status"]')].map((li) => {
			const depth = Number(li.dataset.depth || 0);
			const mark = li.classList.contains('is-ancestor') ? '^' : li.classList.contains('is-focus') ? '*' : '';
			return li.dataset.author + (depth ? ':' + depth : '') + mark;
		}).join(' ');
		return got === ` + js(want) + ` ? '' : 'thread: ' + got;
	})()`
}

// pageLive is a check that the status page's watch of its thread was
// answered, and the thread read again: the page is live.
const pageLive = `document.querySelector('[data-testid="status-page"][data-live="true"]') ? '' : 'not live'`

// waitThreadLive waits for p's status page to show the thread want
// (threadIs), live.
func waitThreadLive(p *tab, want string) {
	p.tb.Helper()
	p.waitUntil("the thread", stepTimeout, threadIs(want))
	p.waitUntil("the page live", stepTimeout, pageLive)
}

// openLive moves p to status id's page by a link and waits for it to show
// the thread want, live.
func openLive(p *tab, id int64, want string) {
	p.tb.Helper()
	p.goTo(fmt.Sprintf("/s/%d", id))
	waitThreadLive(p, want)
}

// repliesCounted is a check that the Reply button of status id on its
// thread's page counts n replies.
func repliesCounted(id int64, n int) string {
	word := "replies"
	if n == 1 {
		word = "reply"
	}
	return actionIs("status-page", id, "reply", fmt.Sprintf("Reply, %d %s", n, word), "")
}

// openTalkTapped is openTalk with ada's tab's frames recorded (tapFrames),
// her post's page opened again and live.
func openTalkTapped(t *testing.T) *talk {
	t.Helper()
	w := openTalk(t)
	tapFrames(w.p)
	w.p.open(fmt.Sprintf("/s/%d", w.root.ID))
	waitThreadLive(w.p, "ada* bob:1 carol:1 bob:2")
	return w
}

// tapFrames is socketTap, and the tab's next pages also keep every frame
// their sockets bring (window.heard) and send (window.sent), parsed.
func tapFrames(p *tab) {
	p.tb.Helper()
	socketTap(p)
	const source = `(() => {
		const Tapped = window.WebSocket;
		window.heard = [];
		window.sent = [];
		window.WebSocket = class extends Tapped {
			constructor(...args) {
				super(...args);
				this.addEventListener('message', (ev) => window.heard.push(JSON.parse(ev.data)));
			}
			send(data) {
				super.send(data);
				window.sent.push(JSON.parse(data));
			}
		};
	})()`
	p.do("record the frames", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: source})
		return err
	}))
}

// heard is a check that the tab's sockets (tapFrames) brought a frame of
// each of types about id: the status it carries (a notification's too),
// the user it names, or the id it names.
func heard(id int64, types ...string) string {
	list, _ := json.Marshal(types)
	return fmt.Sprintf(`(() => {
		const about = (f) => [f.status?.id, f.notification?.status?.id, f.user?.id, f.id].includes(%d);
		const missing = %s.filter((type) => !window.heard.some((f) => f.type === type && about(f)));
		return missing.length ? 'nothing heard of %d as ' + missing.join(', ') : '';
	})()`, id, list, id)
}

// watchesSent is a check that the tab's pages asked their stream
// (tapFrames) to watch and unwatch threads as want says, in order: "watch
// 1, unwatch 1, watch 5".
func watchesSent(want string) string {
	return `(() => {
		const got = window.sent.filter((f) => f.timeline === 'thread').map((f) => f.type + ' ' + f.thread).join(', ');
		return got === ` + js(want) + ` ? '' : 'sent: ' + got;
	})()`
}

// answersDeleted is a check that the post sel on the page says it answers
// a deleted post.
func answersDeleted(sel string) string {
	return `(() => {
		const line = document.querySelector(` + js(sel+` [data-testid="status-reply"]`) + `);
		return line && line.textContent.includes('a deleted post') ? '' : 'it says ' + (line ? line.textContent : 'nothing');
	})()`
}

// On carol's reply's page, erin's replies anywhere below it come in place
// as they are posted; those to the post it answers (ada's, shown above
// it) or to bob's reply beside it do not show, though ada's post counts
// hers, and counts it out when she deletes it.
func TestBrowserThreadReplyPage(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	p, erin := w.p, w.erin
	openLive(p, w.fromCarol.ID, "ada^ carol* bob:1")
	p.waitUntil("ada's post counts two replies", stepTimeout, repliesCounted(w.root.ID, 2))

	toAda := erin.reply(w.root.ID, "To ada")
	toBob := erin.reply(w.fromBob.ID, "To bob")
	erin.reply(w.toCarol, "To bob's answer")
	erin.reply(w.fromCarol.ID, "To carol")
	// The last two come after the first two, on the same channel.
	p.waitUntil("the replies below carol's in place, and no other", stepTimeout, threadIs("ada^ carol* bob:1 erin:2 erin:1"))
	p.waitUntil("ada's post counts erin's reply", stepTimeout, repliesCounted(w.root.ID, 3))

	erin.reply(toBob.ID, "To bob again")
	erin.deleteStatus(toAda.ID)
	p.waitUntil("ada's post counts erin's reply out", stepTimeout, repliesCounted(w.root.ID, 2))
	erin.reply(w.toCarol, "To bob's answer again")
	p.waitUntil("the last reply, after erin's first to bob's answer, and no other", stepTimeout,
		threadIs("ada^ carol* bob:1 erin:2 erin:2 erin:1"))

	// Fed by the stream, the page does not read the thread again as a
	// visitor's does, even shown anew.
	reads := `performance.getEntriesByType('resource').filter((e) => e.name.includes('/context')).length`
	before := eval[int](p, reads)
	eval[bool](p, `(document.dispatchEvent(new Event('visibilitychange')), true)`)
	erin.reply(w.fromCarol.ID, "To carol again")
	p.waitUntil("the reply live", stepTimeout, threadIs("ada^ carol* bob:1 erin:2 erin:2 erin:1 erin:1"))
	if after := eval[int](p, reads); after != before {
		t.Errorf("the live page read its thread %d times more, want none", after-before)
	}
}

// On ada's post's page, erin's reply to carol's comes under it and bob's
// to erin's under that, each counted on what it answers. After the stream
// drops a while, a reply posted and one deleted meanwhile are in and out,
// and counted so. erin deletes hers: bob's answer to it goes with it, as
// a reload leaves it out, and carol's reply counts it out.
func TestBrowserThreadRepliesNestAndCount(t *testing.T) {
	t.Parallel()
	w := openTalkTapped(t)
	p := w.p

	fromErin := w.erin.reply(w.fromCarol.ID, "I will")
	p.waitUntil("erin's reply under carol's, after bob's", stepTimeout, threadIs("ada* bob:1 carol:1 bob:2 erin:2"))
	p.waitUntil("carol's reply counts two", stepTimeout, repliesCounted(w.fromCarol.ID, 2))
	toErin := w.bob.reply(fromErin.ID, "Will you?")
	p.waitUntil("bob's reply under erin's", stepTimeout, threadIs("ada* bob:1 carol:1 bob:2 erin:2 bob:3"))
	p.waitUntil("erin's reply counts one", stepTimeout, repliesCounted(fromErin.ID, 1))

	// The stream drops: the thread's frames never reach the page from
	// now on, and its sockets close, to be opened anew.
	eval[string](p, `window.tapDrop = 'thread_status'`)
	w.erin.reply(w.fromBob.ID, "While down")
	w.bob.deleteStatus(w.toCarol)
	eval[bool](p, `(window.tapped.forEach((ws) => ws.close()), true)`)
	p.waitUntil("once the stream is back, the reply posted meanwhile in, the one deleted out", stepTimeout,
		threadIs("ada* bob:1 erin:2 carol:1 erin:2 bob:3"))
	p.waitUntil("bob's reply counts erin's", stepTimeout, repliesCounted(w.fromBob.ID, 1))
	p.waitUntil("carol's reply counts bob's out", stepTimeout, repliesCounted(w.fromCarol.ID, 1))

	eval[string](p, `window.tapDrop = ''`)
	w.erin.deleteStatus(fromErin.ID)
	p.waitUntil("erin's reply gone, bob's answer to it too", stepTimeout, threadIs("ada* bob:1 erin:2 carol:1"))
	p.waitUntil("carol's reply counts none", stepTimeout, repliesCounted(w.fromCarol.ID, 0))
	p.open(fmt.Sprintf("/s/%d", w.root.ID))
	waitThreadLive(p, "ada* bob:1 erin:2 carol:1")
	// bob's answer, on its own page, says what it answered is gone.
	openLive(p, toErin.ID, "ada^ carol^ bob*")
	p.waitUntil("bob's answer says what it answers is gone", stepTimeout, answersDeleted(testID("status-page", " .is-focus")))
}

// carol deletes her reply while the stream of ada's page is down, and the
// deletion's frame never comes: once the stream is back, the page's
// reading of the thread finds carol's reply gone from ada's post's
// replies, and it leaves with bob's answer to it, as a reload shows.
func TestBrowserThreadDeletedUnheardTakesItsReplies(t *testing.T) {
	t.Parallel()
	w := openTalkTapped(t)
	p := w.p
	eval[string](p, `window.tapDrop = 'thread_status'`)
	w.carol.deleteStatus(w.fromCarol.ID)
	eval[bool](p, `(window.tapped.forEach((ws) => ws.close()), true)`)
	p.waitUntil("carol's reply and bob's answer to it gone once the stream is back", stepTimeout, threadIs("ada* bob:1"))
	p.waitUntil("ada's post counts one reply", stepTimeout, repliesCounted(w.root.ID, 1))
	eval[string](p, `window.tapDrop = ''`)
	p.open(fmt.Sprintf("/s/%d", w.root.ID))
	waitThreadLive(p, "ada* bob:1")
}

// On erin's reply's page, bob deletes the post it answers: that leaves
// the posts above, and erin's says it answers a deleted post; the page
// follows the thread still. erin deletes hers: the page says so.
func TestBrowserThreadPostDeleted(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	p := w.p
	fromErin := w.erin.reply(w.toCarol, "I will")
	openLive(p, fromErin.ID, "ada^ carol^ bob^ erin*")

	w.bob.deleteStatus(w.toCarol)
	p.waitUntil("bob's post gone from above", stepTimeout, threadIs("ada^ carol^ erin*"))
	p.waitUntil("erin's says what it answers is gone", stepTimeout, answersDeleted(testID("status-page", " .is-focus")))
	w.carol.reply(fromErin.ID, "Will you?")
	p.waitUntil("carol's reply to erin's", stepTimeout, threadIs("ada^ carol^ erin* carol:1"))

	w.erin.deleteStatus(fromErin.ID)
	p.waitUntil("the page says the post was deleted", stepTimeout,
		`(document.querySelector('[data-testid="status-gone"]')?.textContent ?? 'nothing') === 'This post was deleted.' ? '' : 'not said'`)
}

// ada leaves her post's page for Home, then for another thread's page,
// and comes back by the browser's Back button: each page gives up its
// thread's watch as she leaves, follows its own thread live, and the page
// come back to shows the replies posted while she was away.
func TestBrowserThreadFollowsNavigation(t *testing.T) {
	t.Parallel()
	w := openTalkTapped(t)
	p := w.p
	other := w.bob.post("Who will build it?")

	p.goTo("/")
	watches := fmt.Sprintf("watch %d, unwatch %d", w.root.ID, w.root.ID)
	p.waitUntil("the thread's watch given up", stepTimeout, watchesSent(watches))
	w.erin.reply(w.fromCarol.ID, "While away")
	openLive(p, other.ID, "bob*")
	watches += fmt.Sprintf(", watch %d", other.ID)
	w.erin.reply(w.fromBob.ID, "While away too")
	w.erin.reply(other.ID, "I shall")
	p.waitUntil("erin's reply to the other thread", stepTimeout, threadIs("bob* erin:1"))

	p.do("back", chromedp.NavigateBack())
	watches += fmt.Sprintf(", unwatch %d", other.ID)
	p.waitUntil("the other thread's watch given up", stepTimeout, watchesSent(watches))
	p.do("back", chromedp.NavigateBack())
	waitThreadLive(p, "ada* bob:1 erin:2 carol:1 bob:2 erin:2")
	watches += fmt.Sprintf(", watch %d", w.root.ID)
	p.waitUntil("the thread watched again, and nothing else", stepTimeout, watchesSent(watches))
	w.erin.reply(w.root.ID, "Back again")
	p.waitUntil("a reply live", stepTimeout, threadIs("ada* bob:1 erin:2 carol:1 bob:2 erin:2 erin:1"))
}

// ada goes from her post's page to carol's reply's (by its time link) and
// back, twice: both pages watch the one thread, the page left giving up
// its watch before the next asks for it, never after, and each follows
// replies live.
func TestBrowserThreadWatchKeptWithinThread(t *testing.T) {
	t.Parallel()
	w := openTalkTapped(t)
	p := w.p
	watches := fmt.Sprintf("watch %d", w.root.ID)
	passed := fmt.Sprintf(", unwatch %d, watch %d", w.root.ID, w.root.ID)
	for round := range 2 {
		p.click(testID("status-page", fmt.Sprintf(` > [data-id="%d"] a.status-time`, w.fromCarol.ID)))
		p.waitUntil("carol's reply's page", stepTimeout, `location.pathname === '/s/`+fmt.Sprint(w.fromCarol.ID)+`' ? '' : location.pathname`)
		watches += passed
		p.waitUntil("the watch passed on", stepTimeout, watchesSent(watches))
		p.waitUntil("carol's reply's page live", stepTimeout, pageLive)
		msg := fmt.Sprintf("To carol, %d", round)
		w.erin.reply(w.fromCarol.ID, msg)
		p.waitUntil("erin's reply on carol's page", stepTimeout, statusIn("status-page", msg))

		p.do("back", chromedp.NavigateBack())
		p.waitUntil("ada's post's page", stepTimeout, `location.pathname === '/s/`+fmt.Sprint(w.root.ID)+`' ? '' : location.pathname`)
		watches += passed
		p.waitUntil("the watch passed back", stepTimeout, watchesSent(watches))
		p.waitUntil("ada's post's page live", stepTimeout, pageLive)
		msg = fmt.Sprintf("To bob, %d", round)
		w.erin.reply(w.fromBob.ID, msg)
		p.waitUntil("erin's reply on ada's page", stepTimeout, statusIn("status-page", msg))
	}
}

// Replies by those ada blocks or mutes, or who block her, do not come to
// her thread's page (a reply of bob's after theirs does); hal's leave it
// as she blocks him on another device, and his next does not come.
// erin's and frank's come again once she unblocks and unmutes them there.
func TestBrowserThreadHiddenRepliesStayOut(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	p, ada, bob, erin := w.p, w.ada, w.bob, w.erin
	frank := w.in.signUpAs(t, "frank", "Frank Frank")
	gus := w.in.signUpAs(t, "gus", "Gus Gus")
	hal := w.in.signUpAs(t, "hal", "Hal Hal")
	ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/erin", nil, nil)
	ada.must(http.StatusNoContent, "PUT", "/api/v1/mutes/frank", nil, nil)
	gus.must(http.StatusNoContent, "PUT", "/api/v1/blocks/ada", nil, nil)
	// A new stream, which reads whom it hides as it opens.
	tapFrames(p)
	p.open(fmt.Sprintf("/s/%d", w.fromCarol.ID))
	waitThreadLive(p, "ada^ carol* bob:1")

	erin.reply(w.fromCarol.ID, "Blocked")
	frank.reply(w.fromCarol.ID, "Muted")
	gus.reply(w.toCarol, "Blocking")
	bob.reply(w.fromCarol.ID, "Not hidden")
	p.waitUntil("bob's reply, and no other", stepTimeout, threadIs("ada^ carol* bob:1 bob:1"))

	hal.reply(w.fromCarol.ID, "Not blocked yet")
	p.waitUntil("hal's reply", stepTimeout, threadIs("ada^ carol* bob:1 bob:1 hal:1"))
	ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/hal", nil, nil)
	p.waitUntil("hal's reply gone with the block", stepTimeout, threadIs("ada^ carol* bob:1 bob:1"))
	hal.reply(w.fromCarol.ID, "Blocked now")
	bob.reply(w.fromCarol.ID, "Not hidden either")
	p.waitUntil("bob's reply, and no other", stepTimeout, threadIs("ada^ carol* bob:1 bob:1 bob:1"))

	ada.must(http.StatusNoContent, "DELETE", "/api/v1/blocks/erin", nil, nil)
	ada.must(http.StatusNoContent, "DELETE", "/api/v1/mutes/frank", nil, nil)
	// Each relation frame comes once the stream has read whom it hides.
	p.waitUntil("told of the unblock", stepTimeout, heard(erin.id, "relation"))
	p.waitUntil("told of the unmute", stepTimeout, heard(frank.id, "relation"))
	erin.reply(w.fromCarol.ID, "Unblocked")
	frank.reply(w.fromCarol.ID, "Unmuted")
	p.waitUntil("erin's and frank's replies", stepTimeout, threadIs("ada^ carol* bob:1 bob:1 bob:1 erin:1 frank:1"))
}

// A reply told in several frames shows once and counts once: ada's own
// from the page (its answer, her status frame, the thread's), in both her
// tabs on the thread, and that of bob, whom she follows, to her post (his
// status, her notification, the thread's). bob's tab on carol's reply's
// page shows hers, and loses it, counted out, as she deletes it there.
func TestBrowserThreadReplyShownOnce(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	p := w.p
	w.ada.follow("bob")
	tapFrames(p)
	p.open(fmt.Sprintf("/s/%d", w.root.ID))
	other := w.br.newTab(t, "ada-2", w.in.srv.URL)
	tapFrames(other)
	other.signInUI("ada", "password-ada")
	openLive(other, w.root.ID, "ada* bob:1 carol:1 bob:2")
	pb := w.br.newTab(t, "bob", w.in.srv.URL)
	tapFrames(pb)
	pb.signInUI("bob", "password-bob")
	openLive(pb, w.fromCarol.ID, "ada^ carol* bob:1")
	waitThreadLive(p, "ada* bob:1 carol:1 bob:2")

	parent := testID("status-page", fmt.Sprintf(` > [data-id="%d"] `, w.fromCarol.ID))
	p.click(parent + testID("reply-button"))
	p.waitVisible(parent + testID("reply-input"))
	p.typeInto(parent+testID("reply-input"), "Then I shall")
	p.click(parent + testID("reply-submit"))
	p.waitUntil("ada's reply under carol's", stepTimeout, threadIs("ada* bob:1 carol:1 bob:2 ada:2"))
	mine, err := strconv.ParseInt(p.statusID("status-page", "Then I shall"), 10, 64)
	if err != nil {
		t.Fatalf("ada's reply: %v", err)
	}
	fromBob := w.bob.reply(w.root.ID, "And I")

	const want = "ada* bob:1 carol:1 bob:2 ada:2 bob:1"
	for _, tab := range []*tab{p, other} {
		tab.waitUntil("both replies", stepTimeout, threadIs(want))
		tab.waitUntil("carol's reply counts two", stepTimeout, repliesCounted(w.fromCarol.ID, 2))
		tab.waitUntil("ada's post counts three", stepTimeout, repliesCounted(w.root.ID, 3))
		tab.waitUntil("every frame of ada's reply", stepTimeout, heard(mine, "status", "thread_status"))
		tab.waitUntil("every frame of bob's", stepTimeout, heard(fromBob.ID, "status", "notification", "thread_status"))
		if got := eval[string](tab, threadIs(want)); got != "" {
			t.Errorf("%s, all frames in: %s", tab.name, got)
		}
	}
	pb.waitUntil("ada's reply on bob's page", stepTimeout, threadIs("ada^ carol* bob:1 ada:1"))
	pb.waitUntil("carol's reply counts two for bob", stepTimeout, repliesCounted(w.fromCarol.ID, 2))

	p.deleteUI("status-page", strconv.FormatInt(mine, 10))
	p.waitUntil("ada's reply gone", stepTimeout, threadIs("ada* bob:1 carol:1 bob:2 bob:1"))
	other.waitUntil("ada's reply gone from her other tab", stepTimeout, threadIs("ada* bob:1 carol:1 bob:2 bob:1"))
	pb.waitUntil("ada's reply gone from bob's tab", stepTimeout, threadIs("ada^ carol* bob:1"))
	for _, tab := range []*tab{other, pb} {
		tab.waitUntil("carol's reply counts it out", stepTimeout, repliesCounted(w.fromCarol.ID, 1))
	}
}

// A conversation more than 50 levels deep, read on a phone: the page of a
// reply past the 50th level follows the replies to it, and the page of
// one above the 50th level those more than 50 levels deep under it; the
// replies fit the screen however deep.
func TestBrowserThreadDeep(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	erin := in.signUpAs(t, "erin", "Erin Noether")
	chain := []statusJSON{bob.post("Level 0")}
	for i := 1; i <= 51; i++ {
		chain = append(chain, bob.reply(chain[i-1].ID, fmt.Sprintf("Level %d", i)))
	}
	p := newBrowser(t).newTab(t, "ada", in.srv.URL)
	p.viewport(360, 740, true)
	p.signInUI("ada", "password-ada")

	p.goTo(fmt.Sprintf("/s/%d", chain[51].ID))
	p.waitUntil("level 51's page", stepTimeout, statusIn("status-page", "Level 51"))
	p.waitUntil("the page live", stepTimeout, pageLive)
	erin.reply(chain[51].ID, "At level 52")
	p.waitUntil("erin's reply to level 51 on its page", stepTimeout, statusIn("status-page", "At level 52"))

	p.goTo(fmt.Sprintf("/s/%d", chain[45].ID))
	p.waitUntil("level 51 shown below level 45", stepTimeout, statusIn("status-page", "Level 51"))
	p.waitUntil("the page live", stepTimeout, pageLive)
	erin.reply(chain[51].ID, "At level 52, again")
	p.waitUntil("erin's reply to level 51 on level 45's page", stepTimeout, statusIn("status-page", "At level 52, again"))
	p.keep("deep-phone")
	p.waitUntil("the replies fit", stepTimeout, fitsCheck)
}

// A visitor reads carol's reply's page, and signs in from the header
// there: back on the page, it shows the reply posted meanwhile, and
// follows the thread live. Signing out from it shows the sign-in form.
func TestBrowserThreadVisitorSignsIn(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	v := w.br.newTab(t, "visitor", w.in.srv.URL)
	v.open(fmt.Sprintf("/s/%d", w.fromCarol.ID))
	v.waitUntil("the thread for a visitor", stepTimeout, threadIs("ada^ carol* bob:1"))
	w.erin.reply(w.fromCarol.ID, "While a visitor")

	v.click(testID("signin-link"))
	form := testID("signin-form")
	v.waitVisible(form)
	v.typeInto(form+` input[name="login"]`, "ada")
	v.typeInto(form+` input[name="password"]`, "password-ada")
	v.click(form + ` button[type="submit"]`)
	waitThreadLive(v, "ada^ carol* bob:1 erin:1")
	w.erin.reply(w.toCarol, "Signed in now")
	v.waitUntil("a reply live", stepTimeout, threadIs("ada^ carol* bob:1 erin:2 erin:1"))
	v.click(testID("signout"))
	v.waitVisible(testID("signin-form"))
}

// A repost's own address (/s/{entry}), opened, shows its original's
// thread at the original's address, and follows it live.
func TestBrowserThreadRepostAddress(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	p := w.p
	w.bob.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/repost", w.fromCarol.ID), nil, nil)
	entry, err := w.in.social.LastStatusID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.open(fmt.Sprintf("/s/%d", entry))
	p.waitUntil("at the original's address", stepTimeout, `location.pathname === '/s/`+fmt.Sprint(w.fromCarol.ID)+`' ? '' : location.pathname`)
	waitThreadLive(p, "ada^ carol* bob:1")
	w.erin.reply(w.fromCarol.ID, "I will")
	p.waitUntil("a reply live", stepTimeout, threadIs("ada^ carol* bob:1 erin:1"))
}

// WebSockets blocked, the stream comes as Server-Sent Events and the page
// asks for its thread's watch by POST: it follows its thread all the
// same, and the page of another thread, opened next, follows that one.
func TestBrowserThreadOverEvents(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	other := w.bob.post("Who will build it?")
	blocker := newWSBlocker(t, w.in.srv.URL, refuseWebSockets)
	p := w.br.newTab(t, "ada-events", blocker.srv.URL)
	p.signInUI("ada", "password-ada")
	p.waitLive()
	openLive(p, w.fromCarol.ID, "ada^ carol* bob:1")
	w.erin.reply(w.fromCarol.ID, "I will")
	p.waitUntil("a reply live", stepTimeout, threadIs("ada^ carol* bob:1 erin:1"))
	openLive(p, other.ID, "bob*")
	w.erin.reply(other.ID, "I shall")
	p.waitUntil("a reply to the other thread live", stepTimeout, threadIs("bob* erin:1"))
}

// A visitor's thread page has no stream to tell it: it reads the thread
// again every 15 s while shown, and at once when the tab is shown again.
// What was posted and deleted meanwhile comes in and goes, counted, and
// the status's deletion is said in its place.
func TestBrowserThreadVisitorReadsAgain(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	v := w.br.newTab(t, "visitor", w.in.srv.URL)
	v.open(fmt.Sprintf("/s/%d", w.root.ID))
	v.waitUntil("the thread for a visitor", stepTimeout, threadIs("ada* bob:1 carol:1 bob:2"))

	fromErin := w.erin.reply(w.fromCarol.ID, "I will")
	w.bob.deleteStatus(w.toCarol)
	shown := `(document.dispatchEvent(new Event('visibilitychange')), true)`
	eval[bool](v, shown)
	v.waitUntil("erin's reply in, bob's answer to carol out", stepTimeout, threadIs("ada* bob:1 carol:1 erin:2"))
	v.waitUntil("carol's reply counts erin's alone", stepTimeout, repliesCounted(w.fromCarol.ID, 1))

	// Left alone, the page reads the thread again within 15 s: a few
	// intervals, for a slow machine.
	w.bob.reply(fromErin.ID, "Will you?")
	v.waitUntil("bob's answer to erin in, unasked", 4*15*time.Second, threadIs("ada* bob:1 carol:1 erin:2 bob:3"))
	if eval[bool](v, pageLive+` === ''`) {
		t.Error("a visitor's page says it is fed by the stream")
	}

	w.ada.deleteStatus(w.root.ID)
	eval[bool](v, shown)
	v.waitUntil("the page says the post was deleted", stepTimeout,
		`(document.querySelector('[data-testid="status-gone"]')?.textContent ?? 'nothing') === 'This post was deleted.' ? '' : 'not said'`)
}

// A thread's page links to a post's own page for its replies where the
// context left some unread (more than 50 under a reply), and nowhere
// else: a reply by someone ada mutes, counted on her post but never shown
// to her, makes no link to replies no page would show her.
func TestBrowserThreadMoreRepliesWhereCut(t *testing.T) {
	t.Parallel()
	w := openTalk(t)
	p := w.p
	w.ada.must(http.StatusNoContent, "PUT", "/api/v1/mutes/erin", nil, nil)
	w.erin.reply(w.root.ID, "Muted, and counted")
	for i := range 51 {
		w.carol.reply(w.fromBob.ID, fmt.Sprintf("To bob, %d", i))
	}
	p.open(fmt.Sprintf("/s/%d", w.root.ID))
	p.waitUntil("the thread read", stepTimeout, `document.querySelectorAll('[data-testid="status-page"] > [data-testid="status"]').length === 54 ? '' : 'not yet'`)
	links := `[...document.querySelectorAll('[data-testid="thread-more"]')].map((li) => li.textContent + ' ' + li.querySelector('a').getAttribute('href')).join('; ')`
	if got, want := eval[string](p, links), fmt.Sprintf("1 more reply to bob /s/%d", w.fromBob.ID); got != want {
		t.Errorf("the links to more replies: %q, want %q", got, want)
	}
}
