package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"chorus/social"
)

// accessibleName is the name Chromium computes for the element sel
// selects, as a screen reader or voice control gets it.
func accessibleName(p *tab, sel string) string {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	el, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: `document.querySelector(` + js(sel) + `)`})
	if err != nil || el.Result == nil || el.Result.ObjectID == "" {
		p.tb.Fatalf("%s: find %s: %v", p.name, sel, err)
	}
	only := false
	tree, err := chromedp.Call(ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: el.Result.ObjectID, FetchRelatives: &only})
	if err != nil || len(tree.Nodes) == 0 || tree.Nodes[0].Name == nil {
		p.tb.Fatalf("%s: accessible name of %s: %v", p.name, sel, err)
	}
	var name string
	if err := json.Unmarshal(tree.Nodes[0].Name.Value, &name); err != nil {
		p.tb.Fatalf("%s: accessible name of %s: %v", p.name, sel, err)
	}
	return name
}

// A status's time link shows "2h" and is named in words for a screen
// reader; its name holds what it shows too, so that saying or typing the
// visible text finds it (axe's label-content-name-mismatch). The page's
// clock is moved on to see each form: seconds, hours, and a date.
func TestBrowserTimeLinkName(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUp(t, "ada")
	st := ada.post("Notes on the analytical engine")

	br := newBrowser(t)
	v := br.newTab(t, "visitor", in.srv.URL)
	v.open("/u/ada")
	v.waitUntil("ada's post", stepTimeout, atPage("/u/ada", "timeline", st.Message))
	link := testID("timeline", fmt.Sprintf(` [data-id="%d"] a.status-time`, st.ID))

	const hour = 3600 * 1000
	for _, ahead := range []int{0, 30 * 1000, 2 * hour, 3 * 24 * hour} {
		ctx, cancel := context.WithTimeout(v.ctx, stepTimeout)
		_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`import('/static/time.js').then((m) => {
			m.setServerOffset(%d);
			m.refreshTimes();
		})`, ahead), chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			t.Fatalf("move the clock %d ms on: %v", ahead, err)
		}
		shown := strings.TrimSpace(eval[string](v, `document.querySelector(`+js(link)+`).innerText`))
		name := accessibleName(v, link)
		t.Logf("%d ms on: shows %q, named %q", ahead, shown, name)
		if shown == "" || !strings.Contains(strings.ToLower(name), strings.ToLower(shown)) {
			t.Errorf("%d ms on: the link shows %q but is named %q", ahead, shown, name)
		}
		if !strings.Contains(name, " ") {
			t.Errorf("%d ms on: the link is named %q, not in words", ahead, name)
		}
	}
}
