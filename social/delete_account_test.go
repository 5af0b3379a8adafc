package social

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// The deletion job walks every part of an account: run pass by pass, it
// ends with no key of the user left but what others hold of them.
func TestDeleteAccountJob(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUpLeaver(t, s, "ada")
	bob := signUp(t, s, "bob")
	follow(t, s, ada.ID, "bob")
	follow(t, s, bob.ID, "ada")
	st, err := s.Post(ctx, ada.ID, "soon gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAccount(ctx, ada.ID, "wrong-password-1", ""); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("a wrong password: %v", err)
	}
	if err := s.DeleteAccount(ctx, ada.ID, leaverPassword, ""); err != nil {
		t.Fatal(err)
	}
	runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(ada.ID)))
	if _, err := s.UserByID(ctx, ada.ID); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("the deleted user reads as %v", err)
	}
	for _, key := range []string{s.keys.user(ada.ID), s.keys.followers(ada.ID), s.keys.following(ada.ID), s.keys.friends(ada.ID), s.keys.profile(ada.ID), s.keys.sessions(ada.ID)} {
		if n, err := s.rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("%s is left (%v)", key, err)
		}
	}
	if _, err := s.Status(ctx, st.ID); !errors.Is(err, ErrStatusNotFound) {
		t.Errorf("ada's status reads as %v", err)
	}
	u, err := s.UserByID(ctx, bob.ID)
	if err != nil || u.Followers != 0 || u.Following != 0 {
		t.Errorf("bob after the deletion: %+v, %v", u, err)
	}
	if _, err := s.UID(ctx, "ADA"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("the deleted account's login leads to %v", err)
	}
	if _, _, err := s.SignUp(ctx, "Ada", "Another", "kettle-drum-42"); !errors.Is(err, ErrLoginTaken) {
		t.Errorf("the deleted account's login taken again: %v", err)
	}
}

// An account deleted while its post is still fanning out leaves nothing of
// it anywhere: the post's later passes, run by workers after the deletion,
// push the status nowhere, or take it out again.
func TestDeleteAccountDuringFanout(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 3})
	ctx := ctxT(t)
	leaver := signUpLeaver(t, s, "leaver")
	fans := make([]User, 12)
	for i := range fans {
		fans[i] = signUp(t, s, fmt.Sprintf("fan%02d", i))
		follow(t, s, fans[i].ID, "leaver")
	}
	var posted []int64
	for i := range 3 {
		// The first pass runs inline (3 followers); the other three wait.
		st, err := s.Post(ctx, leaver.ID, fmt.Sprint("mid fan-out ", i))
		if err != nil {
			t.Fatal(err)
		}
		posted = append(posted, st.ID)
	}
	if err := s.DeleteAccount(ctx, leaver.ID, leaverPassword, ""); err != nil {
		t.Fatal(err)
	}
	startWorker(t, s, "w1")
	startWorker(t, s, "w2")
	waitFor(t, func() bool { return jobsLeft(t, ctx, rdb, s.keys) == 0 })
	for _, f := range fans {
		home := homeIDs(t, s, f.ID)
		for _, id := range posted {
			if slices.Contains(home, id) {
				t.Errorf("%s's home still holds status %d of the deleted account", f.Login, id)
			}
		}
		u, err := s.UserByID(ctx, f.ID)
		if err != nil || u.Following != 0 {
			t.Errorf("%s after the deletion: %+v, %v", f.Login, u, err)
		}
	}
	for _, id := range posted {
		if n := rdb.Exists(ctx, s.keys.status(id)).Val(); n != 0 {
			t.Errorf("status %d of the deleted account is left", id)
		}
	}
	if n := rdb.Exists(ctx, s.keys.user(leaver.ID), s.keys.profile(leaver.ID), s.keys.followers(leaver.ID)).Val(); n != 0 {
		t.Errorf("%d of the deleted account's keys are left", n)
	}
}

// An account's deletion job waits for the account's mark: run as soon as
// it is queued, it does nothing, and the deletion ends as a whole (before,
// a worker that took it at once deleted the user hash the mark then read,
// and the deletion failed with its sessions alive). A deletion whose
// instance dies after queuing its job is finished by a worker, which marks
// the account first.
func TestDeleteAccountJobWaitsForTheMark(t *testing.T) {
	t.Parallel()
	for _, dies := range []bool{false, true} {
		t.Run(fmt.Sprint("dies=", dies), func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{JobClaimIdle: 5 * time.Second})
			ctx := ctxT(t)
			ada, token, err := s.SignUp(ctx, "ada", "Ada", leaverPassword)
			if err != nil {
				t.Fatal(err)
			}
			key := s.keys.job(deleteAccountJobID(ada.ID))
			dead, die := context.WithCancel(ctx)
			s.afterQueue = func() {
				s.afterQueue = nil
				// A worker quick to take it: every pass it may run now.
				for range 100 {
					res, err := s.pass(ctx, key)
					if err != nil {
						t.Error(err)
					}
					if err != nil || res.finished || res.wait {
						break
					}
				}
				if dies {
					die()
				}
			}
			err = s.DeleteAccount(dead, ada.ID, leaverPassword, "")
			if dies != (err != nil) {
				t.Fatalf("the deletion (its instance dying: %v) answered %v", dies, err)
			}
			if dies {
				if _, err := s.Authenticate(ctx, token); err != nil {
					t.Fatalf("the session ended before the job ran: %v", err)
				}
				startWorker(t, s, "heir")
			} else {
				runJobIfQueued(t, s, key)
			}
			waitJobsDone(t, s)
			if _, err := s.Authenticate(ctx, token); !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("the deleted account's session authenticates: %v", err)
			}
			if n := s.rdb.Exists(ctx, s.keys.user(ada.ID), s.keys.sessions(ada.ID)).Val(); n != 0 {
				t.Errorf("%d of the user's hash and sessions are left", n)
			}
			if _, _, err := s.SignUp(ctx, "Ada", "Another", "kettle-drum-42"); !errors.Is(err, ErrLoginTaken) {
				t.Errorf("the deleted account's login taken again: %v", err)
			}
		})
	}
}

// A follow whose first read found both there, and whose writes come once
// the deletion of either has begun, is refused and leaves nothing: the
// deletion's walk of the account's follows began after its mark, and would
// miss a follow written then (before, the follow stood, of or by no one,
// and its count and notification made the deleted account's hash and keys
// again). The deletion runs to its end before the follow's writes, or is
// only marked.
func TestFollowRacingAccountDeletion(t *testing.T) {
	t.Parallel()
	for _, deleted := range []string{"followee", "follower"} {
		for _, finished := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s deleted, deletion finished %v", deleted, finished), func(t *testing.T) {
				t.Parallel()
				s, rdb := newService(t, Options{})
				ctx := ctxT(t)
				ada := signUpLeaver(t, s, "ada") // the one deleted
				bob := signUp(t, s, "bob")
				// The follow of one by the other would make them friends.
				follower, followee, want := bob, ada, ErrUserNotFound
				if deleted == "follower" {
					follower, followee, want = ada, bob, ErrUnauthenticated
				}
				follow(t, s, followee.ID, follower.Login)
				job := s.keys.job(deleteAccountJobID(ada.ID))
				s.betweenFollowReads = func() {
					s.betweenFollowReads = nil
					if err := s.DeleteAccount(ctx, ada.ID, leaverPassword, ""); err != nil {
						t.Error(err)
					}
					if finished {
						runJobIfQueued(t, s, job)
					}
				}
				if _, _, err := s.Follow(ctx, follower.ID, followee.Login); !errors.Is(err, want) {
					t.Fatalf("a follow racing the %s's deletion: %v, want %v", deleted, err, want)
				}
				runJobIfQueued(t, s, job)
				for _, key := range []string{s.keys.user(ada.ID), s.keys.followers(ada.ID), s.keys.following(ada.ID), s.keys.friends(ada.ID), s.keys.notes(ada.ID), s.keys.noteSeq(ada.ID), s.keys.unfollows(ada.ID)} {
					if n := rdb.Exists(ctx, key).Val(); n != 0 {
						t.Errorf("%s of the deleted account is left", key)
					}
				}
				for _, key := range []string{s.keys.following(bob.ID), s.keys.followers(bob.ID), s.keys.friends(bob.ID)} {
					if rdb.ZScore(ctx, key, itoa(ada.ID)).Err() == nil {
						t.Errorf("%s still holds the deleted account", key)
					}
				}
				u, err := s.UserByID(ctx, bob.ID)
				if err != nil || u.Followers != 0 || u.Following != 0 {
					t.Errorf("bob after the deletion: %+v, %v", u, err)
				}
				if got := noteCauses(t, s, bob.ID, protocol.NotifyFollowed); len(got) != 0 {
					t.Errorf("bob's follow notifications: %v, want none", got)
				}
			})
		}
	}
}

// A like whose look after its writes finds the liker's deletion begun is
// dropped, with its notification, and answered as the session's end: the
// deletion's walk of the liker's likes began after its mark, and would miss
// a like written then (before, the like stood, a deleted account's, with
// its notification and the liker's index made again). The deletion runs to
// its end before the like's writes, or is only marked before or after
// them; "again" is a like made once more (a retry) of a like that stood.
func TestLikeRacingAccountDeletion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		again, finished bool
		before          bool // the deletion before the like's writes, else after
	}{
		{name: "finished before the writes", finished: true, before: true},
		{name: "marked after the writes"},
		{name: "again, marked before the writes", again: true, before: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ada := signUp(t, s, "ada")
			bob := signUpLeaver(t, s, "bob")
			st := post(t, s, ada.ID, "liked by a leaver")
			if c.again {
				if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
					t.Fatal(err)
				}
			}
			job := s.keys.job(deleteAccountJobID(bob.ID))
			deleteBob := func() {
				s.beforeLikeWrites, s.afterLikeWrites = nil, nil
				if err := s.DeleteAccount(ctx, bob.ID, leaverPassword, ""); err != nil {
					t.Error(err)
				}
				if c.finished {
					runJobIfQueued(t, s, job)
				}
			}
			if c.before {
				s.beforeLikeWrites = deleteBob
			} else {
				s.afterLikeWrites = deleteBob
			}
			if _, err := s.Like(ctx, bob.ID, st.ID); !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("a like racing the liker's deletion: %v, want ErrUnauthenticated", err)
			}
			runJobIfQueued(t, s, job)
			if n := likeCount(t, s, st.ID); n != 0 {
				t.Errorf("likes = %d, want 0: the deleted account's like stands", n)
			}
			for _, key := range []string{s.keys.user(bob.ID), s.keys.liked(bob.ID)} {
				if n := rdb.Exists(ctx, key).Val(); n != 0 {
					t.Errorf("%s of the deleted account is left", key)
				}
			}
			if got := noteCauses(t, s, ada.ID, protocol.NotifyLiked); len(got) != 0 {
				t.Errorf("ada's like notifications: %v, want none", got)
			}
		})
	}
}

// An account's deletion undoes its blocks both ways, on the other side too:
// no blocked_by of another names it, nor does another's blocks (before,
// both stayed, naming an account no longer there).
func TestDeleteAccountUndoesBlocks(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUpLeaver(t, s, "ada")
	bob, carol := signUp(t, s, "bob"), signUp(t, s, "carol")
	if err := s.Block(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.Block(ctx, carol.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	if err := s.Block(ctx, carol.ID, "bob"); err != nil { // stays
		t.Fatal(err)
	}
	if err := s.DeleteAccount(ctx, ada.ID, leaverPassword, ""); err != nil {
		t.Fatal(err)
	}
	runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(ada.ID)))
	if got := rdb.ZRange(ctx, s.keys.blockedBy(bob.ID), 0, -1).Val(); !slices.Equal(got, []string{itoa(carol.ID)}) {
		t.Errorf("bob's blocked_by: %v, want carol's only", got)
	}
	if got := rdb.ZRange(ctx, s.keys.blocks(carol.ID), 0, -1).Val(); !slices.Equal(got, []string{itoa(bob.ID)}) {
		t.Errorf("carol's blocks: %v, want bob's only", got)
	}
	for _, key := range []string{s.keys.blocks(ada.ID), s.keys.blockedBy(ada.ID)} {
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("%s of the deleted account is left", key)
		}
	}
}

// signUpLeaver signs up login with the password the deletions here give,
// leaverPassword.
func signUpLeaver(tb testing.TB, s *Service, login string) User {
	tb.Helper()
	u, _, err := s.SignUp(ctxT(tb), login, "Name of "+login, leaverPassword)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// leaverPassword is the password of the accounts deleted here.
const leaverPassword = "kettle-drum-41"

// An account's deletion walks its likes and blocks, whose scores are times,
// past entries of one score at a page's edge: more than a page of them,
// all of one millisecond, are all taken out.
func TestDeleteAccountWalksTiedScores(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUpLeaver(t, s, "ada")
	const n, ms = deleteAccountPage + 10, 1_700_000_000_000
	others := make([]int64, n) // no users of these ids: the walks touch their sets only
	for i := range others {
		others[i] = 1_000_000 + int64(i)
		o := itoa(others[i])
		rdb.ZAdd(ctx, s.keys.blocks(ada.ID), redisZ(ms, o))
		rdb.ZAdd(ctx, s.keys.blockedBy(others[i]), redisZ(ms, itoa(ada.ID)))
		rdb.ZAdd(ctx, s.keys.blockedBy(ada.ID), redisZ(ms, o))
		rdb.ZAdd(ctx, s.keys.blocks(others[i]), redisZ(ms, itoa(ada.ID)))
		rdb.ZAdd(ctx, s.keys.liked(ada.ID), redisZ(ms, o)) // statuses not there
	}
	if err := s.DeleteAccount(ctx, ada.ID, leaverPassword, ""); err != nil {
		t.Fatal(err)
	}
	runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(ada.ID)))
	left := 0
	for _, o := range others {
		left += int(rdb.Exists(ctx, s.keys.blockedBy(o), s.keys.blocks(o)).Val())
	}
	if left != 0 {
		t.Errorf("%d sets of others still name the deleted account", left)
	}
	if n := rdb.Exists(ctx, s.keys.blocks(ada.ID), s.keys.blockedBy(ada.ID), s.keys.liked(ada.ID)).Val(); n != 0 {
		t.Errorf("%d of the deleted account's sets are left", n)
	}
}

// A block or a mute whose writes come as the deletion of either account
// runs to its end is taken out again and refused, leaving nothing of the
// deleted account (before, the block stood on both sides, and the deleted
// account's blocked_by or blocks was written again after its keys went).
func TestBlockRacingAccountDeletion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		deleted string // "blocker" or "blocked"
		mute    bool
	}{{"blocker", false}, {"blocked", false}, {"blocker", true}, {"blocked", true}} {
		t.Run(fmt.Sprintf("%s deleted, mute %v", c.deleted, c.mute), func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ada := signUpLeaver(t, s, "ada") // the one deleted
			bob := signUp(t, s, "bob")
			blocker, blocked, want := bob, ada, ErrUserNotFound
			if c.deleted == "blocker" {
				blocker, blocked, want = ada, bob, ErrUnauthenticated
			}
			deleteAda := func() {
				if err := s.DeleteAccount(ctx, ada.ID, leaverPassword, ""); err != nil {
					t.Error(err)
				}
				runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(ada.ID)))
			}
			var err error
			if c.mute {
				// A mute writes once: the deletion runs before, and the
				// mute's first read is made to pass by hand.
				s.betweenRelationReads = func() { s.betweenRelationReads = nil; deleteAda() }
				err = s.Mute(ctx, blocker.ID, blocked.Login)
			} else {
				s.betweenBlockSides = func() { s.betweenBlockSides = nil; deleteAda() }
				err = s.Block(ctx, blocker.ID, blocked.Login)
			}
			if !errors.Is(err, want) {
				t.Fatalf("racing the %s's deletion: %v, want %v", c.deleted, err, want)
			}
			for _, key := range []string{s.keys.user(ada.ID), s.keys.blocks(ada.ID), s.keys.blockedBy(ada.ID), s.keys.mutes(ada.ID)} {
				if n := rdb.Exists(ctx, key).Val(); n != 0 {
					t.Errorf("%s of the deleted account is left", key)
				}
			}
			for _, key := range []string{s.keys.blocks(bob.ID), s.keys.blockedBy(bob.ID), s.keys.mutes(bob.ID)} {
				if rdb.ZScore(ctx, key, itoa(ada.ID)).Err() == nil {
					t.Errorf("%s still holds the deleted account", key)
				}
			}
		})
	}
}

// A follow cut short after its follower's side, retried as the followee's
// deletion begins, is undone by the retry: the first left no entry on the
// followee's side for the deletion's walk to find (before, the retry found
// the follow written already and left it, for good, to a walk that never
// saw it).
func TestFollowRetryRacingAccountDeletion(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUpLeaver(t, s, "ada")
	bob := signUp(t, s, "bob")
	// The first try: the follower's side only, as follow writes it.
	k := s.keys
	seq := rdb.Incr(ctx, k.followSeq()).Val()
	if err := followFollowerScript.Run(ctx, rdb,
		[]string{k.following(bob.ID), k.followers(bob.ID), k.friends(bob.ID), k.user(bob.ID), k.blocks(bob.ID), k.blockedBy(bob.ID)},
		ada.ID, seq, time.Now().UnixMilli(), DefaultMaxFollowing).Err(); err != nil {
		t.Fatal(err)
	}
	job := k.job(deleteAccountJobID(ada.ID))
	s.betweenFollowReads = func() {
		s.betweenFollowReads = nil
		if err := s.DeleteAccount(ctx, ada.ID, leaverPassword, ""); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := s.Follow(ctx, bob.ID, "ada"); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("the retried follow: %v, want ErrUserNotFound", err)
	}
	runJobIfQueued(t, s, job)
	if rdb.ZScore(ctx, k.following(bob.ID), itoa(ada.ID)).Err() == nil {
		t.Error("bob still follows the deleted account")
	}
	if u, err := s.UserByID(ctx, bob.ID); err != nil || u.Following != 0 {
		t.Errorf("bob after the deletion: %+v, %v", u, err)
	}
}

// An account's deletion takes its likes of hidden statuses (their author
// suspended) out of those statuses' likes too: lifting the suspension
// counts no like of the deleted account.
func TestDeleteAccountTakesLikesOfHiddenStatuses(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	bob := signUpLeaver(t, s, "bob")
	st := post(t, s, ada.ID, "liked, then hidden")
	if _, err := s.Like(ctx, bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	startWorker(t, s, "w1")
	if _, err := s.Suspend(ctx, ada.ID); err != nil {
		t.Fatal(err)
	}
	waitJobsDone(t, s)
	if h := rdb.HGet(ctx, s.keys.status(st.ID), "hidden").Val(); h != "1" {
		t.Fatalf("the suspended author's status: hidden = %q, want 1", h)
	}
	if err := s.DeleteAccount(ctx, bob.ID, leaverPassword, ""); err != nil {
		t.Fatal(err)
	}
	waitJobsDone(t, s)
	if _, err := s.Unsuspend(ctx, ada.ID); err != nil {
		t.Fatal(err)
	}
	waitJobsDone(t, s)
	if n := likeCount(t, s, st.ID); n != 0 {
		t.Errorf("likes = %d once the suspension is lifted, want 0: the deleted account's like stands", n)
	}
	if got := noteCauses(t, s, ada.ID, protocol.NotifyLiked); len(got) != 0 {
		t.Errorf("ada's like notifications: %v, want none", got)
	}
}

// A follow made again by a request whose first read came before the
// followee's deletion, written on the follower's side just after the
// deletion's walk took the older follow out there (and before the walk took
// it out of the followee's side), is undone by that request, which tells the
// follower's streams of the friendship it ends: the walk, which finds the
// followee side refused when it looks again, leaves it to it.
func TestFollowAgainRacingTheDeletionsWalk(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUpLeaver(t, s, "ada")
	bob := signUp(t, s, "bob")
	follow(t, s, ada.ID, "bob")
	follow(t, s, bob.ID, "ada") // friends
	k := s.keys
	l := listen(t, s, rdb, s.UserChannel(bob.ID))
	s.betweenFollowReads = func() {
		s.betweenFollowReads = nil
		if err := s.DeleteAccount(ctx, ada.ID, leaverPassword, ""); err != nil {
			t.Error(err)
		}
		// The walk's unfollow of bob's follow, its first step: bob's side.
		if err := unfollowFollowerScript.Run(ctx, rdb, []string{k.following(bob.ID), k.friends(bob.ID), k.pulls(bob.ID), k.user(bob.ID)},
			ada.ID, s.bus.Command(), s.bus.UserChannel(bob.ID), "{}").Err(); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := s.Follow(ctx, bob.ID, "ada"); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("the follow made again: %v, want ErrUserNotFound", err)
	}
	// The follow made again made them friends again, and its undo ended
	// that: bob's streams are told, as the walk would tell them.
	if ended := ofType(eventsSoFar(t, l)[s.UserChannel(bob.ID)], protocol.TypeFriendRemoved); len(ended) != 1 {
		t.Errorf("bob was told of %d friendships ended, want 1", len(ended))
	}
	// The walk's next step, the followee's side, then the rest of the job.
	if _, err := s.syncFollowee(ctx, bob.ID, ada.ID, "", func() (followNote, error) { return s.loadFollowNote(ctx, bob.ID) }); err != nil {
		t.Fatal(err)
	}
	runJobIfQueued(t, s, k.job(deleteAccountJobID(ada.ID)))
	if rdb.ZScore(ctx, k.following(bob.ID), itoa(ada.ID)).Err() == nil {
		t.Error("bob still follows the deleted account")
	}
	if u, err := s.UserByID(ctx, bob.ID); err != nil || u.Following != 0 {
		t.Errorf("bob after the deletion: %+v, %v", u, err)
	}
}

// A sign-in whose password check began before the account's deletion and
// ended after it writes nothing of the user: its known addresses and its
// counts would outlive the deletion, which took them out already.
func TestSignInRacingDeletionWritesNothing(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PasswordHashers: 4})
	ctx := ctxT(t)
	leaver := signUpLeaver(t, s, "leaver")
	checking, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	s.hashers.inSlot = func() {
		if held.CompareAndSwap(false, true) {
			close(checking)
			<-release
		}
	}
	const addr = "198.51.100.7"
	signedIn := make(chan error, 1)
	go func() {
		_, _, err := s.SignIn(ctx, "leaver", leaverPassword, addr)
		signedIn <- err
	}()
	<-checking
	if err := s.DeleteAccount(ctx, leaver.ID, leaverPassword, "198.51.100.8"); err != nil {
		t.Fatal(err)
	}
	runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(leaver.ID)))
	close(release)
	if err := <-signedIn; !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("sign-in racing the deletion: %v, want ErrInvalidCredentials", err)
	}
	// Another attempt after the mark counts nothing either.
	if _, _, err := s.SignIn(ctx, "leaver", leaverPassword, addr); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("sign-in after the deletion: %v, want ErrInvalidCredentials", err)
	}
	// (The address's attempt count, made before the deletion, expires
	// on its own, as docs/API.md says.)
	k := s.keys
	for _, key := range []string{k.signInKnown(leaver.ID), k.signInUnknown(leaver.ID), k.user(leaver.ID)} {
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("%s is left after the deletion (ttl %v)", key, rdb.PTTL(ctx, key).Val())
		}
	}
}

// A list made as its owner's account is deleted is not left behind, with
// the owner's id and the list's name, once the deletion is done: the
// owner's side refuses an account marked for deletion, and a list whose
// owner's side ran just before the mark, its hash written after the
// deletion's job went past the lists, is taken back by its own request.
func TestListMadeDuringAccountDeletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// delete deletes the account of uid as CreateList runs.
		delete func(t *testing.T, s *Service, rdb redis.UniversalClient, uid int64, create func() error) error
	}{
		{"marked before", func(t *testing.T, s *Service, _ redis.UniversalClient, uid int64, create func() error) error {
			ctx := ctxT(t)
			if err := s.DeleteAccount(ctx, uid, leaverPassword, ""); err != nil {
				t.Fatal(err)
			}
			// The job up to the part after its lists.
			key := s.keys.job(deleteAccountJobID(uid))
			for {
				j, ok, err := s.readJob(ctx, key)
				if err != nil || !ok {
					t.Fatalf("the deletion's job: %v %v", ok, err)
				}
				if j.part == deleteBlocks {
					break
				}
				if _, err := s.pass(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			return create()
		}},
		{"marked between the owner's side and the list's", func(t *testing.T, s *Service, rdb redis.UniversalClient, uid int64, create func() error) error {
			rdb.AddHook(&runAfter{script: listCreateScript, do: func() {
				if err := s.DeleteAccount(ctxT(t), uid, leaverPassword, ""); err != nil {
					t.Fatal(err)
				}
				runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(uid)))
			}})
			return create()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ada := signUpLeaver(t, s, "ada")
			err := tc.delete(t, s, rdb, ada.ID, func() error {
				_, err := s.CreateList(ctx, ada.ID, "made while leaving")
				return err
			})
			if !errors.Is(err, ErrUserNotFound) {
				t.Errorf("CreateList: %v, want ErrUserNotFound", err)
			}
			runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(ada.ID)))
			id, err := rdb.Get(ctx, s.keys.listSeq()).Int64()
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{s.keys.list(id), s.keys.listsOut(ada.ID)} {
				if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
					t.Errorf("%s outlives the deletion (%d, %v)", key, n, err)
				}
			}
		})
	}
}
