package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
	"chorus/web"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// mentionListOpen is a check that the @mention suggestions of the box sel
// are shown and offer login.
func mentionListOpen(sel, login string) string {
	return `(() => {
		const box = document.querySelector(` + js(sel) + `);
		if (!box) return 'no box';
		const list = document.getElementById(box.getAttribute('aria-controls'));
		if (!list || list.hidden) return 'no suggestions shown';
		const opts = [...list.querySelectorAll('[role="option"]')].map((o) => o.dataset.login);
		return opts.includes(` + js(login) + `) ? '' : 'options: ' + opts.join(' ');
	})()`
}

// mentionListClosed is a check that the suggestions of the box sel are
// closed and the box, still there, holds value.
func mentionListClosed(sel, value string) string {
	return `(() => {
		const box = document.querySelector(` + js(sel) + `);
		if (!box) return 'the box is gone';
		const list = document.getElementById(box.getAttribute('aria-controls'));
		if (list && !list.hidden) return 'the suggestions are still shown';
		if (box.getAttribute('aria-expanded') !== 'false') return 'the box says it is expanded';
		return box.value === ` + js(value) + ` ? '' : 'the box holds ' + JSON.stringify(box.value);
	})()`
}

// Escape with the @mention suggestions open closes the suggestions alone:
// the reply box stays open with what was typed, and so does the home
// composer's text; a second Escape then cancels the reply.
func TestBrowserComposerEscapeClosesSuggestionsOnly(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	in.signUpAs(t, "carol", "Carol Shaw")
	post := ada.post("The engine weaves algebraic patterns")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("ada's post in her feed", stepTimeout, statusIn("feed", post.Message))

	item := testID("feed", fmt.Sprintf(` [data-id="%d"] `, post.ID))
	p.click(actionSel("feed", post.ID, "reply"))
	box := item + testID("reply-input")
	p.waitVisible(box)
	p.typeInto(box, "hey @ca")
	p.waitUntil("suggestions for @ca in the reply box", stepTimeout, mentionListOpen(box, "carol"))
	p.press(kb.Escape)
	p.waitUntil("only the suggestions closed", stepTimeout, mentionListClosed(box, "hey @ca"))
	if got := eval[string](p, `document.activeElement.dataset.testid ?? ''`); got != "reply-input" {
		t.Fatalf("focus on %q after Escape, want the reply box", got)
	}
	p.press(kb.Escape)
	p.waitUntil("the reply cancelled by a second Escape", stepTimeout, `document.querySelector(`+js(item+testID("reply-composer"))+`) ? 'the reply box is still open' : ''`)

	composer := testID("composer-input")
	p.typeInto(composer, "hi @ca")
	p.waitUntil("suggestions for @ca in the composer", stepTimeout, mentionListOpen(composer, "carol"))
	p.press(kb.Escape)
	p.waitUntil("the composer's suggestions closed", stepTimeout, mentionListClosed(composer, "hi @ca"))
}

// slowSearch is a proxy in front of a server that holds each people search
// (GET /api/v1/users?q=...) for delay before passing it on, counting those
// that came and those answered or given up by the browser.
type slowSearch struct {
	srv           *httptest.Server
	asked, closed atomic.Int64
}

func newSlowSearch(tb testing.TB, target string, delay time.Duration) *slowSearch {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	s := &slowSearch{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/users" || !r.URL.Query().Has("q") {
			proxy.ServeHTTP(w, r)
			return
		}
		s.asked.Add(1)
		defer s.closed.Add(1)
		select {
		case <-time.After(delay):
			proxy.ServeHTTP(w, r)
		case <-r.Context().Done(): // the browser gave up on it
		}
	}))
	tb.Cleanup(s.srv.Close)
	return s
}

// Someone who types "@bo" and leaves the box before the people search
// answers (a slow network) does not get the suggestions opened under a box
// they are no longer typing in: the list stays closed, the box not
// expanded, once the answer is due.
func TestBrowserComposerMentionListStaysClosedAfterBlur(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUpAs(t, "bob", "Bob Babbage")
	in.signUpAs(t, "ada", "Ada Lovelace")
	slow := newSlowSearch(t, in.srv.URL, 1500*time.Millisecond)

	br := newBrowser(t)
	p := br.signedInTab(t, slow.srv.URL, "ada")
	box := testID("composer-input")
	p.waitVisible(box)
	p.typeInto(box, "hi @bo")
	testio.Eventually(t, stepTimeout, func() string {
		if slow.asked.Load() == 0 {
			return "no people search asked"
		}
		return ""
	})
	// The search is on its way and held: the box loses the focus.
	eval[chromedp.Void](p, `void document.querySelector(`+js(box)+`).blur()`)
	testio.Eventually(t, stepTimeout, func() string {
		if slow.closed.Load() < slow.asked.Load() {
			return "the people search not answered yet"
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond) // the answer's way into the page
	if why := eval[string](p, mentionListClosed(box, "hi @bo")); why != "" {
		t.Errorf("after the box lost the focus, its lookup answered: %s", why)
	}
}

// A suggestion with a 64-character name of one word, and a 32-character
// login, keeps the reply box inside the page: nothing scrolls sideways and
// Reply, Cancel and the suggestion stay on screen, the name cut short, on a
// desktop and on a phone.
func TestBrowserComposerLongSuggestionFits(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	login := "longname" + strings.Repeat("w", 24)
	in.signUpAs(t, login, strings.Repeat("W", 64))
	post := ada.post("Who knows the long one?")

	br := newBrowser(t)
	for _, size := range []struct {
		width, height int64
		phone         bool
	}{{1280, 800, false}, {375, 740, true}} {
		label := fmt.Sprintf("ada-%d", size.width)
		p := br.newTab(t, label, in.srv.URL)
		p.viewport(size.width, size.height, size.phone)
		p.signInUI("ada", "password-ada")
		p.waitUntil("ada's post in her feed", stepTimeout, statusIn("feed", post.Message))
		item := testID("feed", fmt.Sprintf(` [data-id="%d"] `, post.ID))
		p.click(actionSel("feed", post.ID, "reply"))
		box := item + testID("reply-input")
		p.waitVisible(box)
		p.typeInto(box, "@lon")
		p.waitUntil("suggestions for @lon", stepTimeout, mentionListOpen(box, login))
		p.waitUntil("the page fits with the suggestions open", stepTimeout, `(() => {
			const de = document.documentElement;
			if (de.scrollWidth > innerWidth) return 'the page scrolls sideways: ' + de.scrollWidth + ' > ' + innerWidth;
			for (const id of ['reply-submit', 'reply-cancel', 'mention-option']) {
				const r = document.querySelector(`+js(item)+` + ' [data-testid="' + id + '"]').getBoundingClientRect();
				if (r.left < -0.5 || r.right > de.clientWidth + 0.5) return id + ' off screen: ' + r.left + '..' + r.right;
			}
			const n = document.querySelector(`+js(item)+` + ' .mention-name');
			return n.scrollWidth > n.clientWidth ? '' : 'the name is not cut: ' + n.scrollWidth + ' <= ' + n.clientWidth;
		})()`)
		p.keep(fmt.Sprintf("long-suggestion-%d", size.width))
	}
}

// An export refused past the export limit is told in the Your data
// section, with when to try again, rather than failing as a download.
func TestBrowserNoticeExportRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ExportsPerUser: perHour(1)}
	in := e.start()
	in.signUpAs(t, "ada", "Ada Lovelace")

	br := newBrowser(t)
	p := br.newTab(t, "ada", in.srv.URL)
	dir := t.TempDir()
	p.do("allow downloads", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior:         cdpbrowser.SetDownloadBehaviorBehaviorAllow,
			BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID,
			DownloadPath:     dir,
		})
		return err
	}))
	p.signInUI("ada", "password-ada")
	p.goTo("/settings")
	link := testID("settings-export")
	p.waitVisible(link)
	note := testID("settings-export-note")

	// The first export, within the limit, is downloaded whole.
	p.click(link)
	file := filepath.Join(dir, "chorus-ada.json")
	deadline := time.Now().Add(stepTimeout)
	for {
		raw, err := os.ReadFile(file)
		if err == nil && strings.Contains(string(raw), `"profile"`) && strings.HasSuffix(strings.TrimSpace(string(raw)), "}") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the export was not downloaded to %s: %v, %d bytes", file, err, len(raw))
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.waitUntil("the link ready again, nothing said", stepTimeout, `(() => {
		const a = document.querySelector(`+js(link)+`);
		const n = document.querySelector(`+js(note)+`);
		if (n && !n.hidden) return 'note: ' + n.textContent;
		return a.textContent === 'Download your data' && !a.hasAttribute('aria-disabled') ? '' : 'link: ' + a.textContent;
	})()`)

	// The second, past it, is refused, and the page says so.
	p.click(link)
	p.waitUntil("the refusal told", stepTimeout, `(() => {
		const n = document.querySelector(`+js(note)+`);
		if (!n || n.hidden) return 'nothing said';
		const t = n.textContent;
		return t.includes('as often as one may') && t.includes('try again in about an hour') ? '' : 'note: ' + t;
	})()`)
	if res := in.signIn(t, "ada").do("GET", "/api/v1/me/export", nil); res.Status != http.StatusTooManyRequests {
		t.Fatalf("a third export: %d, want 429 (the page spent more than one)", res.Status)
	}
}

// A user whose account is suspended while signed in is told so, not only
// that they were signed out.
func TestBrowserNoticeSuspended(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{Admins: []string{"root"}}).start()
	root := in.signUpAs(t, "root", "Root")
	in.signUpAs(t, "ada", "Ada Lovelace")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	root.must(http.StatusNoContent, "PUT", "/api/v1/admin/suspensions/ada", nil, nil)
	p.waitUntil("the suspension told", stepTimeout, `(() => {
		if (document.querySelector('[data-testid="me"]')) return 'still signed in';
		const n = document.querySelector('.notice');
		return n && n.textContent === 'Your account has been suspended.' ? '' : 'notice: ' + (n && n.textContent);
	})()`)
}

// Past 99 unread notifications, the bell and the phone's tab bar both
// show "99+", and both name the exact count.
func TestBrowserNoticeBigUnreadCount(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	srv := in.start()
	srv.signUpAs(t, "ada", "Ada Lovelace")
	bob := srv.signUpAs(t, "bob", "Bob Babbage")
	const n = 120
	for i := range n {
		bob.post(fmt.Sprintf("@ada note %d", i))
	}
	var unread struct{ Count int }
	srv.signIn(t, "ada").must(http.StatusOK, "GET", "/api/v1/notifications/unread", nil, &unread)
	if unread.Count != n {
		t.Fatalf("ada has %d unread, want %d", unread.Count, n)
	}

	br := newBrowser(t)
	p := br.signedInTab(t, srv.srv.URL, "ada")
	want := fmt.Sprintf("Notifications, %d unread", n)
	p.waitUntil("the bell shows 99+", stepTimeout, `(() => {
		const b = document.querySelector('[data-testid="notes-button"]');
		const c = document.querySelector('[data-testid="notes-count"]');
		if (!b || !c) return 'no bell';
		if (c.hidden || c.textContent !== '99+') return 'bell shows ' + (c.hidden ? 'nothing' : c.textContent);
		if (b.getAttribute('aria-label') !== `+js(want)+`) return 'bell named ' + b.getAttribute('aria-label');
		return b.title === `+js(fmt.Sprintf("Notifications: %d unread", n))+` ? '' : 'bell title ' + b.title;
	})()`)

	p.viewport(375, 740, true)
	p.waitUntil("the tab bar shows 99+", stepTimeout, `(() => {
		const tab = document.querySelector('[data-testid="tab-notifications"]');
		if (!tab || tab.offsetParent === null) return 'no tab bar shown';
		const badge = tab.querySelector('.tab-badge');
		if (!badge || badge.hidden || badge.textContent !== '99+') return 'tab shows ' + (badge && !badge.hidden ? badge.textContent : 'nothing');
		return tab.getAttribute('aria-label') === `+js(want)+` ? '' : 'tab named ' + tab.getAttribute('aria-label');
	})()`)
}
