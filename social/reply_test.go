package social

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"chorus/protocol"
)

func reply(tb testing.TB, s *Service, uid, replyTo int64, message string) Status {
	tb.Helper()
	st, err := s.Reply(ctxT(tb), uid, replyTo, message)
	if err != nil {
		tb.Fatalf("reply by %d to %d: %v", uid, replyTo, err)
	}
	return st
}

// A reply reaches the home timelines of its author's followers who also
// follow the person answered, and that person's, as on Mastodon; a reply
// to oneself (a thread) reaches every follower.
func TestReplyReachesWhoFollowsBoth(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	alice, bob := signUp(t, s, "alice"), signUp(t, s, "bob")
	both, onlyAlice, onlyBob := signUp(t, s, "both"), signUp(t, s, "only_alice"), signUp(t, s, "only_bob")
	follow(t, s, both.ID, "alice")
	follow(t, s, both.ID, "bob")
	follow(t, s, onlyAlice.ID, "alice")
	follow(t, s, onlyBob.ID, "bob")
	follow(t, s, bob.ID, "alice")

	question := post(t, s, bob.ID, "anyone?")
	answer := reply(t, s, alice.ID, question.ID, "me!")
	if answer.ReplyTo == nil || *answer.ReplyTo != (protocol.StatusRef{ID: question.ID, UID: bob.ID, Login: "bob"}) {
		t.Fatalf("reply_to = %+v, want bob's status %d", answer.ReplyTo, question.ID)
	}
	got := map[string]bool{}
	for _, u := range []User{alice, bob, both, onlyAlice, onlyBob} {
		got[u.Login] = slices.Contains(homeIDs(t, s, u.ID), answer.ID)
	}
	want := map[string]bool{"alice": true, "bob": true, "both": true, "only_alice": false, "only_bob": false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the reply is in these homes: %v, want %v", got, want)
	}

	thread := reply(t, s, alice.ID, answer.ID, "and more") // alice answers herself
	for _, u := range []User{alice, bob, both, onlyAlice} {
		if !slices.Contains(homeIDs(t, s, u.ID), thread.ID) {
			t.Errorf("%s's home lacks alice's reply to herself", u.Login)
		}
	}
	if slices.Contains(homeIDs(t, s, onlyBob.ID), thread.ID) {
		t.Errorf("only_bob, who does not follow alice, got her reply to herself")
	}
}

// Replying to a status that is not there, or no longer, is ErrStatusNotFound
// and writes nothing.
func TestReplyToMissingStatus(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	alice := signUp(t, s, "alice")
	gone := post(t, s, alice.ID, "soon gone")
	if err := s.DeleteStatus(ctxT(t), alice.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := s.LastStatusID(ctxT(t))
	for _, id := range []int64{gone.ID, gone.ID + 1000} {
		if _, err := s.Reply(ctxT(t), alice.ID, id, "hello?"); !errors.Is(err, ErrStatusNotFound) {
			t.Errorf("reply to %d: err = %v, want ErrStatusNotFound", id, err)
		}
	}
	if _, err := s.Reply(ctxT(t), alice.ID, -1, "hello?"); !errors.As(err, new(*InvalidError)) {
		t.Errorf("reply to -1: err = %v, want an InvalidError", err)
	}
	after, _ := s.LastStatusID(ctxT(t))
	if after != before {
		t.Errorf("refused replies took status ids %d..%d", before, after)
	}
	if n := rdb.ZCard(ctxT(t), s.keys.profile(alice.ID)).Val(); n != 0 {
		t.Errorf("alice's profile holds %d statuses after refused replies, want 0", n)
	}
}

// The context of a status is its ancestors, oldest first, and its
// descendants in thread order; a deleted reply leaves the thread with its
// own replies, which keep answering it and still see the rest above.
func TestThreadContext(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	a, b := signUp(t, s, "alice"), signUp(t, s, "bob")
	root := post(t, s, a.ID, "root")
	r1 := reply(t, s, b.ID, root.ID, "r1")
	r2 := reply(t, s, a.ID, root.ID, "r2")
	r11 := reply(t, s, a.ID, r1.ID, "r1.1")
	r111 := reply(t, s, b.ID, r11.ID, "r1.1.1")
	r12 := reply(t, s, b.ID, r1.ID, "r1.2")
	r21 := reply(t, s, b.ID, r2.ID, "r2.1")

	th, err := s.Context(ctxT(t), root.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{r1.ID, r11.ID, r111.ID, r12.ID, r2.ID, r21.ID}
	if got := statusIDs(th.Descendants); !slices.Equal(got, want) || len(th.Ancestors) != 0 {
		t.Fatalf("root's context = %v / %v, want [] / %v", statusIDs(th.Ancestors), got, want)
	}
	th, err = s.Context(ctxT(t), r11.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statusIDs(th.Ancestors), []int64{root.ID, r1.ID}; !slices.Equal(got, want) {
		t.Fatalf("r1.1's ancestors = %v, want %v", got, want)
	}
	if got, want := statusIDs(th.Descendants), []int64{r111.ID}; !slices.Equal(got, want) {
		t.Fatalf("r1.1's descendants = %v, want %v", got, want)
	}
	sts, err := s.Decorate(ctxT(t), 0, []Status{root, r1})
	if err != nil {
		t.Fatal(err)
	}
	if sts[0].Replies != 2 || sts[1].Replies != 2 {
		t.Fatalf("replies counts = %d, %d, want 2, 2", sts[0].Replies, sts[1].Replies)
	}

	if err := s.DeleteStatus(ctxT(t), b.ID, r1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Context(ctxT(t), r1.ID); !errors.Is(err, ErrStatusNotFound) {
		t.Fatalf("context of a deleted status: err = %v, want ErrStatusNotFound", err)
	}
	th, err = s.Context(ctxT(t), r11.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statusIDs(th.Ancestors), []int64{root.ID}; !slices.Equal(got, want) {
		t.Fatalf("r1.1's ancestors once r1 is deleted = %v, want %v", got, want)
	}
	kept, err := s.Status(ctxT(t), r11.ID)
	if err != nil || kept.ReplyTo == nil || kept.ReplyTo.ID != r1.ID {
		t.Fatalf("r1.1 once r1 is deleted = %+v, %v: want it kept, answering %d", kept, err, r1.ID)
	}
	sts, err = s.Decorate(ctxT(t), 0, []Status{root})
	if err != nil {
		t.Fatal(err)
	}
	if sts[0].Replies != 1 {
		t.Fatalf("root's replies once r1 is deleted = %d, want 1", sts[0].Replies)
	}
}

// A thread's context is bounded however large the thread: MaxAncestors
// up, MaxDescendants down.
func TestThreadContextBounded(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	a := signUp(t, s, "alice")
	root := post(t, s, a.ID, "root")
	for i := range MaxDescendants + 20 {
		reply(t, s, a.ID, root.ID, fmt.Sprint("wide ", i))
	}
	th, err := s.Context(ctxT(t), root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Descendants) != MaxDescendants {
		t.Fatalf("a status with %d replies has %d descendants in its context, want %d",
			MaxDescendants+20, len(th.Descendants), MaxDescendants)
	}
	// The status's replies read in part, and those read, at the bound,
	// whose own replies were not read, whether they have some or not.
	if want := append([]int64{root.ID}, statusIDs(th.Descendants)...); !slices.Equal(th.More, want) {
		t.Errorf("the context names %d statuses as read in part (%v...), want the status and its %d descendants",
			len(th.More), th.More[:min(3, len(th.More))], MaxDescendants)
	}
	last := root
	var chain []int64
	for i := range MaxAncestors + 5 {
		last = reply(t, s, a.ID, last.ID, fmt.Sprint("deep ", i))
		chain = append(chain, last.ID)
	}
	th, err = s.Context(ctxT(t), last.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := chain[len(chain)-1-MaxAncestors : len(chain)-1]
	if got := statusIDs(th.Ancestors); !slices.Equal(got, want) {
		t.Fatalf("ancestors of a reply %d deep: %d of them (%v...), want the nearest %d",
			len(chain), len(got), got[:min(3, len(got))], MaxAncestors)
	}
}

// A context names the statuses whose replies its bounds left unread, and
// only those: one with a reply more than a status below the first level
// may give, not one with just that many, nor one whose replies were all
// read; and, at the depth bound, the statuses whose replies were not read
// at all.
func TestThreadContextNamesWhatItCut(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	a := signUp(t, s, "alice")
	root := post(t, s, a.ID, "root")
	over, full, few := reply(t, s, a.ID, root.ID, "over"), reply(t, s, a.ID, root.ID, "full"), reply(t, s, a.ID, root.ID, "few")
	for i := range maxRepliesPerStatus + 1 {
		reply(t, s, a.ID, over.ID, fmt.Sprint("over ", i))
		if i < maxRepliesPerStatus {
			reply(t, s, a.ID, full.ID, fmt.Sprint("full ", i))
		}
	}
	reply(t, s, a.ID, few.ID, "few 0")
	th, err := s.Context(ctxT(t), root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 + 2*maxRepliesPerStatus + 1; len(th.Descendants) != want {
		t.Fatalf("%d descendants, want %d", len(th.Descendants), want)
	}
	if !slices.Equal(th.More, []int64{over.ID}) {
		t.Errorf("the context names %v as read in part, want %d alone", th.More, over.ID)
	}

	deep := post(t, s, a.ID, "deep")
	chain := []int64{deep.ID}
	for i := range maxThreadDepth + 2 {
		chain = append(chain, reply(t, s, a.ID, chain[len(chain)-1], fmt.Sprint("level ", i+1)).ID)
	}
	th, err = s.Context(ctxT(t), deep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Descendants) != maxThreadDepth {
		t.Fatalf("%d descendants, want %d levels", len(th.Descendants), maxThreadDepth)
	}
	if want := []int64{chain[maxThreadDepth]}; !slices.Equal(th.More, want) {
		t.Errorf("the context names %v as read in part, want %v, the last level read", th.More, want)
	}
}

// @logins in a message mention the users they name (at most MaxMentions,
// known ones only, not e-mail addresses), with the logins as the users
// signed up; each is notified once, the person answered as replied only,
// and a deleted status takes its notifications back.
func TestMentionsAndReplyNotify(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	a, b, c := signUp(t, s, "Alice"), signUp(t, s, "bob"), signUp(t, s, "carol_c")
	q := post(t, s, b.ID, "question")
	r := reply(t, s, a.ID, q.ID, "@BOB see @carol_c and @nobody_here, mail me at x@carol_c.org, @alice")
	want := []protocol.Mention{{UID: b.ID, Login: "bob"}, {UID: c.ID, Login: "carol_c"}, {UID: a.ID, Login: "Alice"}}
	if !slices.Equal(r.Mentions, want) {
		t.Fatalf("mentions = %+v, want %+v", r.Mentions, want)
	}
	read, err := s.Status(ctxT(t), r.ID)
	if err != nil || !slices.Equal(read.Mentions, want) {
		t.Fatalf("mentions read back = %+v (%v), want %+v", read.Mentions, err, want)
	}
	causes := func(u User) []string {
		t.Helper()
		m, err := rdb.HKeys(ctxT(t), s.keys.noteCauses(u.ID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(m)
		return m
	}
	sid := fmt.Sprint(r.ID)
	if got := causes(b); !slices.Equal(got, []string{"replied:" + fmt.Sprint(a.ID) + ":" + sid}) {
		t.Errorf("bob's notifications = %v, want one replied", got)
	}
	if got := causes(c); !slices.Equal(got, []string{"mentioned:" + fmt.Sprint(a.ID) + ":" + sid}) {
		t.Errorf("carol's notifications = %v, want one mentioned", got)
	}
	if got := causes(a); len(got) != 0 {
		t.Errorf("alice was notified of her own mention: %v", got)
	}
	if err := s.DeleteStatus(ctxT(t), a.ID, r.ID); err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{b, c} {
		if got := causes(u); len(got) != 0 {
			t.Errorf("%s's notifications after the reply's deletion = %v, want none", u.Login, got)
		}
		if n := rdb.ZCard(ctxT(t), s.keys.notes(u.ID)).Val(); n != 0 {
			t.Errorf("%s still has %d notification ids", u.Login, n)
		}
	}
}

// A status mentions the first MaxMentions users its @logins name that
// exist: unknown logins before them take no place.
func TestMentionCapCountsUsersThatExist(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ada := signUp(t, s, "ada")
	var message string
	for i := range MaxMentions {
		message += fmt.Sprintf("@nobody%02d ", i)
	}
	var want []string
	for i := range MaxMentions + 2 {
		login := fmt.Sprintf("real%02d", i)
		signUp(t, s, login)
		message += "@" + login + " "
		if i < MaxMentions {
			want = append(want, login)
		}
	}
	st := post(t, s, ada.ID, message)
	var got []string
	for _, m := range st.Mentions {
		got = append(got, m.Login)
	}
	if !slices.Equal(got, want) {
		t.Errorf("mentions %v, want the first %d users that exist: %v", got, MaxMentions, want)
	}
}

func TestMentionCandidates(t *testing.T) {
	t.Parallel()
	many := strings.Repeat("@user_x ", 3)
	for i := range MaxMentions + 3 {
		many += fmt.Sprintf("@user%02d ", i)
	}
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"hi @bob!", []string{"bob"}},
		{"@bob@carol", []string{"bob"}},
		{"a@bob.com and (@carol), @Bob", []string{"carol", "Bob"}},
		{"@ab is too short, @" + strings.Repeat("x", 33) + " too long", nil},
		{"@bob @BOB @bob", []string{"bob"}},
		{"tab\t@bob\n@carol", []string{"bob", "carol"}},
		{"@bób", nil},
		{"café@bob, @bobé, 日本@bob, ١@bob", nil},
		{"—@bob… «@carol»", []string{"bob", "carol"}},
		{many, append([]string{"user_x"}, func() []string {
			var w []string
			for i := range MaxMentions + 3 {
				w = append(w, fmt.Sprintf("user%02d", i))
			}
			return w
		}()...)},
	} {
		if got := mentionCandidates(c.in); !slices.Equal(got, c.want) {
			t.Errorf("mentionCandidates(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A reply's deletion names the status it answered, on the streams of its
// author and followers and on the global channel, whether the reply is
// deleted by its author or taken back by a redo that a deletion raced
// (unwritePost, which runs before any push, so tells its author's
// streams alone): a client showing that status reads its replies count
// again. A status that answers nothing names none.
func TestReplyDeletionNamesItsParent(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob, fan := signUp(t, s, "ada"), signUp(t, s, "bob"), signUp(t, s, "fan")
	follow(t, s, fan.ID, "ada")
	follow(t, s, fan.ID, "bob")
	startWorker(t, s, "w")
	question := post(t, s, ada.ID, "anyone?")
	plain := post(t, s, bob.ID, "no answer")
	answer := reply(t, s, bob.ID, question.ID, "me!")
	taken := reply(t, s, bob.ID, question.ID, "me again")
	waitJobsDone(t, s)
	sub := listen(t, s, rdb, s.UserChannel(fan.ID), s.UserChannel(bob.ID), s.bus.GlobalChannel())

	for _, id := range []int64{answer.ID, plain.ID} {
		if err := s.DeleteStatus(ctx, bob.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	waitJobsDone(t, s)
	if err := s.unwritePost(ctx, taken); err != nil {
		t.Fatal(err)
	}
	deleted := map[int64]int64{answer.ID: question.ID, plain.ID: 0}
	all := map[int64]int64{answer.ID: question.ID, plain.ID: 0, taken.ID: question.ID}
	events := eventsSoFar(t, sub)
	for _, c := range []struct {
		channel, kind string
		want          map[int64]int64
	}{
		{s.UserChannel(fan.ID), protocol.TypeStatusDeleted, deleted},
		{s.UserChannel(bob.ID), protocol.TypeStatusDeleted, all},
		{s.bus.GlobalChannel(), protocol.TypeGlobalStatusDeleted, all},
	} {
		got := map[int64]int64{}
		for _, ev := range events[c.channel] {
			if ev.Type == c.kind {
				got[ev.ID] = ev.ReplyTo
			}
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("%s frames on %s, by id, name parents %v, want %v", c.kind, c.channel, got, c.want)
		}
	}
}
