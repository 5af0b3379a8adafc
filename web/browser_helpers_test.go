package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// browserLifetime bounds a whole browser test: when it passes, Chromium is
// killed and every pending action fails. Each step has a shorter deadline.
const browserLifetime = 90 * time.Second

// stepTimeout is the default deadline of one action or wait in a tab.
const stepTimeout = 10 * time.Second

// chromiumNames are where chromiumPath looks for a browser, in order, on
// PATH: Debian's Chromium, other distributions', Google's Chrome.
// scripts/test.sh looks for the same names.
var chromiumNames = []string{
	"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
}

// chromiumPath finds the browser the tests drive. A missing browser fails
// the test: skipping would let CI pass without ever running the client.
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("CHORUS_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tb.Fatalf("Chromium not found (looked for %s): the browser tests need it; install it with "+
		"`apt-get install chromium` (scripts/test.sh does) or point CHORUS_TEST_CHROMIUM at a Chrome or Chromium binary",
		strings.Join(chromiumNames, ", "))
	return ""
}

// browser is one headless Chromium process with a fresh profile. Each tab
// it opens has its own browser context, so its own cookie jar: two tabs are
// two people.
type browser struct {
	tb  testing.TB
	ctx context.Context // the browser's first tab; tabs are its children

	dirOnce sync.Once
	dir     string // where failure screenshots go
}

func newBrowser(tb testing.TB) *browser {
	tb.Helper()
	exe := chromiumPath(tb)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	// Not t.Context(): it ends before cleanups run, and the failure
	// screenshots are taken in a cleanup.
	root, stop := context.WithTimeout(context.Background(), browserLifetime)
	alloc, cancelAlloc := chromedp.NewExecAllocator(root, opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
		stop()
	})
	// The first Do starts Chromium; it must not carry a shorter deadline,
	// which would stop the browser when it passed.
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("start Chromium (%s): %v", exe, err)
	}
	return &browser{tb: tb, ctx: ctx}
}

// screenshotDir is $CHORUS_SCREENSHOT_DIR, or a directory of its own that
// outlives the test (t.TempDir would be removed with the evidence).
func (b *browser) screenshotDir() (string, error) {
	var err error
	b.dirOnce.Do(func() {
		if d := os.Getenv("CHORUS_SCREENSHOT_DIR"); d != "" {
			b.dir, err = d, os.MkdirAll(d, 0o755)
			return
		}
		b.dir, err = os.MkdirTemp("", "chorus-browser-")
	})
	return b.dir, err
}

// tab is one page of the client, signed in (or not) as one person.
type tab struct {
	tb    testing.TB
	b     *browser
	name  string
	base  string // the server's URL
	ctx   context.Context
	close context.CancelFunc

	mu     sync.Mutex
	log    []string // console messages, exceptions and dialogs
	closed bool
}

// newTab opens a tab in a browser context of its own. On failure the test
// saves a full-page screenshot of it and logs what its console said.
func (b *browser) newTab(tb testing.TB, name, base string) *tab {
	tb.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	p := &tab{tb: tb, b: b, name: name, base: base, ctx: ctx}
	var watchers sync.WaitGroup
	p.close = func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		cancel()
		watchers.Wait()
	}
	tb.Cleanup(p.close)
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("%s: open tab: %v", name, err)
	}

	console := chromedp.Console(ctx)
	watchers.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			p.note("console %s: %s", m.Type, m.Text)
		}
	})
	// The client asks nothing through alert/confirm today; should it start
	// to, accept rather than hang the tab, and say so in the log.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	watchers.Go(func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			p.note("dialog %s: %q (accepted)", ev.Type, ev.Message)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	})

	tb.Cleanup(func() {
		if !tb.Failed() {
			return
		}
		p.mu.Lock()
		lines, closed := strings.Join(p.log, "\n  "), p.closed
		p.mu.Unlock()
		if lines != "" {
			tb.Logf("%s: browser log:\n  %s", name, lines)
		}
		if closed {
			return
		}
		p.screenshot("failed")
	})
	return p
}

// signedInTab is a new tab named login on base, signed in through the
// sign-in form as login, whose password is "password-" + login.
func (b *browser) signedInTab(tb testing.TB, base, login string) *tab {
	tb.Helper()
	p := b.newTab(tb, login, base)
	p.signInUI(login, "password-"+login)
	return p
}

func (p *tab) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, fmt.Sprintf(format, args...))
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// screenshot saves a full-page PNG of the tab and logs where.
func (p *tab) screenshot(label string) string {
	dir, err := p.b.screenshotDir()
	if err != nil {
		p.tb.Logf("%s: no screenshot directory: %v", p.name, err)
		return ""
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.tb.Logf("%s: screenshot: %v", p.name, err)
		return ""
	}
	file := filepath.Join(dir, unsafeFileChars.ReplaceAllString(p.tb.Name()+"-"+p.name+"-"+label, "_")+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.tb.Logf("%s: screenshot: %v", p.name, err)
		return ""
	}
	p.tb.Logf("%s: screenshot saved to %s", p.name, file)
	return file
}

// do runs steps under the step deadline.
func (p *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.tb.Fatalf("%s: %s: %v", p.name, what, err)
	}
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](p *tab, expr string) T {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.tb.Fatalf("%s: evaluate %s: %v", p.name, expr, err)
	}
	return v
}

// waitUntil evaluates check, a JavaScript expression that gives "" once
// the page is as wanted and otherwise says what it shows instead, until it
// gives "" or within passes.
func (p *tab) waitUntil(what string, within time.Duration, check string) {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, within)
	defer cancel()
	last := ""
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](check))
		switch {
		case err == nil && got == "":
			return
		case err == nil:
			last = got
		case ctx.Err() == nil:
			last = err.Error() // say, the page is between documents
		}
		select {
		case <-ctx.Done():
			p.tb.Fatalf("%s: %s: not after %s: %s", p.name, what, within, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// js quotes a Go string as a JavaScript string literal.
func js(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// testID is the CSS selector of data-testid id, narrowed by more.
func testID(id string, more ...string) string {
	return fmt.Sprintf(`[data-testid=%q]%s`, id, strings.Join(more, ""))
}

// open loads path of the server in the tab.
func (p *tab) open(path string) {
	p.tb.Helper()
	p.do("open "+path, chromedp.Navigate(p.base+path))
}

// goTo moves the client to path without reloading the page, the way a
// reader does: by clicking a link to it, which the router intercepts.
func (p *tab) goTo(path string) {
	p.tb.Helper()
	eval[chromedp.Void](p, `void (() => {
		const a = document.createElement('a');
		a.href = `+js(path)+`;
		document.body.append(a);
		a.click();
		a.remove();
	})()`)
	p.waitUntil("at "+path, stepTimeout, `location.pathname === `+js(path)+` ? '' : 'at ' + location.pathname`)
}

// press types keys into whatever has the focus, as a keyboard does: each
// key's text rides on its keydown, so a page that cancels the keydown
// types nothing (chromedp.KeyEvent sends the text as a separate event that
// no keydown handler can cancel).
func (p *tab) press(keys string) {
	p.tb.Helper()
	p.do("press "+keys, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range keys {
			events := kb.Encode(r)
			var text string
			for _, ev := range events {
				if ev.Type == kb.KeyChar {
					text = ev.Text
				}
			}
			for _, ev := range events {
				if ev.Type == kb.KeyChar {
					continue
				}
				if ev.Type == kb.KeyDown {
					ev.Text, ev.UnmodifiedText = text, text
				}
				if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, *ev); err != nil {
					return err
				}
			}
		}
		return nil
	}))
}

// viewport sets the tab's window size; mobile also emulates a phone's
// touch screen.
func (p *tab) viewport(width, height int64, mobile bool) {
	p.tb.Helper()
	opts := []chromedp.EmulateViewportOption{}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))
	}
	p.do(fmt.Sprintf("viewport %dx%d", width, height), chromedp.EmulateViewport(width, height, opts...))
}

// colorScheme makes the page see prefers-color-scheme: scheme ("light" or "dark").
func (p *tab) colorScheme(scheme string) {
	p.tb.Helper()
	p.do("color scheme "+scheme, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	}))
}

// keep saves a screenshot of the tab for a person to look at, when
// CHORUS_SCREENSHOT_DIR names where.
func (p *tab) keep(label string) {
	p.tb.Helper()
	if os.Getenv("CHORUS_SCREENSHOT_DIR") == "" {
		return
	}
	time.Sleep(300 * time.Millisecond) // let colour transitions end
	p.screenshot(label)
}

func (p *tab) click(sel string) {
	p.tb.Helper()
	p.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// typeInto types text into the field sel, key by key.
func (p *tab) typeInto(sel, text string) {
	p.tb.Helper()
	p.do("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

func (p *tab) waitVisible(sel string) {
	p.tb.Helper()
	p.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// waitLive waits for the header's connection state to say the stream is up.
func (p *tab) waitLive() {
	p.tb.Helper()
	p.waitUntil("connection state live", stepTimeout, `(() => {
		const el = document.querySelector('[data-testid="conn-state"]');
		if (!el) return 'no conn-state element';
		return el.dataset.state === 'live' ? '' : 'conn-state is ' + el.dataset.state;
	})()`)
}

// signUpUI creates an account through the sign-up form and waits for the
// signed-in client.
func (p *tab) signUpUI(login, name, password string) {
	p.tb.Helper()
	p.open("/")
	p.waitVisible(testID("signin-form"))
	p.click(testID("show-signup"))
	form := testID("signup-form")
	p.waitVisible(form)
	p.typeInto(form+` input[name="login"]`, login)
	p.typeInto(form+` input[name="name"]`, name)
	p.typeInto(form+` input[name="password"]`, password)
	p.click(form + ` button[type="submit"]`)
	p.waitUntil("signed in as "+login, stepTimeout, `(() => {
		const me = document.querySelector('[data-testid="me"]');
		const err = document.querySelector('[data-testid="form-error"]:not([hidden])');
		if (err) return 'form error: ' + err.textContent;
		if (!me) return 'not signed in yet';
		return me.textContent === `+js(login)+` ? '' : 'signed in as ' + me.textContent;
	})()`)
}

// followUI opens login's profile and presses Follow.
func (p *tab) followUI(login string) {
	p.tb.Helper()
	p.goTo("/u/" + login)
	btn := testID("follow-button")
	p.waitUntil("Follow button for "+login, stepTimeout, `(() => {
		const b = document.querySelector(`+js(btn)+`);
		if (!b) return 'no follow button';
		if (b.disabled) return 'follow button disabled';
		return /^Follow( back)?$/.test(b.textContent) ? '' : 'follow button says ' + b.textContent;
	})()`)
	p.click(btn)
	p.waitUntil("following "+login, stepTimeout, `(() => {
		const b = document.querySelector(`+js(btn)+`);
		const err = document.querySelector('[data-testid="profile-error"]:not([hidden])');
		if (err) return 'profile error: ' + err.textContent;
		return b && b.textContent === 'Unfollow' && !b.disabled ? '' : 'button says ' + (b && b.textContent);
	})()`)
}

// postUI posts message through the composer of the home page.
func (p *tab) postUI(message string) {
	p.tb.Helper()
	input := testID("composer-input")
	p.waitVisible(input)
	p.typeInto(input, message)
	p.click(testID("composer-submit"))
	p.waitUntil("composer emptied after posting", stepTimeout, `(() => {
		const err = document.querySelector('[data-testid="composer-error"]:not([hidden])');
		if (err) return 'composer error: ' + err.textContent;
		const v = document.querySelector(`+js(input)+`).value;
		return v === '' ? '' : 'composer still holds ' + JSON.stringify(v);
	})()`)
}

// deleteUI deletes the status id shown in list through its Delete button
// and the confirmation it asks for.
func (p *tab) deleteUI(list, id string) {
	p.tb.Helper()
	item := testID(list, ` [data-id="`+id+`"] `)
	p.click(item + testID("status-delete"))
	p.waitVisible(item + testID("status-delete-confirm"))
	p.click(item + testID("status-delete-confirm"))
}

// statusIn is a check that list (a data-testid) shows exactly one status
// whose message text is message.
func statusIn(list, message string) string {
	return `(() => {
		const list = document.querySelector(` + js(testID(list)) + `);
		if (!list) return 'no ` + list + ` list';
		const all = [...list.querySelectorAll('[data-testid="status"]')];
		const hits = all.filter((li) => li.querySelector('[data-testid="status-message"]')?.textContent === ` + js(message) + `);
		if (hits.length === 1) return '';
		return hits.length + ' matching of ' + all.length + ' statuses: ' +
			JSON.stringify(all.map((li) => li.querySelector('[data-testid="status-message"]')?.textContent));
	})()`
}

// statusID is the id of the status in list whose message is message.
func (p *tab) statusID(list, message string) string {
	p.tb.Helper()
	return eval[string](p, `[...document.querySelectorAll(`+js(testID(list, ` [data-testid="status"]`))+`)]
		.find((li) => li.querySelector('[data-testid="status-message"]')?.textContent === `+js(message)+`)?.dataset.id ?? ''`)
}
