package social

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// blockRaces are the two ways a block between ann (whose status is acted
// on) and bob (who acts) is made: by ann, and by bob.
var blockRaces = []struct {
	name       string
	blocker    func(ann, bob User) int64
	blockedOne func(ann, bob User) string
}{
	{"ann blocks bob", func(ann, _ User) int64 { return ann.ID }, func(_, bob User) string { return bob.Login }},
	{"bob blocks ann", func(_, bob User) int64 { return bob.ID }, func(ann, _ User) string { return ann.Login }},
}

// A like whose block check passed, and which a block then raced before it
// was written, is taken back: it answers ErrBlocked, as a like refused up
// front does, and leaves no like (in the likes, the count, bob's index)
// nor notification.
func TestLikeRacingABlockIsTakenBack(t *testing.T) {
	t.Parallel()
	for _, race := range blockRaces {
		t.Run(race.name, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
			st := post(t, s, ann.ID, "liked, then not")
			s.beforeLikeWrites = func() {
				s.beforeLikeWrites = nil
				if err := s.Block(ctx, race.blocker(ann, bob), race.blockedOne(ann, bob)); err != nil {
					t.Error(err)
				}
			}
			if _, err := s.Like(ctx, bob.ID, st.ID); !errors.Is(err, ErrBlocked) {
				t.Fatalf("a like a block raced answered %v, want ErrBlocked", err)
			}
			likers, err := s.Likers(ctx, st.ID, Page{})
			if err != nil {
				t.Fatal(err)
			}
			if len(likers) != 0 || counts(t, s, st).Likes != 0 {
				t.Errorf("ann's status has likers %v (count %d) after the block", likers, counts(t, s, st).Likes)
			}
			if ids := zsetIDs(t, s, s.keys.liked(bob.ID)); len(ids) != 0 {
				t.Errorf("bob's liked index holds %v after the block", ids)
			}
			if got := noteSizes(t, s, ann.ID); got != [3]int64{} {
				t.Errorf("ann's notification ids, records, causes: %v, want none", got)
			}
			if n := rdb.Exists(ctx, s.keys.status(st.ID)).Val(); n != 1 {
				t.Error("ann's status is gone")
			}
		})
	}
}

// A repost whose block check passed, and which a block then raced before
// its entry was written, is taken back: it answers ErrBlocked, and leaves
// no claim, no entry in bob's timelines or his follower's home, and no
// notification.
func TestRepostRacingABlockIsTakenBack(t *testing.T) {
	t.Parallel()
	for _, race := range blockRaces {
		t.Run(race.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{})
			ctx := ctxT(t)
			ann, bob, cat := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat")
			follow(t, s, cat.ID, "bob")
			st := post(t, s, ann.ID, "reposted, then not")
			// Between the repost's checks and its write.
			s.afterQueue = func() {
				s.afterQueue = nil
				if err := s.Block(ctx, race.blocker(ann, bob), race.blockedOne(ann, bob)); err != nil {
					t.Error(err)
				}
			}
			if _, err := s.Repost(ctx, bob.ID, st.ID); !errors.Is(err, ErrBlocked) {
				t.Fatalf("a repost a block raced answered %v, want ErrBlocked", err)
			}
			reposters, err := s.Reposters(ctx, st.ID, Page{})
			if err != nil {
				t.Fatal(err)
			}
			if len(reposters) != 0 {
				t.Errorf("ann's status has reposters %v after the block", reposters)
			}
			if got := counts(t, s, st); got.Reposts != 0 {
				t.Errorf("ann's status counts %d reposts after the block", got.Reposts)
			}
			for key, what := range map[string]string{
				s.keys.profile(bob.ID): "bob's profile", s.keys.home(bob.ID): "bob's home", s.keys.home(cat.ID): "cat's home",
			} {
				if ids := zsetIDs(t, s, key); len(ids) != 0 {
					t.Errorf("%s holds %v after the block", what, ids)
				}
			}
			if got := noteSizes(t, s, ann.ID); got != [3]int64{} {
				t.Errorf("ann's notification ids, records, causes: %v, want none", got)
			}
		})
	}
}

// A reply whose block check passed, and which a block then raced before it
// was written, is taken back: it answers ErrBlocked, and leaves no place
// in the thread, no status, nothing in the timelines it reached (of a
// follower of both), and no notification. So for an author whose statuses
// are pulled, whose posts go the way of a job's passes.
func TestReplyRacingABlockIsTakenBack(t *testing.T) {
	t.Parallel()
	for _, pulled := range []bool{false, true} {
		for _, race := range blockRaces {
			t.Run(fmt.Sprintf("%s, pulled %v", race.name, pulled), func(t *testing.T) {
				t.Parallel()
				opts := Options{}
				if pulled {
					opts.PullThreshold = 1
				}
				s, rdb := newService(t, opts)
				ctx := ctxT(t)
				ann, bob, cat := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat")
				follow(t, s, cat.ID, "ann")
				follow(t, s, cat.ID, "bob")
				if pulled {
					runJob(t, s, s.keys.job(promoteJobID(bob.ID)))
					if _, err := rdb.ZScore(ctx, s.keys.pulledAuthors(), itoa(bob.ID)).Result(); err != nil {
						t.Fatalf("bob is not pulled: %v", err)
					}
				}
				st := post(t, s, ann.ID, "answered, then not")
				before := zsetIDs(t, s, s.keys.home(cat.ID))
				notes := noteSizes(t, s, ann.ID) // cat's follow
				// Between the reply's check and its write.
				s.afterQueue = func() {
					s.afterQueue = nil
					if err := s.Block(ctx, race.blocker(ann, bob), race.blockedOne(ann, bob)); err != nil {
						t.Error(err)
					}
				}
				if _, err := s.Reply(ctx, bob.ID, st.ID, "a reply"); !errors.Is(err, ErrBlocked) {
					t.Fatalf("a reply a block raced answered %v, want ErrBlocked", err)
				}
				checkNoReply(t, s, ann, bob, cat, st, before, notes)
			})
		}
	}
}

// A reply that a block raced, whose maker then failed before its last round
// trip (which looks at the block), is taken back by its job's redo: the
// worker that finishes it looks at the block after its writes too.
func TestReplyRacingABlockIsTakenBackByItsJob(t *testing.T) {
	t.Parallel()
	s, h := failingService(t, Options{JobClaimIdle: 200 * time.Millisecond}, anyOf(""))
	ctx := ctxT(t)
	ann, bob, cat := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat")
	follow(t, s, cat.ID, "ann")
	follow(t, s, cat.ID, "bob")
	st := post(t, s, ann.ID, "answered, then not")
	before := zsetIDs(t, s, s.keys.home(cat.ID))
	notes := noteSizes(t, s, ann.ID) // cat's follow
	s.afterQueue = func() {
		s.afterQueue = nil
		if err := s.Block(ctx, ann.ID, bob.Login); err != nil {
			t.Error(err)
		}
	}
	// The last round trip fails whole: the post is left to its job.
	s.afterWrite = func() { s.afterWrite = nil; h.on.Store(true) }
	_, err := s.Reply(ctx, bob.ID, st.ID, "a reply")
	h.on.Store(false)
	if err != nil {
		t.Fatalf("a reply left to its job answered %v", err)
	}
	startWorker(t, s, "heir")
	waitJobsDone(t, s)
	checkNoReply(t, s, ann, bob, cat, st, before, notes)
}

// checkNoReply fails the test if bob's reply to ann's status st is left
// anywhere: in st's thread, a status of bob's, cat's home (which held
// before), the global timeline, or a notification of ann's (who held
// notes).
func checkNoReply(t *testing.T, s *Service, ann, bob, cat User, st Status, before []int64, notes [3]int64) {
	t.Helper()
	ctx := ctxT(t)
	if ids := zsetIDs(t, s, s.keys.replies(st.ID)); len(ids) != 0 || counts(t, s, st).Replies != 0 {
		t.Errorf("ann's status has replies %v (count %d) after the block", ids, counts(t, s, st).Replies)
	}
	ids := zsetIDs(t, s, s.keys.profile(bob.ID))
	if len(ids) != 0 {
		t.Errorf("bob's profile holds %v after the block", ids)
	}
	last, err := s.LastStatusID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last == st.ID {
		t.Fatal("the reply took no id")
	}
	if n := s.rdb.Exists(ctx, s.keys.status(last)).Val(); n != 0 {
		t.Errorf("the reply's status %d is there after the block", last)
	}
	if got := zsetIDs(t, s, s.keys.home(cat.ID)); len(got) != len(before) {
		t.Errorf("cat's home = %v, want %v", got, before)
	}
	if got := zsetIDs(t, s, s.keys.global()); len(got) != 1 || got[0] != st.ID {
		t.Errorf("the global timeline = %v, want ann's status %d alone", got, st.ID)
	}
	if got := noteSizes(t, s, ann.ID); got != notes {
		t.Errorf("ann's notification ids, records, causes: %v, want %v (none of the reply)", got, notes)
	}
}

// counts is st as a visitor reads it, with its reply, like and repost
// counts.
func counts(t *testing.T, s *Service, st Status) Status {
	t.Helper()
	sts, err := s.Decorate(ctxT(t), 0, []Status{st})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 {
		t.Fatalf("ann's status %d is left out of a visitor's read", st.ID)
	}
	return sts[0]
}
