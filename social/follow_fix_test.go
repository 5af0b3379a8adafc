package social

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"chorus/protocol"
)

// A follow that a block overtakes between its two sides (the block's
// unfollow takes it out) is refused as one after the block would be, and
// the friendship its first side made, which the block ended, is not
// introduced: no presence of either goes to the other after the block.
func TestFollowOvertakenByABlockIsRefused(t *testing.T) {
	t.Parallel()
	for _, annBlocks := range []bool{true, false} {
		t.Run(fmt.Sprintf("ann blocks bob %v", annBlocks), func(t *testing.T) {
			t.Parallel()
			var introduced atomic.Int32
			s, _ := newService(t, Options{Befriended: func(context.Context, int64, int64) error {
				introduced.Add(1)
				return nil
			}})
			ctx := ctxT(t)
			ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
			if _, _, err := s.Follow(ctx, bob.ID, "ann"); err != nil {
				t.Fatal(err)
			}
			introduced.Store(0)
			s.betweenFollowSides = func() {
				s.betweenFollowSides = nil
				var err error
				if annBlocks {
					err = s.Block(ctx, ann.ID, "bob")
				} else {
					err = s.Block(ctx, bob.ID, "ann")
				}
				if err != nil {
					t.Error(err)
				}
			}
			_, made, err := s.Follow(ctx, ann.ID, "bob")
			if !errors.Is(err, ErrBlocked) || made {
				t.Errorf("a follow a block overtook: made friends %v, %v; want false, ErrBlocked", made, err)
			}
			if n := introduced.Load(); n != 0 {
				t.Errorf("the friendship the block ended was introduced %d times", n)
			}
			for what, key := range map[string]string{"ann's following": s.keys.following(ann.ID), "bob's followers": s.keys.followers(bob.ID),
				"ann's friends": s.keys.friends(ann.ID), "bob's friends": s.keys.friends(bob.ID)} {
				if n, err := s.rdb.ZCard(ctx, key).Result(); err != nil || n != 0 {
					t.Errorf("%s: %d members (%v), want none", what, n, err)
				}
			}
		})
	}
}

// A follow repeated while it stands stores no followed notification: not
// after the one stored was dropped by a mute taken back since (unmuting
// restores none), nor by the cap. A new follow after an unfollow stores
// one, with its frame.
func TestRepeatedFollowStoresNoNotification(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	l := listen(t, s, rdb, s.UserChannel(ann.ID))
	notified := func() int {
		t.Helper()
		return len(ofType(eventsSoFar(t, l)[s.UserChannel(ann.ID)], protocol.TypeNotification))
	}
	if _, _, err := s.Follow(ctx, bob.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if got, n := noteSizes(t, s, ann.ID), notified(); got != [3]int64{1, 1, 1} || n != 1 {
		t.Fatalf("bob's follow: ann's notifications %v, %d frames; want one", got, n)
	}
	if err := errors.Join(s.Mute(ctx, ann.ID, "bob"), s.Unmute(ctx, ann.ID, "bob")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := s.Follow(ctx, bob.ID, "ann"); err != nil {
			t.Fatal(err)
		}
	}
	if got, n := noteSizes(t, s, ann.ID), notified(); got != [3]int64{} || n != 0 {
		t.Errorf("bob's follow repeated after a mute taken back: ann's notifications %v, %d frames; want none", got, n)
	}
	if _, err := s.Unfollow(ctx, bob.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Follow(ctx, bob.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if got, n := noteSizes(t, s, ann.ID), notified(); got != [3]int64{1, 1, 1} || n != 1 {
		t.Errorf("bob's new follow: ann's notifications %v, %d frames; want one", got, n)
	}
}

// A follow whose followee's side was written but whose answer was lost
// stored its notification with it: the retry finds the follower there and
// stores none again, and none is lost.
func TestFollowCutShortKeepsItsNotification(t *testing.T) {
	t.Parallel()
	s, h := failingService(t, Options{}, nil)
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	signUp(t, s, "cat")
	l := listen(t, s, s.rdb, s.UserChannel(ann.ID))
	// follow_followee.lua loaded, so that the lost answer is of a script run.
	if _, _, err := s.Follow(ctx, bob.ID, "cat"); err != nil {
		t.Fatal(err)
	}
	h.set(allOf("evalsha", s.keys.followers(ann.ID)))
	h.lost.Store(true)
	h.failing(t, "a follow whose followee's side answer is lost", func() error {
		_, _, err := s.Follow(ctx, bob.ID, "ann")
		return err
	})
	h.lost.Store(false)
	if _, _, err := s.Follow(ctx, bob.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	n := len(ofType(eventsSoFar(t, l)[s.UserChannel(ann.ID)], protocol.TypeNotification))
	if got := noteSizes(t, s, ann.ID); got != [3]int64{1, 1, 1} || n != 1 {
		t.Errorf("a follow cut short, then retried: ann's notifications %v, %d frames; want one", got, n)
	}
}
