package realtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"chorus/social"
)

// hiddenFeed counts the hidden sets the hub reads one user at a time. With
// fail above 0, that many reads fail (each taking one), as Redis away would
// make them.
type hiddenFeed struct {
	*social.Service
	reads atomic.Int64
	fail  atomic.Int64
}

func (f *hiddenFeed) HiddenAuthors(ctx context.Context, uid int64) ([]int64, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, errors.New("the hidden set could not be read (test)")
	}
	f.reads.Add(1)
	return f.Service.HiddenAuthors(ctx, uid)
}

// A user's streams share the reads of whom the user hides: mutes and
// unmutes, each telling every stream, make the instance read the set at
// most once a change, not once a change for each stream; and every stream
// hides what the last change says.
func TestHiddenChangesShareOneRead(t *testing.T) {
	t.Parallel()
	var feed *hiddenFeed
	e := newEnv(t, envOptions{feed: func(s *social.Service) Feed {
		feed = &hiddenFeed{Service: s}
		return feed
	}})
	ctx := t.Context()
	ann, bob, cat := e.signUp("ann"), e.signUp("bob"), e.signUp("cat")
	e.follow(ann, bob)
	e.follow(ann, cat)
	const streams, changes = 4, 21 // mutes and unmutes in turn: muted at the end
	var ss []*stream
	for range streams {
		ss = append(ss, e.connect(ann))
	}
	before := feed.reads.Load()
	for i := range changes {
		change := e.social.Mute
		if i%2 == 1 {
			change = e.social.Unmute
		}
		if err := change(ctx, ann.id, bob.login); err != nil {
			t.Fatal(err)
		}
	}
	e.post(bob, "bob, muted")
	shown := e.post(cat, "cat").ID
	for i, s := range ss {
		if got := nextStatuses(s, 1, time.Minute); !slices.Equal(got, []int64{shown}) {
			t.Fatalf("stream %d got %v, want cat's %d alone: bob is muted", i, got, shown)
		}
	}
	if reads := feed.reads.Load() - before; reads > changes {
		t.Errorf("%d streams read the hidden set %d times for %d changes, want at most one read a change", streams, reads, changes)
	}
}

// A stream whose reads of the hidden set fail when a mute is told (the
// shared read, then its own) reads it again later, until a read succeeds:
// from then on it hides the muted author's statuses. A failed read leaves
// nothing to tell it again.
func TestFailedHiddenReadIsTriedAgain(t *testing.T) {
	t.Parallel()
	feed := &hiddenFeed{}
	e := newEnv(t, envOptions{feed: func(s *social.Service) Feed {
		feed.Service = s
		return feed
	}})
	ann, bob := e.signUp("fann"), e.signUp("fbob")
	e.follow(ann, bob)
	s := e.connect(ann)
	reads := feed.reads.Load()
	feed.fail.Store(2) // the shared read, and the stream's own after it
	if err := e.social.Mute(t.Context(), ann.id, bob.login); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for feed.reads.Load() == reads {
		if time.Now().After(deadline) {
			t.Fatalf("no read of the hidden set succeeded within 30 s of two failed (%d left to fail)", feed.fail.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := e.post(bob, "muted by ann")
	if got := describe(e.routed(ann, s)); slices.Contains(got, fmt.Sprintf("status %d", st.ID)) {
		t.Errorf("after the mute, read again, ann's stream got bob's status: %q", got)
	}
}
