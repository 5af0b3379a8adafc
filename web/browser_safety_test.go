package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
)

// Block from a post's "…" menu: the question, then the post leaves the
// feed and the server holds the block; the profile's menu then offers
// Unblock, which takes it back.
func TestBrowserBlockFromPostMenu(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	one := in.start()
	ada := one.signUpAs(t, "ada", "Ada Lovelace")
	bob := one.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")
	bob.follow("ada")
	bob.post("hello from bob")

	br := newBrowser(t)
	p := br.signedInTab(t, one.srv.URL, "ada")
	p.waitUntil("bob's post in the feed", stepTimeout, statusIn("feed", "hello from bob"))
	id := p.statusID("feed", "hello from bob")
	item := testID("feed", ` [data-id="`+id+`"] `)
	p.click(item + testID("status-menu"))
	p.waitVisible(item + testID("block"))
	p.click(item + testID("block"))
	p.waitVisible(item + testID("block-confirm"))
	p.click(item + testID("block-confirm"))
	p.waitUntil("bob's post gone from the feed", stepTimeout, `document.querySelector(`+js(item)+`) === null ? '' : 'still shown'`)
	testio.Eventually(t, 5*time.Second, func() string {
		if u := ada.user("bob"); u.Blocking != nil && *u.Blocking && !*u.YouFollow && !*u.FollowsYou {
			return ""
		}
		return "the server does not say ada blocks bob, following neither way"
	})

	p.goTo("/u/bob")
	p.waitVisible(testID("profile-menu"))
	p.click(testID("profile-menu"))
	p.waitVisible(testID("unblock"))
	p.click(testID("unblock"))
	p.waitVisible(testID("profile-menu-items") + " " + testID("block"))
	testio.Eventually(t, 5*time.Second, func() string {
		if u := ada.user("bob"); u.Blocking != nil && !*u.Blocking {
			return ""
		}
		return "ada still blocks bob"
	})
}

// A link a user writes into this site's API (an export of the reader's
// account, whose click would spend one of their exports) is shown as text,
// in a status and in a bio, written plainly or with its path escaped, or
// with the other scheme or another port of this host (which a redirect to
// https, or HSTS, would bring to the API all the same), while a link
// elsewhere stays a link. And the client runs with Trusted Types
// enforced: a string given to innerHTML throws.
func TestBrowserLinksIntoTheAPIStayText(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	mal := in.signUp(t, "mallory")
	ada := in.signUp(t, "ada")
	ada.follow("mallory")
	host := strings.TrimPrefix(in.srv.URL, "http://")
	message := "free stuff: " + in.srv.URL + "/api/v1/me/export and https://" + host + "/api/v1/me/export and http://" +
		strings.Split(host, ":")[0] + ":1/api/v1/me and https://example.com/fine"
	mal.post(message)
	bio := "see " + in.srv.URL + "/%61pi/v1/me/export or https://example.com/me"
	mal.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": bio}, nil)

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("mallory's status", stepTimeout, statusIn("feed", message))
	links := func(sel string) string {
		return `[...document.querySelector(` + js(sel) + `).querySelectorAll('a')].map((a) => a.href).join(' ')`
	}
	if got := eval[string](p, links(testID("status-message"))); got != "https://example.com/fine" {
		t.Errorf("the status's links: %q, want the one to example.com alone", got)
	}
	p.goTo("/u/mallory")
	p.waitUntil("mallory's bio", stepTimeout, `document.querySelector(`+js(testID("profile-bio"))+`)?.textContent === `+js(bio)+` ? '' : 'no bio yet'`)
	if got := eval[string](p, links(testID("profile-bio"))); got != "https://example.com/me" {
		t.Errorf("the bio's links: %q, want the one to example.com alone", got)
	}
	if got := eval[string](p, `(() => {
		try {
			document.createElement('div').innerHTML = '<b>x</b>';
			return 'innerHTML took a string';
		} catch (e) {
			return e.name;
		}
	})()`); got != "TypeError" {
		t.Errorf("a string given to innerHTML: %s, want a TypeError (Trusted Types)", got)
	}
}

// bob has the profile of ada, his friend, open when she blocks him: the
// friendship's end, which his stream is told, turns his Unfollow back to
// Follow with the counts. Read again, her page counts her post but shows
// none, and says there is none to show rather than none yet, and nothing
// of the block.
func TestBrowserBlockedOnAnOpenProfile(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{})
	srv := in.start()
	ada := srv.signUpAs(t, "ada", "Ada Lovelace")
	bob := srv.signUpAs(t, "bob", "Bob Babbage")
	befriend(ada, bob)
	ada.post("Not for bob's eyes, soon")

	br := newBrowser(t)
	p := br.signedInTab(t, srv.srv.URL, "bob")
	p.goTo("/u/ada")
	button := `document.querySelector(` + js(testID("follow-button")) + `)?.textContent`
	p.waitUntil("Unfollow offered", stepTimeout, button+` === 'Unfollow' ? '' : 'says ' + `+button)
	p.waitLive()

	ada.must(http.StatusNoContent, "PUT", "/api/v1/blocks/bob", nil, nil)
	p.waitUntil("Follow offered again", stepTimeout, button+` === 'Follow' ? '' : 'says ' + `+button)
	p.open("/u/ada")
	empty := `document.querySelector(` + js(testID("profile-empty")) + `)`
	p.waitUntil("no post to show", stepTimeout, empty+`?.textContent === 'No posts to show.' && !`+empty+`.hidden ? '' : 'says ' + `+empty+`?.textContent`)
}

// ada mutes cat, whom she follows, from the "…" menu of cat's post: the
// post leaves her feed. She unmutes cat in Settings and goes Home: cat's
// post is back, without a reload, as the server's home timeline has it.
func TestBrowserUnmuteInSettingsBringsPostsHome(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	cat := in.signUpAs(t, "cat", "Cat Herder")
	ada.follow("cat")
	st := cat.post("cat one")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.waitUntil("cat's post in the feed", stepTimeout, statusIn("feed", "cat one"))
	item := testID("feed", fmt.Sprintf(` > [data-id="%d"] `, st.ID))
	p.click(item + testID("status-menu"))
	p.click(item + testID("mute"))
	p.click(item + testID("mute-confirm"))
	p.waitUntil("cat's post gone", stepTimeout, `document.querySelector('[data-testid="feed"] [data-author="cat"]') ? 'still shown' : ''`)

	p.goTo("/settings")
	p.waitUntil("the mute listed", stepTimeout, usersListed("mutes", "cat"))
	p.click(testID("settings-mutes", ` [data-login="cat"] [data-testid="settings-mutes-undo"]`))
	p.waitUntil("cat unmuted", stepTimeout, usersListed("mutes", ""))
	if got := ids(ada.timeline("/api/v1/timelines/home").Statuses); len(got) != 1 || got[0] != st.ID {
		t.Fatalf("ada's home timeline on the server after the unmute: %v, want [%d]", got, st.ID)
	}
	p.click(`#nav a[data-route="home"]`)
	p.waitUntil("at home", stepTimeout, `location.pathname === '/' ? '' : 'at ' + location.pathname`)
	p.waitUntil("cat's post back in the feed", stepTimeout, statusIn("feed", "cat one"))
}

// ada has her feed open when she unmutes cat on another device: cat's
// post, left out of the feed while the mute stood, shows at once.
func TestBrowserUnmuteElsewhereShowsPostsInOpenFeed(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	cat := in.signUpAs(t, "cat", "Cat Herder")
	ada.follow("cat")
	cat.post("cat one")
	ada.post("ada one")
	ada.must(http.StatusNoContent, "PUT", "/api/v1/mutes/cat", nil, nil)

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.waitUntil("ada's post in the feed", stepTimeout, statusIn("feed", "ada one"))
	p.waitUntil("cat's post left out", stepTimeout, `document.querySelector('[data-testid="feed"] [data-author="cat"]') ? 'shown' : ''`)

	ada.must(http.StatusNoContent, "DELETE", "/api/v1/mutes/cat", nil, nil)
	p.waitUntil("cat's post in the feed, live", stepTimeout, statusIn("feed", "cat one"))
	p.waitUntil("ada's post still there", stepTimeout, statusIn("feed", "ada one"))
}

// bob, whom ada follows, reposted cat's post. ada blocks cat from cat's
// profile: the repost leaves her feed. She unblocks cat from the same
// menu and goes Home: bob's repost of cat's post is back (the unblock
// restores no follow, but lets cat's posts in again).
func TestBrowserUnblockOnProfileBringsRepostsHome(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	cat := in.signUpAs(t, "cat", "Cat Herder")
	ada.follow("bob")
	st := cat.post("cat one")
	bob.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/statuses/%d/repost", st.ID), nil, nil)

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitLive()
	p.waitUntil("bob's repost in the feed", stepTimeout, statusIn("feed", "cat one"))

	p.goTo("/u/cat")
	p.waitVisible(testID("profile-menu"))
	p.click(testID("profile-menu"))
	p.click(testID("profile-menu-items") + " " + testID("block"))
	p.click(testID("profile-menu-items") + " " + testID("block-confirm"))
	p.waitVisible(testID("profile-menu-items") + " " + testID("unblock"))
	p.click(`#nav a[data-route="home"]`)
	p.waitUntil("at home", stepTimeout, `location.pathname === '/' ? '' : 'at ' + location.pathname`)
	p.waitUntil("the repost gone", stepTimeout, `document.querySelector('[data-testid="feed"] [data-author="cat"]') ? 'still shown' : ''`)

	p.goTo("/u/cat")
	p.waitVisible(testID("profile-menu"))
	p.click(testID("profile-menu"))
	p.click(testID("profile-menu-items") + " " + testID("unblock"))
	p.waitVisible(testID("profile-menu-items") + " " + testID("block"))
	testio.Eventually(t, 5*time.Second, func() string {
		if u := ada.user("cat"); u.Blocking != nil && !*u.Blocking {
			return ""
		}
		return "ada still blocks cat"
	})
	p.click(`#nav a[data-route="home"]`)
	p.waitUntil("at home", stepTimeout, `location.pathname === '/' ? '' : 'at ' + location.pathname`)
	p.waitUntil("bob's repost back in the feed", stepTimeout, statusIn("feed", "cat one"))
}

// A keyboard user opens a post's "…" menu with Enter on its button, where
// the focus stays, and closes it with Escape there, as from within it.
func TestBrowserEscapeClosesPostMenu(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada := in.signUpAs(t, "ada", "Ada Lovelace")
	bob := in.signUpAs(t, "bob", "Bob Babbage")
	ada.follow("bob")
	st := bob.post("a post by bob")

	br := newBrowser(t)
	p := br.signedInTab(t, in.srv.URL, "ada")
	p.waitUntil("the post", stepTimeout, statusIn("feed", st.Message))
	item := testID("feed", fmt.Sprintf(` [data-testid="status"][data-id="%d"] `, st.ID))
	closed := `(() => {
		const items = document.querySelector(` + js(item+testID("status-menu-items")) + `);
		const btn = document.querySelector(` + js(item+testID("status-menu")) + `);
		if (!items.hidden) return 'the menu open, aria-expanded ' + btn.getAttribute('aria-expanded');
		return document.activeElement === btn ? '' : 'the focus elsewhere';
	})()`
	for _, from := range []string{"the button", "the menu"} {
		eval[bool](p, `(document.querySelector(`+js(item+testID("status-menu"))+`).focus(), true)`)
		p.press("\r")
		p.waitVisible(item + testID("status-menu-items"))
		if from == "the menu" {
			eval[bool](p, `(document.querySelector(`+js(item+testID("status-menu-items")+" button")+`).focus(), true)`)
		}
		p.press("\u001b")
		p.waitUntil("Escape from "+from+" closes the menu", stepTimeout, closed)
	}
}
