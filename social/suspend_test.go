package social

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// A suspended account is hidden from every read, its statuses in others'
// timelines included (the job pages through them all), it cannot sign in,
// post or be followed, and its sessions end; lifting the suspension shows
// it all again.
func TestSuspension(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 3})
	startWorker(t, s, "w1")
	ctx := ctxT(t)
	bad, token := signUpToken(t, s, "bad_actor")
	reader, fan, other := signUp(t, s, "reader"), signUp(t, s, "fan"), signUp(t, s, "other")
	follow(t, s, other.ID, "fan")
	follow(t, s, reader.ID, "bad_actor")
	var theirs []int64
	for range 10 {
		theirs = append(theirs, post(t, s, bad.ID, "spam").ID)
	}
	kept := post(t, s, fan.ID, "fine")
	follow(t, s, reader.ID, "fan")
	if _, err := s.Repost(ctx, fan.ID, theirs[0]); err != nil {
		t.Fatal(err)
	}
	visible := func() []int64 {
		t.Helper()
		page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		sts, err := s.Decorate(ctx, reader.ID, page.Statuses)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, st := range sts {
			if st.RepostOf == nil {
				ids = append(ids, st.ID)
			}
		}
		return ids
	}
	if got := visible(); len(got) != 11 {
		t.Fatalf("before the suspension the reader sees %v, want 11 statuses", got)
	}
	// other follows fan alone: fan's repost is in their home.
	reposts := func() int {
		t.Helper()
		page, err := s.HomeTimeline(ctx, other.ID, Cursor{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		sts, err := s.Decorate(ctx, other.ID, page.Statuses)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, st := range sts {
			if st.RepostOf != nil {
				n++
			}
		}
		return n
	}
	if n := reposts(); n != 1 {
		t.Fatalf("before the suspension fan's follower sees %d reposts, want 1", n)
	}

	if changed, err := s.Suspend(ctx, bad.ID); err != nil || !changed {
		t.Fatalf("suspend: %v, %v", changed, err)
	}
	if changed, err := s.Suspend(ctx, bad.ID); err != nil || changed {
		t.Fatalf("suspend again: %v, %v, want false, nil", changed, err)
	}
	waitFor(t, func() bool { return slices.Equal(visible(), []int64{kept.ID}) && reposts() == 0 })
	if _, err := s.Status(ctx, theirs[5]); !errors.Is(err, ErrStatusNotFound) {
		t.Errorf("a suspended account's status: err = %v, want ErrStatusNotFound", err)
	}
	if _, err := s.UserByID(ctx, bad.ID); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("a suspended account's profile: err = %v, want ErrUserNotFound", err)
	}
	if _, err := s.Authenticate(ctx, token); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a suspended account's session: err = %v, want ErrUnauthenticated", err)
	}
	if _, _, err := s.SignIn(ctx, "bad_actor", "password-bad_actor", "192.0.2.1"); !errors.Is(err, ErrSuspended) {
		t.Errorf("sign-in of a suspended account: err = %v, want ErrSuspended", err)
	}
	if _, _, err := s.SignIn(ctx, "bad_actor", "wrong-password-1", "192.0.2.1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("a wrong password for a suspended account: err = %v, want ErrInvalidCredentials (nothing told)", err)
	}
	if _, err := s.Post(ctx, bad.ID, "still here"); !errors.Is(err, ErrSuspended) {
		t.Errorf("a post by a suspended account: err = %v, want ErrSuspended", err)
	}
	if _, _, err := s.Follow(ctx, fan.ID, "bad_actor"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("following a suspended account: err = %v, want ErrUserNotFound", err)
	}
	if n := rdb.ZCard(ctx, s.keys.followers(bad.ID)).Val(); n != 1 {
		t.Errorf("the refused follow wrote: %d followers, want 1", n)
	}
	listed, err := s.Suspended(ctx, Page{Limit: 10})
	if err != nil || len(listed) != 1 || listed[0].ID != bad.ID || !listed[0].Suspended {
		t.Fatalf("suspended accounts = %+v, %v", listed, err)
	}

	if changed, err := s.Unsuspend(ctx, bad.ID); err != nil || !changed {
		t.Fatalf("unsuspend: %v, %v", changed, err)
	}
	waitFor(t, func() bool { return len(visible()) == 11 && reposts() == 1 })
	if _, _, err := s.SignIn(ctx, "bad_actor", "password-bad_actor", "192.0.2.1"); err != nil {
		t.Errorf("sign-in once the suspension is lifted: %v", err)
	}
	if _, err := s.Suspend(ctx, 999_999); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("suspending an unknown uid: err = %v, want ErrUserNotFound", err)
	}
}

// A suspension lifted while its job is under way, and given again, leaves
// the statuses as the last change says.
func TestSuspensionFlips(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	bad := signUp(t, s, "flipper")
	for range 9 {
		post(t, s, bad.ID, "x")
	}
	for range 5 {
		if _, err := s.Suspend(ctx, bad.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Unsuspend(ctx, bad.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Suspend(ctx, bad.ID); err != nil {
		t.Fatal(err)
	}
	startWorker(t, s, "w1")
	startWorker(t, s, "w2")
	waitFor(t, func() bool { return jobsLeft(t, ctx, rdb, s.keys) == 0 })
	ids := zsetIDs(t, s, s.keys.profile(bad.ID))
	for _, id := range ids {
		if h := rdb.HGet(ctx, s.keys.status(id), "hidden").Val(); h != "1" {
			t.Errorf("status %d of the suspended account: hidden = %q, want 1", id, h)
		}
	}
}

// A suspension and its lifting racing each other, the lifting whole
// between the suspension's script and its write of the admins' list (or
// the other way round), leave the list agreeing with the account.
func TestSuspensionRacingItsLiftingKeepsTheList(t *testing.T) {
	t.Parallel()
	for _, suspendedLast := range []bool{false, true} {
		t.Run(fmt.Sprint("suspended at the end=", suspendedLast), func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{})
			ctx := ctxT(t)
			ada := signUp(t, s, "ada")
			if suspendedLast {
				if _, err := s.Suspend(ctx, ada.ID); err != nil {
					t.Fatal(err)
				}
			}
			s.afterSuspendScript = func() {
				s.afterSuspendScript = nil
				var err error
				if suspendedLast {
					_, err = s.Suspend(ctx, ada.ID) // during the lifting
				} else {
					_, err = s.Unsuspend(ctx, ada.ID) // during the suspension
				}
				if err != nil {
					t.Error(err)
				}
			}
			var err error
			if suspendedLast {
				_, err = s.Unsuspend(ctx, ada.ID)
			} else {
				_, err = s.Suspend(ctx, ada.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
			flagged := s.rdb.HExists(ctx, s.keys.user(ada.ID), "suspended").Val()
			listed, err := s.Suspended(ctx, Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if flagged != suspendedLast || (len(listed) == 1) != suspendedLast {
				t.Errorf("ada suspended: %v by her account, listed %+v; want %v both", flagged, listed, suspendedLast)
			}
		})
	}
}
