package web_test

import (
	"net/http"
	"testing"
	"time"

	"chorus/social"
)

// Two people, each in a browser context of their own, use the real client
// against a real server: they sign up and befriend each other through the
// UI, then one sees the other's presence and posts come and go live.
func TestBrowserFriendsLive(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	br := newBrowser(t)
	alice := br.newTab(t, "alice", in.srv.URL)
	bob := br.newTab(t, "bob", in.srv.URL)

	alice.signUpUI("alice", "Alice Liddell", "password-alice")
	alice.waitLive()
	// Bob's browser context must not share Alice's cookie jar: his first
	// visit, after Alice has a session, is signed out.
	bob.open("/")
	bob.waitVisible(testID("signin-form"))
	if got := eval[bool](bob, `document.querySelector('[data-testid="me"]') !== null`); got {
		t.Fatal("bob's tab is signed in before signing up: the browser contexts share cookies")
	}
	bob.signUpUI("bob", "Bob Bobson", "password-bob")
	bob.waitLive()
	if got := eval[string](alice, `document.querySelector('[data-testid="me"]').textContent`); got != "alice" {
		t.Fatalf("alice's tab now shows %q signed in: the browser contexts share cookies", got)
	}

	alice.followUI("bob")
	bob.goTo("/u/alice")
	bob.waitUntil("Follow back on the profile of one who follows bob", stepTimeout, `(() => {
		const b = document.querySelector('[data-testid="follow-button"]');
		return b && b.textContent === 'Follow back' ? '' : 'button says ' + (b ? b.textContent : 'nothing');
	})()`)
	bob.followUI("alice")

	onlineAlice := testID("online-friends", ` `, testID("online-friend", `[data-login="alice"]`))
	awayAlice := testID("online-friends", ` `, testID("away-friend", `[data-login="alice"]`))
	bob.waitUntil("sidebar shows alice online", 5*time.Second, `(() => {
		if (document.querySelector(`+js(onlineAlice)+`)) return '';
		const panel = document.querySelector('[data-testid="online-friends"]');
		return panel ? 'sidebar: ' + panel.innerText.replace(/\s+/g, ' ') : 'no online-friends panel';
	})()`)

	// Both on their home pages; Bob's page is never reloaded from here on.
	alice.goTo("/")
	bob.goTo("/")
	bob.waitVisible(testID("feed"))
	eval[bool](bob, `window.__sameDocument = true`)

	hello := "Hello from Alice, live from the tea party"
	alice.postUI(hello)
	alice.waitUntil("own post in alice's feed", 5*time.Second, statusIn("feed", hello))
	bob.waitUntil("alice's post in bob's feed", 5*time.Second, statusIn("feed", hello))
	id := bob.statusID("feed", hello)
	if mine := alice.statusID("feed", hello); mine != id || id == "" {
		t.Fatalf("status id in alice's feed %q, in bob's %q", mine, id)
	}
	if !eval[bool](bob, `window.__sameDocument === true`) {
		t.Fatal("bob's page was reloaded to show the post")
	}
	if n := eval[int](bob, `document.querySelectorAll('[data-testid="feed"] [data-id="`+id+`"] [data-testid="status-delete"]').length`); n != 0 {
		t.Fatalf("bob sees %d delete buttons on alice's status", n)
	}

	alice.deleteUI("feed", id)
	gone := `(() => document.querySelector('[data-testid="feed"] [data-testid="status"][data-id="` + id + `"]') ? 'status ` + id + ` still shown' : '')()`
	alice.waitUntil("deleted status gone from alice's feed", 5*time.Second, gone)
	bob.waitUntil("deleted status gone from bob's feed", 5*time.Second, gone)

	// Markup in a status is text, never markup or script, for its reader.
	// (innerHTML never runs a <script>, but it would run the onerror.)
	for _, raw := range []string{
		`<script>window.__pwned=1</script><b>bold</b>`,
		`<img src="/nowhere" onerror="window.__pwned=2">`,
	} {
		alice.postUI(raw)
		bob.waitUntil("the HTML status in bob's feed", 5*time.Second, statusIn("feed", raw))
		for _, p := range []*tab{alice, bob} {
			got := eval[string](p, `(() => {
				const msg = [...document.querySelectorAll('[data-testid="feed"] [data-testid="status-message"]')]
					.find((el) => el.textContent === `+js(raw)+`);
				if (!msg) return 'no status-message with the raw text';
				if (msg.children.length > 0) return 'markup inside status-message: ' + msg.innerHTML;
				if (typeof window.__pwned !== 'undefined') return 'the script ran: window.__pwned = ' + window.__pwned;
				return '';
			})()`)
			if got != "" {
				t.Errorf("%s: %s", p.name, got)
			}
		}
	}
	if !eval[bool](bob, `window.__sameDocument === true`) {
		t.Fatal("bob's page was reloaded")
	}

	// Alice closes her tab: her stream closes and Bob sees her away.
	closed := time.Now()
	alice.close()
	bob.waitUntil("sidebar shows alice away", 5*time.Second, `(() => {
		if (document.querySelector(`+js(onlineAlice)+`)) return 'alice still listed online';
		if (!document.querySelector(`+js(awayAlice)+`)) return 'alice not listed away: ' +
			document.querySelector('[data-testid="online-friends"]').innerText.replace(/\s+/g, ' ');
		return '';
	})()`)
	t.Logf("bob saw alice away %s after her tab began to close", time.Since(closed).Round(time.Millisecond))

	// Alice, elsewhere (through the API), unfollows Bob: she is no friend
	// any more and leaves his panel, told by the stream.
	api := in.anon(t)
	var session struct{ Token string }
	api.must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "alice", "password": "password-alice"}, &session)
	api.token = session.Token
	api.unfollow("bob")
	bob.waitUntil("alice gone from the friends panel", 5*time.Second, `(() => {
		if (document.querySelector(`+js(onlineAlice)+`) || document.querySelector(`+js(awayAlice)+`))
			return 'alice still listed: ' + document.querySelector('[data-testid="online-friends"]').innerText.replace(/\s+/g, ' ');
		return '';
	})()`)
}

// A wrong password shows the API's own message in the form; the right one
// then signs in and the stream goes live.
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	in.signUp(t, "carol") // password "password-carol"

	wrong := in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "carol", "password": "not-her-password"})
	if wrong.Status != http.StatusUnauthorized {
		t.Fatalf("wrong password: got %d %s, want 401", wrong.Status, wrong.Body)
	}
	var apiErr struct {
		Error struct{ Code, Message string }
	}
	wrong.decode(t, &apiErr)

	br := newBrowser(t)
	carol := br.newTab(t, "carol", in.srv.URL)
	carol.open("/")
	form := testID("signin-form")
	carol.waitVisible(form)
	carol.typeInto(form+` input[name="login"]`, "carol")
	carol.typeInto(form+` input[name="password"]`, "not-her-password")
	carol.click(form + ` button[type="submit"]`)
	carol.waitUntil("the API's message in form-error", stepTimeout, `(() => {
		const el = document.querySelector('[data-testid="form-error"]');
		if (!el) return 'no form-error element';
		if (el.hidden) return 'form-error hidden';
		return el.textContent === `+js(apiErr.Error.Message)+` ? '' : 'form-error says ' + JSON.stringify(el.textContent);
	})()`)
	if eval[bool](carol, `document.querySelector('[data-testid="conn-state"]') !== null`) {
		t.Fatal("signed in with a wrong password")
	}

	eval[string](carol, `document.querySelector(`+js(form+` input[name="password"]`)+`).value = ''`)
	carol.typeInto(form+` input[name="password"]`, "password-carol")
	carol.click(form + ` button[type="submit"]`)
	carol.waitLive()
	if got := eval[string](carol, `document.querySelector('[data-testid="me"]').textContent`); got != "carol" {
		t.Fatalf("signed in as %q, want carol", got)
	}
}
