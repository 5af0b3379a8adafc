package social

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"chorus/internal/testio"
)

// On one Redis a post's frames leave a round trip ahead of its pushes
// (queueFrames); on a cluster they go with them. Either way each follower
// gets a frame once, and only with the status in their home:
//   - unfollow: a follower leaves between the post's page and its frames;
//     the unfollow count moved, so the frames go with the pushes, each
//     follow checked, and the one who left gets neither;
//   - stall: the post's maker stalls there past JobClaimIdle; a worker
//     takes its job over and finishes it, frames and all, and the maker,
//     once it wakes, sends none;
//   - delete: the author deletes the status once its frames went out
//     (they saw their own), before the pushes on one Redis: each follower
//     is told it is gone, and their home holds nothing.
func TestPostFramesGoOnceAroundItsPushes(t *testing.T) {
	t.Parallel()
	for _, race := range []string{"unfollow", "stall", "delete"} {
		t.Run(race, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{JobClaimIdle: 500 * time.Millisecond})
			ctx := ctxT(t)
			author := signUp(t, s, "author")
			fans := followersOf(t, s, "author", 3)
			channels := make([]string, len(fans))
			for i, f := range fans {
				channels[i] = s.bus.UserChannel(f.ID)
			}
			l := listen(t, s, rdb, channels...)
			left := int64(0) // the follower who unfollows as the post is made
			switch race {
			case "unfollow":
				left = fans[0].ID
				s.afterQueue = func() {
					s.afterQueue = nil
					if _, err := s.Unfollow(ctx, left, "author"); err != nil {
						t.Error(err)
					}
				}
			case "stall":
				startWorker(t, s, "worker")
				s.afterQueue = func() {
					s.afterQueue = nil
					testio.Eventually(t, 30*time.Second, func() string {
						if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
							return fmt.Sprintf("the stalled post's job not finished by a worker: %d jobs left", n)
						}
						return ""
					})
				}
			}
			deleted := false
			if race == "delete" {
				startWorker(t, s, "worker")
				s.afterWrite = func() {
					s.afterWrite = nil
					last, err := rdb.Get(ctx, s.keys.statusSeq()).Int64() // the post's id
					if err == nil {
						err = s.DeleteStatus(ctx, author.ID, last)
					}
					if err != nil {
						t.Error(err)
					}
					deleted = true
				}
			}
			st := post(t, s, author.ID, "ahead of its pushes")
			waitJobsDone(t, s)
			if race == "delete" && !deleted {
				t.Fatal("the post made no third round trip to delete it after")
			}

			// The frames each follower should get: the status's, and then,
			// once it is deleted, the deletion's (its id again).
			want := func(uid int64) []int64 {
				switch {
				case uid == left:
					return nil
				case deleted:
					return []int64{st.ID, st.ID}
				}
				return []int64{st.ID}
			}
			wantHome := func(uid int64) []int64 {
				if deleted {
					return nil
				}
				return want(uid)
			}
			frames := eventsUntil(t, l, 20*time.Second, func(got map[string][]event) bool {
				for i, f := range fans {
					if len(got[channels[i]]) < len(want(f.ID)) {
						return false
					}
				}
				return true
			})
			time.Sleep(300 * time.Millisecond) // a frame sent twice comes right behind
			for ch, evs := range eventsSoFar(t, l) {
				frames[ch] = append(frames[ch], evs...)
			}
			for i, f := range fans {
				home := homeIDs(t, s, f.ID)
				got := eventIDs(frames[channels[i]])
				if !slices.Equal(home, wantHome(f.ID)) || !slices.Equal(got, want(f.ID)) {
					t.Errorf("%s: home %v, frames %v; want %v, %v", f.Login, home, got, wantHome(f.ID), want(f.ID))
				}
				if deleted && len(got) == 2 {
					if types := []string{frames[channels[i]][0].Type, frames[channels[i]][1].Type}; types[0] != "status" || types[1] != "status_deleted" {
						t.Errorf("%s: frames of types %v, want the status's, then its deletion's", f.Login, types)
					}
				}
			}
		})
	}
}
