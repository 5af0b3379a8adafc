package web_test

import (
	"fmt"
	"testing"
	"time"

	"chorus/social"
)

// The feed as it lives: names beside logins, arrivals held behind "N new
// posts" while the reader is scrolled down, the global timeline catching
// up by itself, ages that keep counting, and a profile's counts that follow
// the friendships the stream reports.
func TestBrowserFeedLive(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice, bob, carol := in.signUp(t, "alice"), in.signUp(t, "bob"), in.signUp(t, "carol")
	alice.follow("bob")
	bob.follow("alice")
	for i := range 40 {
		bob.post(fmt.Sprintf("Bob's post number %d", i))
	}

	br := newBrowser(t)
	p := br.newTab(t, "alice", in.srv.URL)
	p.viewport(1280, 700, false)
	p.signInUI("alice", "password-alice")
	p.waitLive()
	p.waitUntil("bob's name beside his login", stepTimeout, `(() => {
		const a = document.querySelector('[data-testid="feed"] [data-login="bob"] [data-testid="status-author"]');
		if (!a) return 'no status of bob';
		return a.querySelector('.status-name')?.textContent === 'Name bob' ? '' : 'author shows ' + JSON.stringify(a.textContent);
	})()`)

	// The global timeline brings posts of strangers too: signed in, through
	// the stream (browser_global_test.go).
	p.goTo("/global")
	p.waitUntil("the global timeline", stepTimeout, statusIn("timeline", "Bob's post number 39"))
	stranger := carol.post("Carol, whom nobody follows, says hello")
	p.waitUntil("carol's post arrives on its own", 20*time.Second, statusIn("timeline", stranger.Message))
	age := `document.querySelector('[data-testid="timeline"] [data-id="` + fmt.Sprint(stranger.ID) + `"] time').textContent`
	first := eval[string](p, age)
	p.waitUntil("its age moves on", 15*time.Second, `(() => {
		const now = `+age+`;
		if (!/^(now|\d+s)$/.test(now)) return 'age reads ' + now;
		return now !== `+js(first)+` ? '' : 'still ' + now;
	})()`)

	// Scrolled down the home feed, a new post waits behind the button.
	p.goTo("/")
	p.waitUntil("the feed", stepTimeout, statusIn("feed", "Bob's post number 39"))
	eval[bool](p, `(window.scrollTo(0, 900), true)`)
	p.waitUntil("scrolled", stepTimeout, `window.scrollY >= 800 ? '' : 'scrollY ' + window.scrollY`)
	anchor := `(() => {
		const li = [...document.querySelectorAll('[data-testid="feed"] [data-testid="status"]')]
			.find((el) => el.getBoundingClientRect().top > 100);
		return li.dataset.id + '@' + Math.round(li.getBoundingClientRect().top) + '@' + Math.round(window.scrollY);
	})()`
	before := eval[string](p, anchor)
	fresh := bob.post("Bob, while Alice reads further down")
	p.waitUntil("the new-posts button", stepTimeout, `(() => {
		const b = document.querySelector('[data-testid="new-posts"]');
		if (!b || !b.offsetParent) return 'no button shown';
		return b.textContent === '1 new post' ? '' : 'button says ' + b.textContent;
	})()`)
	if got := eval[string](p, anchor); got != before {
		t.Fatalf("the page moved under the reader: %s, then %s", before, got)
	}
	if eval[bool](p, `document.querySelector('[data-testid="feed"] [data-id="`+fmt.Sprint(fresh.ID)+`"]') !== null`) {
		t.Fatal("the new post was put in the feed while the reader was scrolled down")
	}
	p.keep("new-posts-1280-light")
	p.click(testID("new-posts"))
	p.waitUntil("the new post on top, in view", stepTimeout, `(() => {
		const li = document.querySelector('[data-testid="feed"] [data-testid="status"]');
		if (!li || li.dataset.id !== `+js(fmt.Sprint(fresh.ID))+`) return 'first status is ' + (li && li.dataset.id);
		if (li.getBoundingClientRect().top < 0 || li.getBoundingClientRect().top > window.innerHeight) return 'not in view';
		if (document.activeElement !== li) return 'focus on ' + document.activeElement.tagName;
		return document.querySelector('[data-testid="new-posts"]').offsetParent ? 'button still shown' : '';
	})()`)

	// Alice's own profile counts her followers as friendships come and go.
	p.goTo("/u/alice")
	followers := func(n int) string {
		return `(() => {
			const el = document.querySelector('[data-testid="count-followers"] strong');
			return el && el.textContent === '` + fmt.Sprint(n) + `' ? '' : 'followers: ' + (el && el.textContent);
		})()`
	}
	p.waitUntil("one follower", stepTimeout, followers(1))
	bob.unfollow("alice")
	p.waitUntil("bob's unfollow counted", stepTimeout, followers(0))
	bob.follow("alice")
	p.waitUntil("bob's follow counted", stepTimeout, followers(1))
	carol.follow("alice") // no friendship: the followed frame alone tells
	p.waitUntil("carol's follow counted", stepTimeout, followers(2))
}

// j and k move between posts, o opens one, n goes to the composer, ? lists
// the shortcuts, and none of them acts while typing. Route changes put
// focus on a heading that draws no box; links in text are underlined; on a
// touch screen nothing takes focus by itself.
func TestBrowserKeyboard(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	dora := in.signUp(t, "dora")
	dora.post("First, with a link: https://example.com/map")
	dora.post("Second")
	third := dora.post("Third")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "dora")
	p.waitUntil("the feed", stepTimeout, statusIn("feed", "First, with a link: https://example.com/map"))

	focused := func(want string) string {
		return `(() => {
			const el = document.activeElement;
			const got = el.dataset.testid === 'status' ? 'status ' + el.querySelector('[data-testid="status-message"]').textContent : el.tagName + '.' + el.className;
			return got === ` + js(want) + ` ? '' : 'focus on ' + got;
		})()`
	}
	p.press("j")
	p.waitUntil("j: the newest post", stepTimeout, focused("status Third"))
	p.press("j")
	p.waitUntil("j: the next post", stepTimeout, focused("status Second"))
	p.press("j")
	p.press("k")
	p.waitUntil("k: the previous post", stepTimeout, focused("status Second"))
	p.press("n")
	p.waitUntil("n: the composer", stepTimeout, `document.activeElement.dataset.testid === 'composer-input' ? '' : 'focus on ' + document.activeElement.tagName`)
	p.press("jk?")
	if got := eval[string](p, `document.activeElement.value`); got != "jk?" {
		t.Fatalf("typing in the composer gave %q", got)
	}
	if eval[bool](p, `document.querySelector('[data-testid="shortcuts"]')?.open === true`) {
		t.Fatal("? typed in the composer opened the shortcut list")
	}
	eval[bool](p, `(document.activeElement.blur(), true)`)
	p.press("?")
	p.waitUntil("?: the shortcut list", stepTimeout, `document.querySelector('[data-testid="shortcuts"]')?.open ? '' : 'not open'`)
	p.keep("shortcuts-1280-light")
	p.press("\x1b") // Escape
	p.waitUntil("Escape closes it", stepTimeout, `document.querySelector('[data-testid="shortcuts"]').open ? 'still open' : ''`)

	// Links inside a post are underlined, not told by colour alone.
	if got := eval[string](p, `getComputedStyle(document.querySelector('[data-testid="status-message"] a')).textDecorationLine`); got != "underline" {
		t.Fatalf("a link in a post: text-decoration-line %q", got)
	}

	// o opens the post in focus; the new page's heading takes focus without a box.
	p.press("j")
	p.waitUntil("j", stepTimeout, focused("status Third"))
	p.press("o")
	p.waitUntil("o: the post's page", stepTimeout, atPage(fmt.Sprintf("/s/%d", third.ID), "status-page", "Third"))
	p.goTo("/global")
	p.waitUntil("the heading in focus, drawn plain", stepTimeout, `(() => {
		const el = document.activeElement;
		if (el.tagName !== 'H1') return 'focus on ' + el.tagName;
		const cs = getComputedStyle(el);
		return cs.outlineStyle === 'none' && cs.boxShadow === 'none' ? '' : 'outline ' + cs.outlineStyle + ', box-shadow ' + cs.boxShadow;
	})()`)

	// On a touch screen the sign-in form waits to be touched.
	phone := br.newTab(t, "phone", in.srv.URL)
	phone.viewport(390, 800, true)
	phone.open("/")
	phone.waitVisible(testID("signin-form"))
	phone.keep("signin-390-light")
	if got := eval[string](phone, `matchMedia('(pointer: coarse)').matches ? document.activeElement.tagName : 'not a touch screen'`); got == "INPUT" || got == "not a touch screen" {
		t.Fatalf("on a phone: %s", got)
	}
	// On a desktop the login field is ready for typing.
	desk := br.newTab(t, "desk", in.srv.URL)
	desk.open("/")
	desk.waitUntil("the login field in focus", stepTimeout, `document.activeElement.name === 'login' ? '' : 'focus on ' + document.activeElement.tagName`)
	desk.keep("signin-1280-light")
}
