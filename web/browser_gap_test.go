package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"chorus/social"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// What changes while a tab's stream is down, and which no resume replays
// (a deletion, a like or a follow made on another device), shows once the
// stream is back: the page reads again the first page of each timeline it
// shows, and what it shows besides (a profile's counts and follow).

// offlineTap has the tab's next pages open their streams, WebSocket or
// events, through a tap that goOffline closes and keeps shut (new ones
// dial a path that refuses) until goOnline.
func offlineTap(p *tab) {
	p.tb.Helper()
	const source = `(() => {
		const NativeWS = window.WebSocket;
		const NativeES = window.EventSource;
		window.tapped = [];
		window.tapOffline = false;
		const refuse = (url) => window.tapOffline ? String(url).replace('/api/v1/stream', '/api/v1/offline') : url;
		window.WebSocket = class extends NativeWS {
			constructor(url, ...rest) {
				super(refuse(url), ...rest);
				window.tapped.push(this);
			}
		};
		window.EventSource = class extends NativeES {
			constructor(url, ...rest) {
				super(refuse(url), ...rest);
				window.tapped.push(this);
			}
		};
	})()`
	p.do("tap the streams", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: source})
		return err
	}))
}

// goOffline closes the tab's streams and keeps new ones from opening.
func goOffline(p *tab) {
	p.tb.Helper()
	eval[bool](p, `(window.tapOffline = true, window.tapped.forEach((s) => s.close()), true)`)
	p.waitUntil("the stream down", stepTimeout, `document.querySelector('[data-testid="conn-state"]')?.dataset.state !== 'live' ? '' : 'still live'`)
}

// goOnline lets the tab's stream open again and waits for it (the
// backoff may have grown while it was refused).
func goOnline(p *tab) {
	p.tb.Helper()
	eval[bool](p, `(window.tapOffline = false, true)`)
	p.waitUntil("the stream back", 3*stepTimeout, `document.querySelector('[data-testid="conn-state"]')?.dataset.state === 'live' ? '' : 'conn-state ' + document.querySelector('[data-testid="conn-state"]')?.dataset.state`)
}

// goneFrom is a check that list shows no status whose message is message.
func goneFrom(list, message string) string {
	return `(() => {
		const all = [...document.querySelectorAll(` + js(testID(list, ` [data-testid="status-message"]`)) + `)].map((m) => m.textContent);
		return all.includes(` + js(message) + `) ? 'still shown: ' + JSON.stringify(all) : '';
	})()`
}

// postsCounted is a check that the profile shown counts n posts.
func postsCounted(n int) string {
	return fmt.Sprintf(`(() => {
		const got = document.querySelector('[data-testid="count-posts"]')?.textContent ?? '';
		return got.includes('%d post') ? '' : 'counts ' + got;
	})()`, n)
}

// gapTab is ada, following bob, on Home, which shows bob's post doomed;
// her tab's streams are tapped (offlineTap).
func gapTab(t *testing.T) (in *instance, bob *client, p *tab, doomed statusJSON) {
	t.Helper()
	in = newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob = in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")
	bob.post("Stays")
	doomed = bob.post("Soon deleted")
	p = newBrowser(t).newTab(t, "ada", in.srv.URL)
	offlineTap(p)
	p.signInUI("ada", "password-ada")
	p.waitLive()
	p.waitUntil("bob's post on Home", stepTimeout, statusIn("feed", doomed.Message))
	return in, bob, p, doomed
}

// bob deletes a post and writes another while ada's stream is down: once
// it is back, her Home shows the new one and not the deleted one. A first
// connection reads nothing again: the page read its feed once.
func TestBrowserGapHomeDeletion(t *testing.T) {
	t.Parallel()
	_, bob, p, doomed := gapTab(t)
	reads := `performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/timelines/home')).length`
	if n := eval[int](p, reads); n != 1 {
		t.Errorf("the page read its home timeline %d times before any break, want once", n)
	}
	goOffline(p)
	bob.deleteStatus(doomed.ID)
	bob.post("Posted while ada was offline")
	goOnline(p)
	p.waitUntil("the post made meanwhile on Home", stepTimeout, statusIn("feed", "Posted while ada was offline"))
	p.waitUntil("the post deleted meanwhile gone from Home", stepTimeout, goneFrom("feed", doomed.Message))
	p.waitUntil("the older post kept", stepTimeout, statusIn("feed", "Stays"))
}

// The same on the global page, and on bob's profile, whose posts count
// counts the new post and not the deleted one.
func TestBrowserGapGlobalAndProfileDeletion(t *testing.T) {
	t.Parallel()
	_, bob, p, doomed := gapTab(t)
	p.goTo("/global")
	p.waitUntil("bob's post on Global", stepTimeout, statusIn("timeline", doomed.Message))
	goOffline(p)
	bob.deleteStatus(doomed.ID)
	bob.post("Posted while ada was offline")
	goOnline(p)
	p.waitUntil("the post made meanwhile on Global", stepTimeout, statusIn("timeline", "Posted while ada was offline"))
	p.waitUntil("the post deleted meanwhile gone from Global", stepTimeout, goneFrom("timeline", doomed.Message))

	p.goTo("/u/bob")
	p.waitUntil("bob's profile", stepTimeout, postsCounted(2))
	last := bob.post("The last word")
	p.waitUntil("the last word, live", stepTimeout, statusIn("timeline", last.Message))
	p.waitUntil("counted", stepTimeout, postsCounted(3))
	goOffline(p)
	bob.deleteStatus(last.ID)
	bob.post("Not the last")
	goOnline(p)
	p.waitUntil("the post made meanwhile on the profile", stepTimeout, statusIn("timeline", "Not the last"))
	p.waitUntil("the post deleted meanwhile gone from the profile", stepTimeout, goneFrom("timeline", last.Message))
	p.waitUntil("the posts counted as they are", stepTimeout, postsCounted(3))
}

// ada likes and reposts bob's post on her laptop, and follows carol there,
// while her phone's stream is down: once it is back, the phone's Home
// shows her like and repost, and carol's profile that she follows carol;
// and Home, shown again, holds carol's post, which the follow brought.
func TestBrowserGapOtherDevice(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	ada.follow("bob")
	st := bob.post("Engines all the way down")
	carol.post("Carol speaks")
	phone := newBrowser(t).newTab(t, "ada", in.srv.URL)
	offlineTap(phone)
	phone.signInUI("ada", "password-ada")
	phone.waitLive()
	phone.waitUntil("bob's post, not liked", stepTimeout, actionIs("feed", st.ID, "like", "Like, 0 likes", "false"))

	laptop := in.signIn(t, "ada")
	goOffline(phone)
	laptop.like(st.ID)
	laptop.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/repost", st.ID), nil, nil)
	goOnline(phone)
	phone.waitUntil("the laptop's like on the phone", stepTimeout, actionIs("feed", st.ID, "like", "Like, 1 like", "true"))
	phone.waitUntil("the laptop's repost on the phone", stepTimeout, actionIs("feed", st.ID, "repost", "Repost, 1 repost", "true"))

	phone.goTo("/u/carol")
	phone.waitUntil("Follow offered", stepTimeout, `document.querySelector('[data-testid="follow-button"]')?.textContent === 'Follow' ? '' : 'not yet'`)
	goOffline(phone)
	laptop.follow("carol")
	goOnline(phone)
	phone.waitUntil("carol followed, on the phone", stepTimeout, `(() => {
		const b = document.querySelector('[data-testid="follow-button"]')?.textContent;
		const n = document.querySelector('[data-testid="count-followers"]')?.textContent ?? '';
		return b === 'Unfollow' && n.includes('1 follower') ? '' : 'button ' + b + ', ' + n;
	})()`)
	phone.goTo("/")
	phone.waitUntil("carol's post on the phone's Home", stepTimeout, statusIn("feed", "Carol speaks"))
}

// A failed API call (a proxy's 503) with the stream open all along is no
// break: the page reads nothing again once the next call answers.
func TestBrowserGapNotForAFailedCall(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	in.signUpAs(t, "ada", "Ada Lovelace").follow("bob")
	bob.post("bob's post")

	p := newBrowser(t).signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.waitUntil("bob's post in the feed", stepTimeout, statusIn("feed", "bob's post"))
	const reads = `performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/timelines/home')).length`
	before := eval[int](p, reads)
	eval[bool](p, `(() => {
		const real = window.fetch;
		window.fetch = (u, o) => String(u).includes('/api/v1/failing') ? Promise.resolve(new Response('{}', { status: 503 })) : real(u, o);
		import('/static/api.js').then((m) => m.api('GET', '/failing').catch(() => {}).then(() => m.api('GET', '/me')).then(() => { window.answeredAgain = true; }));
		return true;
	})()`)
	p.waitUntil("a call answered after the failed one", stepTimeout, `window.answeredAgain ? '' : 'not yet'`)
	p.waitLive()
	// A read again would be asked as the page turned live: give it time
	// to show.
	time.Sleep(3 * time.Second)
	if after := eval[int](p, reads); after != before {
		t.Errorf("the stream never broke, yet the home feed was read again %d times after one failed call", after-before)
	}
}
