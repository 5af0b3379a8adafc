package social

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/protocol"
)

// A reply is told on its thread's channel, at any depth, naming the
// thread, the first status of its conversation, which the context of any
// of its statuses names; so is each deletion in the thread, the first
// status's own, a reply's naming what it answered, and one a redo takes
// back (its path read again from its parent). A status that answers none, and a repost, tell no thread.
func TestThreadChannel(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	startWorker(t, s, "w")
	root := post(t, s, ada.ID, "a thread")
	first := reply(t, s, bob.ID, root.ID, "first")
	if _, err := s.Repost(ctx, bob.ID, root.ID); err != nil {
		t.Fatal(err)
	}
	entry, err := s.LastStatusID(ctx) // the repost's entry
	if err != nil {
		t.Fatal(err)
	}
	sub := listen(t, s, rdb, s.bus.ThreadChannel(root.ID), s.bus.ThreadChannel(first.ID), s.bus.ThreadChannel(entry))

	deep := reply(t, s, ada.ID, first.ID, "deeper")
	deeper := reply(t, s, bob.ID, deep.ID, "deeper still")
	elsewhere := post(t, s, bob.ID, "no thread")
	if _, err := s.Unrepost(ctx, bob.ID, root.ID); err != nil { // its entry deleted
		t.Fatal(err)
	}
	for _, c := range []struct {
		uid, id int64
	}{{bob.ID, deeper.ID}, {bob.ID, elsewhere.ID}, {ada.ID, root.ID}} {
		if err := s.DeleteStatus(ctx, c.uid, c.id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.unwritePost(ctx, deep); err != nil { // as a redo that found it deleted
		t.Fatal(err)
	}
	waitJobsDone(t, s)
	events := eventsSoFar(t, sub)
	var got []string
	for _, ev := range events[s.bus.ThreadChannel(root.ID)] {
		switch ev.Type {
		case protocol.TypeThreadStatus:
			got = append(got, fmt.Sprintf("%s %d in %d answering %d", ev.Type, ev.Status.ID, ev.Thread, ev.Status.ReplyTo.ID))
		default:
			got = append(got, fmt.Sprintf("%s %d in %d answering %d", ev.Type, ev.ID, ev.Thread, ev.ReplyTo))
		}
	}
	want := []string{
		fmt.Sprintf("thread_status %d in %d answering %d", deep.ID, root.ID, first.ID),
		fmt.Sprintf("thread_status %d in %d answering %d", deeper.ID, root.ID, deep.ID),
		fmt.Sprintf("thread_status_deleted %d in %d answering %d", deeper.ID, root.ID, deep.ID),
		fmt.Sprintf("thread_status_deleted %d in %d answering 0", root.ID, root.ID),
		fmt.Sprintf("thread_status_deleted %d in %d answering %d", deep.ID, root.ID, first.ID),
	}
	if !slices.Equal(got, want) {
		t.Errorf("the thread's channel told\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(events[s.bus.ThreadChannel(first.ID)]); n != 0 {
		t.Errorf("a reply's own channel told %d messages, want none: its thread is its first status's", n)
	}
	if n := len(events[s.bus.ThreadChannel(entry)]); n != 0 {
		t.Errorf("a repost's entry told %d messages on a channel of its own, want none", n)
	}

	// Every status of the thread names it, its first one deleted or not.
	for _, id := range []int64{first.ID, deep.ID} {
		if id == deep.ID {
			id = reply(t, s, ada.ID, first.ID, "after the first was deleted").ID
		}
		th, err := s.Context(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if th.ID != root.ID {
			t.Errorf("the context of %d names thread %d, want %d", id, th.ID, root.ID)
		}
	}
}

// A thread is its first status's; more than MaxAncestors levels down, a
// reply's is the farthest ancestor it keeps.
func TestThreadOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id   int64
		path string
		want int64
	}{
		{7, "", 7},
		{9, "3", 3},
		{12, "3,5,9", 3},
		{12, "x,5", 12}, // a path not written by Chorus names no thread
	} {
		if got := ThreadOf(c.id, c.path); got != c.want {
			t.Errorf("ThreadOf(%d, %q) = %d, want %d", c.id, c.path, got, c.want)
		}
	}
	long := ""
	for i := range MaxAncestors + 5 {
		long = childPath(long, int64(i+1))
	}
	if got, want := ThreadOf(1000, long), int64(6); got != want {
		t.Errorf("a reply %d levels down is in thread %d, want %d", MaxAncestors+5, got, want)
	}
}

// A reply keeps its thread however deep it is: past MaxAncestors levels,
// where its path no longer reaches the first status, its context still
// names it, and its replies are told on its channel. A redo of a reply
// whose parent was deleted meanwhile keeps the thread it was written in.
func TestThreadKeptDeepAndThroughRedo(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	root := post(t, s, ada.ID, "a long thread")
	last := root
	var mid Status
	for i := range MaxAncestors + 5 {
		last = reply(t, s, ada.ID, last.ID, fmt.Sprint("level ", i+1))
		if i == 2 {
			mid = last
		}
	}
	sub := listen(t, s, rdb, s.bus.ThreadChannel(root.ID))
	deepest := reply(t, s, ada.ID, last.ID, "deepest")
	th, err := s.Context(ctx, deepest.ID)
	if err != nil {
		t.Fatal(err)
	}
	if th.ID != root.ID || len(th.Ancestors) != MaxAncestors {
		t.Errorf("a reply %d levels down names thread %d with %d ancestors, want %d with %d",
			MaxAncestors+6, th.ID, len(th.Ancestors), root.ID, MaxAncestors)
	}

	// Its parent deleted, a redo of mid's reply writes it where it was.
	below := reply(t, s, ada.ID, mid.ID, "below mid")
	if err := s.DeleteStatus(ctx, ada.ID, mid.ID); err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: below})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.redoPost(ctx, below, payload); err != nil {
		t.Fatal(err)
	}
	if th, err := s.Context(ctx, below.ID); err != nil || th.ID != root.ID {
		t.Errorf("after a redo, the context of a reply to a deleted status names thread %d (%v), want %d", th.ID, err, root.ID)
	}
	waitJobsDone(t, s)
	var told []int64
	for _, ev := range eventsSoFar(t, sub)[s.bus.ThreadChannel(root.ID)] {
		if ev.Type == protocol.TypeThreadStatus {
			told = append(told, ev.Status.ID)
		}
	}
	if want := []int64{deepest.ID, below.ID, below.ID}; !slices.Equal(told, want) {
		t.Errorf("the thread's channel told replies %v, want %v (the redo's again)", told, want)
	}
}

// A reply's deletion whose last round trip fails, after the status's hash
// is gone, is finished by its job, which can no longer read the thread:
// the thread was told already, with the conversation's undoing.
func TestThreadToldThoughTheDeletionIsLeftToItsJob(t *testing.T) {
	t.Parallel()
	s, h := failingService(t, Options{JobClaimIdle: 200 * time.Millisecond}, nil)
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	root := post(t, s, ada.ID, "a thread")
	answer := reply(t, s, bob.ID, root.ID, "an answer")
	sub := listen(t, s, s.rdb, s.bus.ThreadChannel(root.ID))
	h.set(anyOf("zrem " + s.keys.global()))
	h.failing(t, "the deletion's last round trip", func() error { return s.DeleteStatus(ctx, bob.ID, answer.ID) })
	if n := s.rdb.Exists(ctx, s.keys.status(answer.ID)).Val(); n != 0 {
		t.Fatal("the status's hash is still there: the failure came before it was deleted")
	}
	startWorker(t, s, "heir")
	waitJobsDone(t, s)
	if ids := zsetIDs(t, s, s.keys.global()); slices.Contains(ids, answer.ID) {
		t.Fatalf("the global timeline still holds %d: the job did not finish the deletion", answer.ID)
	}
	var told []string
	for _, ev := range eventsSoFar(t, sub)[s.bus.ThreadChannel(root.ID)] {
		told = append(told, fmt.Sprintf("%s %d", ev.Type, ev.ID))
	}
	if want := []string{fmt.Sprintf("thread_status_deleted %d", answer.ID)}; !slices.Equal(told, want) {
		t.Errorf("the thread's channel told %q, want %q", told, want)
	}
}
