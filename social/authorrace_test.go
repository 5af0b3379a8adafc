package social

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"chorus/internal/testio"
)

// A post, or a repost, whose author is suspended between its check (its
// first round trip) and its write is hidden as the suspension's job hides
// the rest, though that job read the author's statuses before it was among
// them; lifting the suspension shows it again. One whose author deletes
// their account there, the deletion's job run to its end, is taken back
// and answered ErrUnauthenticated (the deletion ended the session), a
// repost as a post: nothing of it is left.
func TestPostRacingItsAuthorsSuspensionOrDeletion(t *testing.T) {
	t.Parallel()
	for _, repost := range []bool{false, true} {
		t.Run(fmt.Sprint("repost=", repost), func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
			orig := post(t, s, bob.ID, "worth a repost")
			// Two workers: one waits for the post's jobs while the other
			// runs the account's deletion.
			startWorker(t, s, "worker1")
			startWorker(t, s, "worker2")
			// make posts (or reposts) as ada, with during running between
			// the post's queuing and its write; it returns the status
			// written (a repost's entry).
			make := func(during func()) (int64, error) {
				s.afterQueue = func() { s.afterQueue = nil; during() }
				if repost {
					if _, err := s.Repost(ctx, ada.ID, orig.ID); err != nil {
						return 0, err
					}
					if ids := zsetIDs(t, s, s.keys.profile(ada.ID)); len(ids) == 1 {
						return ids[0], nil
					}
					return 0, nil // taken back
				}
				_, err := s.Post(ctx, ada.ID, "written as the account changes")
				last, _ := rdb.Get(ctx, s.keys.statusSeq()).Int64() // its id, answered or not
				return last, err
			}

			id, err := make(func() {
				if _, err := s.Suspend(ctx, ada.ID); err != nil {
					t.Error(err)
				}
			})
			if err != nil || id == 0 {
				t.Fatalf("made %d: %v", id, err)
			}
			if h := rdb.HGet(ctx, s.keys.status(id), "hidden").Val(); h != "1" {
				t.Errorf("status %d of the suspended author: hidden = %q, want 1", id, h)
			}
			if _, err := s.Unsuspend(ctx, ada.ID); err != nil {
				t.Fatal(err)
			}
			waitJobsDone(t, s)
			if h := rdb.HGet(ctx, s.keys.status(id), "hidden").Val(); h != "" {
				t.Errorf("status %d once the suspension is lifted: hidden = %q, want none", id, h)
			}
			if repost {
				if _, err := s.Unrepost(ctx, ada.ID, orig.ID); err != nil {
					t.Fatal(err)
				}
			}

			id, err = make(func() {
				if err := s.DeleteAccount(ctx, ada.ID, "password-ada", ""); err != nil {
					t.Error(err)
				}
				// The deletion's job run to its end by the worker.
				testio.Eventually(t, 20*time.Second, func() string {
					if n := rdb.Exists(ctx, s.keys.job(deleteAccountJobID(ada.ID))).Val(); n != 0 {
						return "the account's deletion job still runs"
					}
					return ""
				})
			})
			if !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("the post (repost %v) of an account deleted meanwhile answered %v, want ErrUnauthenticated", repost, err)
			}
			waitJobsDone(t, s)
			for key, what := range map[string]string{
				s.keys.user(ada.ID): "ada's hash", s.keys.profile(ada.ID): "ada's profile", s.keys.home(ada.ID): "ada's home",
			} {
				if n := rdb.Exists(ctx, key).Val(); n != 0 {
					t.Errorf("%s is there after her account's deletion: %v", what, rdb.Type(ctx, key).Val())
				}
			}
			if id != 0 {
				if n := rdb.Exists(ctx, s.keys.status(id)).Val(); n != 0 {
					t.Errorf("the post of the deleted account is there")
				}
				if _, err := rdb.ZScore(ctx, s.keys.global(), itoa(id)).Result(); err == nil {
					t.Errorf("the post of the deleted account is in the global timeline")
				}
			}
			if reposts := zsetIDs(t, s, s.keys.reposts(orig.ID)); len(reposts) != 0 {
				t.Errorf("bob's status is reposted by %v after ada's account's deletion", reposts)
			}
		})
	}
}
