package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"chorus/protocol"
	"chorus/social"
	"chorus/web"
)

// A block between two friends with streams open on two instances ends the
// friendship on both streams at once (friend_removed), and from then on
// neither is shown the other's presence: no frame when one comes back, no
// online friend, no online or last_seen in user views.
func TestBlockHidesPresenceOnOpenStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	alice, bob := one.signUp(t, "alice"), two.signUp(t, "bob")
	befriend(alice, bob)
	as := one.as(alice).connect()
	bs := two.as(bob).connect()
	if p := as.nextOf("presence", 5*time.Second); p.login(t) != "bob" || !p.Online {
		t.Fatalf("alice got %+v, want bob online", p)
	}
	if u := alice.user("bob"); u.Online == nil || !*u.Online {
		t.Fatalf("alice sees bob as %+v before the block, want online", u)
	}

	alice.must(http.StatusNoContent, "PUT", "/api/v1/blocks/bob", nil, nil)
	if f := as.nextOf("friend_removed", 5*time.Second); f.login(t) != "bob" {
		t.Fatalf("alice got %+v, want bob removed", f)
	}
	if f := bs.nextOf("friend_removed", 5*time.Second); f.login(t) != "alice" {
		t.Fatalf("bob got %+v, want alice removed", f)
	}

	// Bob goes and comes back, on the other instance; alice does too.
	bs.close()
	bs = one.as(bob).connect()
	if len(bs.ready.OnlineFriends) != 0 {
		t.Fatalf("bob's ready lists %+v online", bs.ready.OnlineFriends)
	}
	as.close()
	as = two.as(alice).connect()
	if len(as.ready.OnlineFriends) != 0 {
		t.Fatalf("alice's ready lists %+v online", as.ready.OnlineFriends)
	}
	as.send(map[string]string{"type": "heartbeat"})
	bs.send(map[string]string{"type": "heartbeat"})
	as.quiet("presence", time.Second)
	bs.quiet("presence", 100*time.Millisecond)

	for _, c := range []struct {
		viewer *client
		login  string
	}{{alice, "bob"}, {bob, "alice"}} {
		u := c.viewer.user(c.login)
		if u.Online != nil || u.LastSeen != nil {
			t.Errorf("%s sees %s's presence: online %v, last_seen %v", c.viewer.login, c.login, u.Online, u.LastSeen)
		}
		var online struct{ Friends []any }
		c.viewer.must(http.StatusOK, "GET", "/api/v1/friends/online", nil, &online)
		if len(online.Friends) != 0 {
			t.Errorf("%s's online friends: %+v", c.viewer.login, online.Friends)
		}
	}
	if u := alice.user("bob"); u.Blocking == nil || !*u.Blocking || *u.YouFollow || *u.FollowsYou {
		t.Errorf("alice sees bob as %+v, want blocking, no follows", u)
	}
	if u := bob.user("alice"); u.Blocking == nil || *u.Blocking {
		t.Errorf("bob sees alice as %+v, want not blocking (he is told nothing)", u)
	}

	// Neither may follow the other again.
	for _, c := range []*client{alice, bob} {
		other := map[string]string{"alice": "bob", "bob": "alice"}[c.login]
		if res := c.do("PUT", "/api/v1/following/"+other, nil); res.Status != http.StatusForbidden || res.errorCode(t) != "blocked" {
			t.Errorf("%s follows %s: %d %s, want 403 blocked", c.login, other, res.Status, res.Body)
		}
	}
	as.quiet("presence", 300*time.Millisecond)
}

func TestBlockAndMuteAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in := e.start()
	ann, bob := in.signUp(t, "ann"), in.signUp(t, "bob")
	in.signUp(t, "cat")
	bobs := bob.post("hello from bob")
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"PUT", "/api/v1/blocks/ann", http.StatusBadRequest, "cannot_block_self"},
		{"PUT", "/api/v1/mutes/ANN", http.StatusBadRequest, "cannot_block_self"},
		{"DELETE", "/api/v1/blocks/ann", http.StatusBadRequest, "cannot_block_self"},
		{"PUT", "/api/v1/blocks/nobody", http.StatusNotFound, "not_found"},
		{"DELETE", "/api/v1/mutes/nobody", http.StatusNotFound, "not_found"},
		{"PUT", "/api/v1/blocks/no%20such", http.StatusNotFound, "not_found"},
		{"GET", "/api/v1/blocks?limit=0", http.StatusBadRequest, "invalid_limit"},
		{"PUT", "/api/v1/blocks/", http.StatusNotFound, "not_found"},
	} {
		res := ann.do(c.method, c.path, nil)
		if res.Status != c.status || res.errorCode(t) != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, res.Status, res.Body, c.status, c.code)
		}
	}
	for _, path := range []string{"/api/v1/blocks/bob", "/api/v1/mutes/bob", "/api/v1/blocks", "/api/v1/mutes"} {
		method := "PUT"
		if path == "/api/v1/blocks" || path == "/api/v1/mutes" {
			method = "GET"
		}
		if res := in.anon(t).do(method, path, nil); res.Status != http.StatusUnauthorized {
			t.Errorf("%s %s unsigned: %d, want 401", method, path, res.Status)
		}
	}

	ann.must(http.StatusNoContent, "PUT", "/api/v1/mutes/cat", nil, nil)
	ann.must(http.StatusNoContent, "PUT", "/api/v1/mutes/cat", nil, nil)
	ann.must(http.StatusNoContent, "PUT", "/api/v1/blocks/bob", nil, nil)
	var page struct{ Users []userJSON }
	ann.must(http.StatusOK, "GET", "/api/v1/blocks", nil, &page)
	if len(page.Users) != 1 || page.Users[0].Login != "bob" || !*page.Users[0].Blocking || *page.Users[0].Muting {
		t.Fatalf("ann's blocks: %+v, want bob, blocking", page.Users)
	}
	ann.must(http.StatusOK, "GET", "/api/v1/mutes", nil, &page)
	if len(page.Users) != 1 || page.Users[0].Login != "cat" || !*page.Users[0].Muting || *page.Users[0].Blocking {
		t.Fatalf("ann's mutes: %+v, want cat, muting", page.Users)
	}

	// A reply either way is refused; the global timeline leaves bob out
	// for ann only.
	if res := bob.do("POST", "/api/v1/statuses", map[string]any{"message": "hi", "reply_to": ann.post("mine").ID}); res.Status != http.StatusForbidden || res.errorCode(t) != "blocked" {
		t.Errorf("bob replies to ann: %d %s, want 403 blocked", res.Status, res.Body)
	}
	if res := ann.do("POST", "/api/v1/statuses", map[string]any{"message": "hi", "reply_to": bobs.ID}); res.Status != http.StatusForbidden || res.errorCode(t) != "blocked" {
		t.Errorf("ann replies to bob: %d %s, want 403 blocked", res.Status, res.Body)
	}
	for _, path := range []string{"like", "repost"} {
		if res := ann.do("PUT", fmt.Sprintf("/api/v1/statuses/%d/%s", bobs.ID, path), nil); res.Status != http.StatusForbidden || res.errorCode(t) != "blocked" {
			t.Errorf("ann's %s of bob's status: %d %s, want 403 blocked", path, res.Status, res.Body)
		}
	}
	for _, st := range ann.timeline("/api/v1/timelines/global").Statuses {
		if st.Login == "bob" {
			t.Errorf("ann's global timeline shows bob's %d", st.ID)
		}
	}
	for _, path := range []string{"", "/likes", "/reposts", "/context"} {
		if res := ann.do("GET", fmt.Sprintf("/api/v1/statuses/%d%s", bobs.ID, path), nil); res.Status != http.StatusNotFound {
			t.Errorf("ann reads bob's status%s: %d, want 404", path, res.Status)
		}
		if res := in.anon(t).do("GET", fmt.Sprintf("/api/v1/statuses/%d%s", bobs.ID, path), nil); res.Status != http.StatusOK {
			t.Errorf("a visitor reads bob's status%s: %d, want 200", path, res.Status)
		}
	}
	if got := ids(bob.timeline("/api/v1/timelines/global").Statuses); len(got) != 1 || got[0] != bobs.ID {
		t.Errorf("bob's global timeline: %v, want only his own %d", got, bobs.ID)
	}

	ann.must(http.StatusNoContent, "DELETE", "/api/v1/blocks/bob", nil, nil)
	ann.must(http.StatusNoContent, "DELETE", "/api/v1/blocks/bob", nil, nil)
	ann.must(http.StatusNoContent, "DELETE", "/api/v1/mutes/cat", nil, nil)
	if u := ann.user("bob"); *u.Blocking || *u.YouFollow {
		t.Errorf("ann sees bob as %+v after unblocking, want neither blocking nor following", u)
	}
	ann.follow("bob")
}

func TestBlockLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{BlocksPerUser: perHour(3)}
	in := e.start()
	a := in.signUp(t, "churner")
	in.signUp(t, "target")
	a.must(http.StatusNoContent, "PUT", "/api/v1/blocks/target", nil, nil)
	a.must(http.StatusNoContent, "DELETE", "/api/v1/blocks/target", nil, nil)
	a.must(http.StatusNoContent, "PUT", "/api/v1/mutes/target", nil, nil)
	refused(t, "fourth change", a.do("PUT", "/api/v1/blocks/target", nil))
	if u := a.user("target"); *u.Blocking {
		t.Fatalf("the refused block was written")
	}
}

// A stream that watches the global timeline gets no status of whom its
// user blocks, mutes or is blocked by, from the block or mute on, on
// another instance than the one that made it; taking it back lets them
// through again.
func TestBlockAndMuteHideLiveGlobal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	ann, bob, cat, dan := one.signUp(t, "ann"), one.signUp(t, "bob"), one.signUp(t, "cat"), one.signUp(t, "dan")
	ann.must(http.StatusNoContent, "PUT", "/api/v1/blocks/bob", nil, nil)
	as, bs := two.as(ann).connect(), two.as(bob).connect()
	for _, s := range []*stream{as, bs} {
		s.send(map[string]string{"type": "watch", "timeline": "global"})
		s.nextOf(protocol.TypeWatching, 10*time.Second)
	}
	// globalUntil returns the logins of the global statuses s gets up to
	// the one with id last.
	globalUntil := func(s *stream, last int64) []string {
		t.Helper()
		var logins []string
		for {
			f := s.nextOf(protocol.TypeGlobalStatus, 10*time.Second)
			logins = append(logins, f.Status.Login)
			if f.Status.ID == last {
				return logins
			}
		}
	}
	check := func(stage string, s *stream, last int64, want ...string) {
		t.Helper()
		if got := globalUntil(s, last); !slices.Equal(got, want) {
			t.Errorf("%s: global statuses %v, want %v", stage, got, want)
		}
	}

	bob.post("bob, blocked by ann")
	dan.post("dan, before the mute")
	last := cat.post("cat").ID
	check("ann, blocking bob", as, last, "dan", "cat")
	ann.post("ann, who blocks bob")
	last = cat.post("cat again").ID
	check("bob, blocked by ann", bs, last, "bob", "dan", "cat", "cat")

	// A mute made on instance one reaches ann's stream on two.
	ann.must(http.StatusNoContent, "PUT", "/api/v1/mutes/dan", nil, nil)
	dan.post("dan, muted")
	last = cat.post("cat, after the mute").ID
	check("ann, muting dan", as, last, "ann", "cat", "cat")

	// Taken back: both come through again.
	ann.must(http.StatusNoContent, "DELETE", "/api/v1/mutes/dan", nil, nil)
	ann.must(http.StatusNoContent, "DELETE", "/api/v1/blocks/bob", nil, nil)
	bob.post("bob, unblocked")
	dan.post("dan, unmuted")
	last = cat.post("cat, last").ID
	check("ann, after unblocking and unmuting", as, last, "bob", "dan", "cat")
}

// A block or mute hides its authors from the stream's live statuses as it
// does from reads: their posts and reposts of their statuses, on streams
// opened before it (told by hidden_changed, on every instance) and after
// it (read as the stream opens), until taken back.
func TestBlockAndMuteHideLiveStatuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	ann, bob, cat, dan, fay := one.signUp(t, "ann"), one.signUp(t, "bob"), one.signUp(t, "cat"), one.signUp(t, "dan"), one.signUp(t, "fay")
	ann.follow("bob")
	ann.follow("cat")
	ann.must(http.StatusNoContent, "PUT", "/api/v1/blocks/dan", nil, nil)
	before := two.as(ann).connect()
	for _, login := range []string{"bob", "fay"} {
		ann.must(http.StatusNoContent, "PUT", "/api/v1/mutes/"+login, nil, nil)
	}
	after := two.as(ann).connect()

	// statusesUntil returns the status frames s gets up to the one with id
	// last: the author's login, and a repost entry's original's after it.
	statusesUntil := func(s *stream, last int64) []string {
		t.Helper()
		var got []string
		for {
			f := s.nextOf(protocol.TypeStatus, 10*time.Second)
			entry := f.Status.Login
			if f.Status.RepostOf != nil {
				entry += " reposts " + f.Status.RepostOf.Login
			}
			got = append(got, entry)
			if f.Status.ID == last {
				return got
			}
		}
	}
	check := func(stage string, last int64, want ...string) {
		t.Helper()
		for name, s := range map[string]*stream{"opened before": before, "opened after": after} {
			if got := statusesUntil(s, last); !slices.Equal(got, want) {
				t.Errorf("%s, the stream %s: statuses %v, want %v", stage, name, got, want)
			}
		}
	}

	bob.post("bob, muted")
	cat.react("PUT", "repost", fay.post("fay, muted").ID)
	cat.react("PUT", "repost", dan.post("dan, blocked").ID)
	last := cat.post("cat").ID
	check("muting bob and fay, blocking dan", last, "cat")

	for _, login := range []string{"bob", "fay"} {
		ann.must(http.StatusNoContent, "DELETE", "/api/v1/mutes/"+login, nil, nil)
	}
	bob.post("bob, unmuted")
	cat.react("PUT", "repost", fay.post("fay, unmuted").ID)
	last = cat.post("cat again").ID
	check("after unmuting", last, "bob", "cat reposts fay", "cat")
}

// A block or mute, made or taken back, reaches every stream of the one
// who made it, on every instance, as a relation frame naming the other
// (so that a page open on another device hides them too), in the order
// made; the one blocked or muted is told nothing. One that changes
// nothing tells no stream.
func TestRelationFramesTellWhoMadeThem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	ann, bob, cat := one.signUp(t, "ann"), one.signUp(t, "bob"), one.signUp(t, "cat")
	streams := map[string]*stream{"ann on one": one.as(ann).connect(), "ann on two": two.as(ann).connect()}
	bobs := two.as(bob).connect()
	cats := one.as(cat).connect()

	steps := []struct {
		method, path, kind, login string
		on                        bool
	}{
		{"PUT", "/api/v1/blocks/bob", "block", "bob", true},
		{"PUT", "/api/v1/blocks/bob", "", "", false}, // again: nothing changes
		{"PUT", "/api/v1/mutes/cat", "mute", "cat", true},
		{"DELETE", "/api/v1/mutes/cat", "mute", "cat", false},
		{"DELETE", "/api/v1/mutes/cat", "", "", false}, // not there
		{"DELETE", "/api/v1/blocks/bob", "block", "bob", false},
	}
	var want []string
	for _, st := range steps {
		ann.must(http.StatusNoContent, st.method, st.path, nil, nil)
		if st.kind != "" {
			want = append(want, fmt.Sprintf("%s %s %v", st.kind, st.login, st.on))
		}
	}
	// relationsUntilRenamed returns the relation frames s got before the
	// profile frame of its user's new name, which comes on the same
	// channel after every step.
	relationsUntilRenamed := func(s *stream) []string {
		t.Helper()
		var got []string
		for {
			switch f := s.next(10 * time.Second); f.Type {
			case protocol.TypeRelation:
				if f.On == nil {
					t.Fatalf("a relation frame without on: %+v", f)
				}
				got = append(got, fmt.Sprintf("%s %s %v", f.Kind, f.login(t), *f.On))
			case protocol.TypeProfile:
				return got
			}
		}
	}
	for _, c := range []*client{ann, bob, cat} {
		c.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"name": "Renamed"}, nil)
	}
	for name, s := range streams {
		if got := relationsUntilRenamed(s); !slices.Equal(got, want) {
			t.Errorf("%s got relation frames %q, want %q", name, got, want)
		}
	}
	// Neither bob, blocked, nor cat, muted, is told.
	for name, s := range map[string]*stream{"bob": bobs, "cat": cats} {
		if got := relationsUntilRenamed(s); len(got) != 0 {
			t.Errorf("%s got relation frames %q, want none", name, got)
		}
	}
}

// Undoing a like or a repost of a status hidden from the viewer since (its
// author muted, or blocking the viewer) is done and answered 200 with the
// status, the viewer's state undone: a 404 would have a client retry it.
func TestUndoOfAHiddenStatusAnswersIt(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	for _, hide := range []string{"mute", "blocked by"} {
		t.Run(hide, func(t *testing.T) {
			ann, bob := in.signUp(t, "ann_"+hide[:3]), in.signUp(t, "bob_"+hide[:3])
			st := ann.post("liked, then hidden")
			bob.react("PUT", "like", st.ID)
			bob.react("PUT", "repost", st.ID)
			if hide == "mute" {
				bob.must(http.StatusNoContent, "PUT", "/api/v1/mutes/"+ann.login, nil, nil)
			} else {
				ann.must(http.StatusNoContent, "PUT", "/api/v1/blocks/"+bob.login, nil, nil)
			}
			for _, what := range []string{"like", "repost"} {
				var got struct {
					Status struct {
						ID              int64
						Liked, Reposted *bool
					}
				}
				bob.must(http.StatusOK, "DELETE", fmt.Sprintf("/api/v1/statuses/%d/%s", st.ID, what), nil, &got)
				if got.Status.ID != st.ID || (what == "like" && (got.Status.Liked == nil || *got.Status.Liked)) ||
					(what == "repost" && (got.Status.Reposted == nil || *got.Status.Reposted)) {
					t.Errorf("undoing the %s: %+v, want the status, the %s undone", what, got.Status, what)
				}
			}
			if got := in.anon(t).reactors(fmt.Sprintf("/api/v1/statuses/%d/likes", st.ID)); len(got) != 0 {
				t.Errorf("the status's likers: %v, want none", got)
			}
		})
	}
}

// A like or a repost of a status whose author the viewer mutes is refused
// as reading it is (404), and nothing of it is kept: no like, no repost,
// no notification.
func TestLikeAndRepostOfAMutedAuthorRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in := e.start()
	ann, bob := in.signUp(t, "ann"), in.signUp(t, "bob")
	st := bob.post("muted soon")
	ann.must(http.StatusNoContent, "PUT", "/api/v1/mutes/bob", nil, nil)
	for _, what := range []string{"like", "repost"} {
		res := ann.do("PUT", fmt.Sprintf("/api/v1/statuses/%d/%s", st.ID, what), nil)
		if res.Status != http.StatusNotFound || res.errorCode(t) != "status_not_found" {
			t.Errorf("ann's %s of a muted author's status: %d %s, want 404 status_not_found", what, res.Status, res.Body)
		}
		if got := in.anon(t).reactors(fmt.Sprintf("/api/v1/statuses/%d/%ss", st.ID, what)); len(got) != 0 {
			t.Errorf("the status's %ss: %v, want none", what, got)
		}
	}
	var unread struct{ Count int64 }
	bob.must(http.StatusOK, "GET", "/api/v1/notifications/unread", nil, &unread)
	if unread.Count != 0 {
		t.Errorf("bob has %d unread notifications, want none", unread.Count)
	}
}

// A follow by someone you mute is neither stored as a notification nor
// told live: no `followed` frame about them reaches your streams, while
// one about a follower you do not mute, following after, does. The
// follow itself stands and is counted.
func TestMutedFollowerNotTold(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	ada, bob, carol := in.signUp(t, "ada"), in.signUp(t, "bob"), in.signUp(t, "carol")
	ada.must(http.StatusNoContent, "PUT", "/api/v1/mutes/bob", nil, nil)
	s := ada.connect()
	bob.follow("ada")
	carol.follow("ada")
	f := s.nextOf("followed", 10*time.Second)
	var who struct{ Login string }
	if err := json.Unmarshal(f.User, &who); err != nil || who.Login != "carol" {
		t.Fatalf("the first followed frame is about %s (%v), want carol", f.User, err)
	}
	if c := ada.counts("ada"); c.followers != 2 {
		t.Errorf("ada has %d followers, want 2", c.followers)
	}
	if n := ada.unread(); n.Count != 1 {
		t.Errorf("ada has %d unread notifications, want carol's alone", n.Count)
	}
}
