package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// Under -registrations approval a sign-up from the form makes no session:
// the client says so with the server's message on the sign-in form, the
// login filled in, rather than entering the app and finding the session
// gone.
func TestBrowserSignUpAwaitsApproval(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Registrations: social.RegistrationsApproval, Admins: []string{"root"}}).start()
	// What the server says to a sign-up held for approval.
	var held struct{ Message string }
	in.anon(t).must(http.StatusAccepted, "POST", "/api/v1/users",
		map[string]string{"login": "other", "name": "Other", "password": "kettle-drum-40"}, &held)
	if held.Message == "" {
		t.Fatal("a held sign-up said nothing")
	}

	br := newBrowser(t)
	p := br.newTab(t, "newbie", in.srv.URL)
	p.open("/")
	p.waitVisible(testID("signin-form"))
	p.click(testID("show-signup"))
	form := testID("signup-form")
	p.waitVisible(form)
	p.typeInto(form+` input[name="login"]`, "newbie")
	p.typeInto(form+` input[name="name"]`, "New Person")
	p.typeInto(form+` input[name="password"]`, "kettle-drum-43")
	p.click(form + ` button[type="submit"]`)
	p.waitUntil("the sign-in form saying the account waits", stepTimeout, `(() => {
		if (document.querySelector('[data-testid="me"]')) return 'signed in';
		const form = document.querySelector('[data-testid="signin-form"]');
		if (!form) return 'no sign-in form';
		const notice = document.querySelector('.auth-card .notice')?.textContent;
		if (notice !== `+js(held.Message)+`) return 'notice ' + notice;
		return form.elements.login.value === 'newbie' ? '' : 'login ' + form.elements.login.value;
	})()`)
}

// Muting someone from the menu of a repost of their post takes that
// repost, and every other repost of their posts, off the feed; the
// reposter's own posts stay.
func TestBrowserMuteFromRepostHidesReposts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	carol := in.signUpAs(t, "carol", "Carol Shaw")
	dan := in.signUpAs(t, "dan", "Dan Bricklin")
	ada.follow("carol")
	ada.follow("dan")
	first, second := bob.post("Bob's first"), bob.post("Bob's second")
	carol.post("Carol's own")
	carol.react("PUT", "repost", first.ID)
	dan.react("PUT", "repost", second.ID)

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	reposts := fmt.Sprintf(`document.querySelectorAll('[data-testid="feed"] [data-original="%d"], [data-testid="feed"] [data-original="%d"]').length`, first.ID, second.ID)
	p.waitUntil("both reposts in the feed", stepTimeout, `(() => {
		const n = `+reposts+`;
		return n === 2 ? '' : n + ' reposts shown';
	})()`)
	p.waitUntil("carol's own post", stepTimeout, statusIn("feed", "Carol's own"))

	item := testID("feed", fmt.Sprintf(` [data-original="%d"] `, first.ID))
	p.click(item + testID("status-menu"))
	p.waitVisible(item + testID("mute"))
	p.click(item + testID("mute"))
	p.waitVisible(item + testID("mute-confirm"))
	p.click(item + testID("mute-confirm"))
	p.waitUntil("every repost of bob's posts gone", stepTimeout, `(() => {
		const n = `+reposts+`;
		return n === 0 ? '' : n + ' reposts still shown';
	})()`)
	p.waitUntil("carol's own post kept", stepTimeout, statusIn("feed", "Carol's own"))
	if u := ada.user("bob"); u.Muting == nil || !*u.Muting {
		t.Fatal("the server does not say ada mutes bob")
	}
}

// A busy feed (a post every 300 ms) still counts its arrivals on the Home
// link while the reader is elsewhere: the batch of arrivals ends 800 ms
// after its first, not after a pause that never comes.
func TestBrowserBusyFeedCountsArrivals(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.goTo("/u/bob")

	// bob posts every 300 ms until the count shows, for at most a minute:
	// far longer than the wait below, so the count must come while the
	// posts still do.
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			res := bob.do("POST", "/api/v1/statuses", map[string]string{"message": fmt.Sprintf("busy %d", n)})
			if res.Status != http.StatusCreated {
				return
			}
			n++
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()
	p.waitUntil("arrivals counted on the Home link while posts arrive", 2*stepTimeout, `(() => {
		const badge = document.querySelector('#nav .nav-badge');
		if (!badge) return 'no badge';
		return !badge.hidden && parseInt(badge.textContent, 10) > 0 ? '' : 'badge hidden, ' + badge.textContent;
	})()`)
}

// A live timeline keeps at most 300 entries: arrivals push the oldest out,
// and "Load more" brings them back from where the list now ends.
func TestBrowserLiveTimelineCapped(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.waitUntil("the empty feed", stepTimeout, `document.querySelector('.view-home .empty:not([hidden])') ? '' : 'not empty yet'`)

	const posts = 320
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < posts; i += 4 {
				bob.post(fmt.Sprintf("post %d", i))
			}
		})
	}
	wg.Wait()
	shown := `document.querySelectorAll('[data-testid="feed"] > [data-testid="status"]').length`
	p.waitUntil("the newest 300 shown", 3*stepTimeout, `(() => {
		const n = `+shown+`;
		const more = document.querySelector('.view-home .timeline-foot button');
		if (n !== 300) return n + ' shown';
		return more && !more.hidden ? '' : 'no Load more';
	})()`)
	// Shown: every post but the 20 oldest.
	p.waitUntil("the newest posts, in order", stepTimeout, `(() => {
		const ids = [...document.querySelectorAll('[data-testid="feed"] > [data-testid="status"]')].map((li) => Number(li.dataset.id));
		const sorted = ids.every((id, i) => i === 0 || ids[i - 1] > id);
		return sorted ? '' : 'out of order';
	})()`)
	p.click(".view-home .timeline-foot button")
	p.waitUntil("every post, once, after Load more", stepTimeout, `(() => {
		const texts = [...document.querySelectorAll('[data-testid="feed"] [data-testid="status-message"]')].map((el) => el.textContent);
		const set = new Set(texts);
		if (texts.length !== `+fmt.Sprint(posts)+` || set.size !== texts.length) return texts.length + ' shown, ' + set.size + ' different';
		for (let i = 0; i < `+fmt.Sprint(posts)+`; i++) if (!set.has('post ' + i)) return 'post ' + i + ' missing';
		return '';
	})()`)
}

// Sending frames too fast (the global page watched and left over and over)
// gets the stream closed with 1008 "too many frames": the page stays
// signed in and comes back live.
func TestBrowserFloodedStreamStaysSignedIn(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	eval[bool](p, `(() => {
		window.reviewStates = [];
		new MutationObserver(() => {
			window.reviewStates.push(document.querySelector('[data-testid="conn-state"]')?.dataset.state ?? 'gone');
		}).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
		return true;
	})()`)
	// Each visit to Global sends watch, each leaving unwatch: 40 frames at
	// once, twice what a stream may send in a burst.
	eval[string](p, `(() => {
		for (let i = 0; i < 40; i++) {
			const a = document.createElement('a');
			a.href = i % 2 === 0 ? '/global' : '/';
			document.body.append(a);
			a.click();
			a.remove();
		}
		return location.pathname;
	})()`)
	testio.Eventually(t, stepTimeout, func() string {
		if in.hub.Stats.FloodClosed.Load() == 0 {
			return "the server has not closed the stream for too many frames"
		}
		return ""
	})
	p.waitUntil("signed in and live again after the close", 2*stepTimeout, `(() => {
		if (!document.querySelector('[data-testid="me"]')) return 'signed out';
		const el = document.querySelector('[data-testid="conn-state"]');
		if (!window.reviewStates.some((s) => s !== 'live')) return 'the close not seen yet';
		return el?.dataset.state === 'live' ? '' : 'conn-state ' + el?.dataset.state;
	})()`)
}

// An old-style address whose hash would leave the site ("#//evil.example",
// "#/\evil.example") is no route: the page boots as usual and stays here.
func TestBrowserForeignHashBoots(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	br := newBrowser(t)
	p := br.newTab(t, "visitor", in.srv.URL)
	for _, hash := range []string{`#//evil.example`, `#/\evil.example`, `#/.//evil.example`} {
		p.open("/" + hash)
		p.waitUntil("the sign-in form after "+hash, stepTimeout, `(() => {
			if (location.origin !== `+js(in.srv.URL)+`) return 'at ' + location.origin;
			return document.querySelector('[data-testid="signin-form"]') ? '' : 'page: ' + document.querySelector('main')?.textContent.slice(0, 80);
		})()`)
	}
	// An old link within the site still leads where it says.
	p.open("/#/global")
	p.waitUntil("the global page from #/global", stepTimeout, `location.pathname === '/global' ? '' : 'at ' + location.pathname`)
}

// resourceStarts is a check's expression: the start times (ms) of the
// page's requests whose address ends with suffix.
func resourceStarts(suffix string) string {
	return `performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname.endsWith(` + js(suffix) + `)).map((e) => e.startTime)`
}

// spacedCheck is a check that the requests to suffix, at least one, start
// at least gap ms apart.
func spacedCheck(suffix string, gap int) string {
	return `(() => {
		const at = ` + resourceStarts(suffix) + `;
		if (at.length === 0) return 'none';
		for (let i = 1; i < at.length; i++) {
			if (at[i] - at[i - 1] < ` + fmt.Sprint(gap) + `) return at.length + ' requests, two ' + Math.round(at[i] - at[i - 1]) + ' ms apart';
		}
		return '';
	})()`
}

// Another user liking and unliking a post over and over sends a frame each
// time; the bell asks the unread count, and the open notifications page
// moves the read marker, at most once every couple of seconds, not once
// per frame, and what they end on is the server's.
func TestBrowserNotificationFramesCoalesced(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	post := ada.post("Notes on the analytical engine")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	eval[bool](p, `(performance.setResourceTimingBufferSize(5000), true)`)

	// The bell: each unlike takes back a notification counted unread.
	for range 15 {
		bob.react("PUT", "like", post.ID)
		bob.react("DELETE", "like", post.ID)
	}
	bob.react("PUT", "like", post.ID)
	p.waitUntil("the bell at one unread", 2*stepTimeout, badgeIs(1))
	p.waitUntil("the unread count asked at most every 2 s", stepTimeout, spacedCheck("/notifications/unread", 2000))

	// The page: each like while it is open is read.
	p.goTo("/notifications")
	p.waitUntil("the like shown", stepTimeout, `document.querySelector('[data-testid="note"][data-type="liked"]') ? '' : 'no like shown'`)
	for range 15 {
		bob.react("DELETE", "like", post.ID)
		bob.react("PUT", "like", post.ID)
	}
	var unread struct{ Count int }
	testio.Eventually(t, 2*stepTimeout, func() string {
		ada.must(http.StatusOK, "GET", "/api/v1/notifications/unread", nil, &unread)
		if unread.Count != 0 {
			return fmt.Sprintf("%d unread on the server", unread.Count)
		}
		return ""
	})
	p.waitUntil("the marker moved at most every 2 s", stepTimeout, spacedCheck("/notifications/read", 2000))
}

// A post of nothing but line breaks shows a line or two tall, not
// thousands of pixels; one of many short lines shows folded, with "Show
// more" to read it whole.
func TestBrowserTallMessagesBounded(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	blank := bob.post("top" + strings.Repeat("\n", 490) + "end")
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprint(i))
	}
	long := bob.post(strings.Join(lines, "\n"))

	br := newBrowser(t)
	p := br.newTab(t, "visitor", in.srv.URL)
	p.open("/global")
	height := func(id int64) string {
		return fmt.Sprintf(`document.querySelector('[data-testid="timeline"] [data-id="%d"] [data-testid="status-message"]')?.getBoundingClientRect().height ?? -1`, id)
	}
	p.waitUntil("the blank lines cut", stepTimeout, `(() => {
		const h = `+height(blank.ID)+`;
		if (h < 0) return 'not shown';
		return h < 150 ? '' : 'message ' + h + ' px tall';
	})()`)
	p.waitUntil("the long post folded", stepTimeout, `(() => {
		const h = `+height(long.ID)+`;
		if (h < 0) return 'not shown';
		return h < 400 ? '' : 'message ' + h + ' px tall';
	})()`)
	more := testID("timeline", fmt.Sprintf(` [data-id="%d"] `, long.ID)) + testID("status-more")
	p.click(more)
	p.waitUntil("the long post whole", stepTimeout, `(() => {
		const h = `+height(long.ID)+`;
		const b = document.querySelector(`+js(more)+`);
		return h > 1000 && b.getAttribute('aria-expanded') === 'true' ? '' : 'message ' + h + ' px tall, ' + b.getAttribute('aria-expanded');
	})()`)
}

// insertText puts text into the field sel as a paste does.
func (p *tab) insertText(sel, text string) {
	p.tb.Helper()
	p.click(sel)
	p.do("insert text into "+sel, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text})
		return err
	}))
}

// Names count characters as the server does: 64 emoji fit in a name and in
// a list's name (maxlength would have let in 32), the 65th does not; a tab
// in a bio is saved as a space.
func TestBrowserNamesCountCharacters(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	full, over := strings.Repeat("🎻", 64), strings.Repeat("🎻", 65)

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/settings")
	p.waitVisible(testID("settings-name"))
	eval[bool](p, `(document.querySelector('[data-testid="settings-name"]').value = '', true)`)
	p.insertText(testID("settings-name"), over)
	if got := eval[string](p, `document.querySelector('[data-testid="settings-name"]').value`); got != full {
		t.Fatalf("the name field holds %d characters, want 64", len([]rune(got)))
	}
	p.click(testID("settings-bio"))
	eval[bool](p, `(document.querySelector('[data-testid="settings-bio"]').value = 'one\ttwo\n three', true)`)
	p.click(testID("settings-profile-submit"))
	p.waitUntil("the profile saved", stepTimeout, `(() => {
		const note = document.querySelector('[data-testid="settings-profile-note"]:not([hidden])')?.textContent;
		return note === 'Profile saved.' ? '' : 'note ' + note;
	})()`)
	var me struct{ User struct{ Name, Bio string } }
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, &me)
	if me.User.Name != full || me.User.Bio != "one two three" {
		t.Fatalf("saved name of %d characters and bio %q, want 64 and %q", len([]rune(me.User.Name)), me.User.Bio, "one two three")
	}

	p.goTo("/lists")
	p.waitVisible(testID("list-create-input"))
	p.insertText(testID("list-create-input"), over)
	p.click(testID("list-create-submit"))
	p.waitUntil("the list made", stepTimeout, `document.querySelector('[data-testid="list-row"]') ? '' : 'no list yet'`)
	var lists struct{ Lists []struct{ Name string } }
	ada.must(http.StatusOK, "GET", "/api/v1/lists", nil, &lists)
	if len(lists.Lists) != 1 || lists.Lists[0].Name != full {
		t.Fatalf("lists %+v, want one named with 64 violins", lists.Lists)
	}
}

// A notification names its sender by login too: a display name alone
// could be anyone's.
func TestBrowserNotificationShowsLogin(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	mallory := in.signUpAs(t, "mallory", "Ada Lovelace")
	mallory.follow("ada")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.goTo("/notifications")
	p.waitUntil("the follow, with mallory's login", stepTimeout, `(() => {
		const li = document.querySelector('[data-testid="note"][data-type="followed"]');
		if (!li) return 'no follow shown';
		const logins = [...li.querySelectorAll('.login')].map((el) => el.textContent);
		return logins.includes('mallory') ? '' : 'logins shown: ' + JSON.stringify(logins);
	})()`)
}

// refusingProxy stands in front of a server and refuses every stream,
// WebSocket or events, with 503, noting when each was asked for.
type refusingProxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	dials []time.Time
}

func newRefusingProxy(tb testing.TB, target string) *refusingProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	rp := &refusingProxy{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	rp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/stream" {
			proxy.ServeHTTP(w, r)
			return
		}
		rp.mu.Lock()
		rp.dials = append(rp.dials, time.Now())
		rp.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "unavailable", "message": "refused by the test"}})
	}))
	tb.Cleanup(rp.srv.Close)
	return rp
}

func (rp *refusingProxy) dialed() []time.Time {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return append([]time.Time(nil), rp.dials...)
}

// Under refusals that last, the client's waits between dials grow past
// 5 s after five failures in a row, and it asks whether it is still signed
// in on the first failure and every fourth, not on each.
func TestBrowserLastingRefusalBacksOff(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "ada", "Ada Lovelace")
	rp := newRefusingProxy(t, in.srv.URL)

	br := newBrowser(t)
	p := br.newTab(t, "ada", rp.srv.URL)
	p.open("/")
	eval[bool](p, `(performance.setResourceTimingBufferSize(5000), true)`)
	p.signInOn("ada", "password-ada")
	p.waitUntil("signed in", stepTimeout, `document.querySelector('[data-testid="me"]') ? '' : 'not signed in'`)
	signedInAt := eval[float64](p, `performance.now()`)

	// Dials 1 to 6 fail after waits of at most 5 s; the wait after the
	// sixth is at least 8 s.
	var dials []time.Time
	testio.Eventually(t, time.Minute, func() string {
		if dials = rp.dialed(); len(dials) < 7 {
			return fmt.Sprintf("%d dials", len(dials))
		}
		return ""
	})
	if gap := dials[6].Sub(dials[5]); gap < 7*time.Second {
		t.Errorf("the wait after six failed dials was %s, want at least 8 s", gap)
	}
	checks := eval[int](p, `performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === '/api/v1/me' && e.startTime > `+fmt.Sprint(signedInAt)+`).length`)
	if checks < 1 || checks > 2 {
		t.Errorf("the page asked /me %d times over six failed dials, want 2 (the first failure and the fifth)", checks)
	}
	if eval[string](p, `document.querySelector('[data-testid="me"]')?.textContent ?? ''`) != "ada" {
		t.Error("the page signed out")
	}
}

// homeBadgeIs is a check that the header's Home link counts n new posts.
func homeBadgeIs(n int) string {
	return `(() => {
		const b = document.querySelector('#nav a[data-route="home"] .nav-badge');
		if (!b) return 'no badge';
		const got = b.hidden ? 0 : parseInt(b.textContent, 10);
		return got === ` + fmt.Sprint(n) + ` ? '' : 'Home counts ' + (b.hidden ? 'none' : b.textContent);
	})()`
}

// ada, on the global page, sees Home count bob's new posts; bob deletes
// one, then one posted and deleted before it was counted: Home counts
// what is still new in her feed. After she looked at Home, the deletion
// of a post counted before takes nothing off the next count.
func TestBrowserHomeBadgeForgetsDeletedPosts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.goTo("/global")
	first := bob.post("Posted in haste")
	second := bob.post("Posted with care")
	p.waitUntil("Home counts bob's posts", stepTimeout, homeBadgeIs(2))
	bob.deleteStatus(first.ID)
	p.waitUntil("Home counts one once the first is deleted", stepTimeout, homeBadgeIs(1))
	third := bob.post("Posted and taken back")
	bob.deleteStatus(third.ID)
	bob.post("Posted to stay")
	p.waitUntil("Home counts the second and the fourth", stepTimeout, homeBadgeIs(2))

	p.goTo("/")
	p.waitUntil("Home counts nothing once looked at", stepTimeout, homeBadgeIs(0))
	p.goTo("/global")
	fifth := bob.post("Posted after a look")
	p.waitUntil("Home counts the fifth", stepTimeout, homeBadgeIs(1))
	bob.deleteStatus(second.ID)
	bob.post("Posted last")
	p.waitUntil("Home counts the fifth and the last", stepTimeout, homeBadgeIs(2))
	bob.deleteStatus(fifth.ID)
	p.waitUntil("Home counts the last", stepTimeout, homeBadgeIs(1))
}

// ada opens Chorus at bob's profile (a shared link, a reload there), so
// her home feed has not been read in this page: bob's new posts are
// counted on the Home link all the same, once each, and Home shows them.
func TestBrowserHomeBadgeCountsBeforeHomeIsShown(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	in.signUpAs(t, "ada", "Ada Lovelace").follow("bob")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.open("/u/bob")
	p.waitLive()
	for i := range 3 {
		bob.post(fmt.Sprintf("bob's new post %d", i))
	}
	p.waitUntil("Home counts bob's posts", stepTimeout, homeBadgeIs(3))
	p.goTo("/")
	p.waitUntil("bob's posts in the feed", stepTimeout, statusIn("feed", "bob's new post 2"))
	p.waitUntil("Home counts nothing once looked at", stepTimeout, homeBadgeIs(0))
}
