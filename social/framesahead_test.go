package social

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// On one Redis a post's frames leave a round trip ahead of its pushes, in
// the round trip that writes the status (queueFrames); on a cluster they
// go with the pushes. Either way each follower connected gets a frame
// once, only with the status in their home, and is told of its deletion.
// A post to three followers, f00 and f01 connected, f02 too unless the
// case says not, made as something races it:
//   - unfollow: f00 leaves between the post's page and its frames; the
//     unfollow count moved, so the frames go with the pushes, each follow
//     checked, and f00 gets neither;
//   - stall: the post's maker stalls past JobClaimIdle, once its frames
//     went out on one Redis, before it writes the status on a cluster; a
//     worker takes its job over and finishes it, frames and all on a
//     cluster, and the maker, once it wakes, sends none;
//   - adopted, on a cluster (on one Redis the job is queued in the round
//     trip that sends the frames, and no worker can take it over
//     between; TestFramesCallAnswers has that call's answers): the same,
//     but the worker reads the job before the maker's pushes, and pushes
//     after them;
//   - delete: the author deletes the status once its frames went out
//     (they saw their own), before the pushes on one Redis: each is told;
//   - delete, f02 away: the same, f02 not connected as presence's set
//     says (a stream may be live before it is listed): on one Redis it was
//     framed with the others, and is told with them; on a cluster it got
//     no frame, and the deletion's walk of its home tells it;
//   - delete, f02 away long: the same as delete, f02 last seen longer
//     ago than InactiveAfter and connected (on one Redis its push checks
//     that as it runs, see followerActivity): told once all the same;
//   - died: the maker dies once its frames went out (on a cluster, with
//     its pushes), and f02, not connected then, connects; a worker takes
//     the job over and sends f02 its frame with its push (on one Redis the
//     frames went to every follower of the page, but f02 was told online
//     since), and the others none (on a cluster, f02's home had it: none
//     at all);
//   - died, deleted: the same, the status deleted before the worker takes
//     the job over: those who got the frame are told it is gone (on a
//     cluster, by the deletion's walk, which tells f02 too).
func TestPostFramesGoOnceAroundItsPushes(t *testing.T) {
	t.Parallel()
	ahead := !redistest.OnCluster() // the frames go ahead of the pushes
	races := []string{"unfollow", "stall", "delete", "delete, f02 away", "delete, f02 away long", "died", "died, deleted"}
	if !ahead {
		races = append(races, "adopted")
	}
	for _, race := range races {
		t.Run(race, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := redistest.Backend(t)
			opts := Options{Prefix: prefix, BcryptCost: 4, HashWait: time.Minute,
				JobClaimIdle: 500 * time.Millisecond, ConnectedKey: prefix + "test:connected"}
			s := New(rdb, opts)
			dying := mortal(t, rdb, opts)
			ctx := ctxT(t)
			author := signUp(t, s, "author")
			fans := followersOf(t, s, "author", 3)
			// connect marks u connected, told online now (presence's set),
			// and listens on u's channel from then on, as u's stream.
			channels := make([]string, len(fans))
			for i, f := range fans {
				channels[i] = s.bus.UserChannel(f.ID)
			}
			listeners := make([]*listener, len(fans))
			connect := func(u ...User) {
				var chans []string
				for _, f := range u {
					now := float64(time.Now().UnixMilli())
					if err := rdb.ZAdd(ctx, opts.ConnectedKey, redis.Z{Score: now, Member: itoa(f.ID)}).Err(); err != nil {
						t.Fatal(err)
					}
					chans = append(chans, s.bus.UserChannel(f.ID))
				}
				l := listen(t, s, rdb, chans...)
				for i, f := range fans {
					if slices.Contains(u, f) {
						listeners[i] = l
					}
				}
			}
			died := race == "died" || race == "died, deleted"
			switch {
			case died:
				connect(fans[0], fans[1])
			case race == "delete, f02 away":
				connect(fans[0], fans[1])
				listeners[2] = listen(t, s, rdb, channels[2]) // listened to, not listed
			default:
				connect(fans...)
			}
			l := listeners[0]
			lastID := func() int64 { // the post's id, answered or not
				id, err := rdb.Get(ctx, s.keys.statusSeq()).Int64()
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			noJobsLeft := func() string {
				if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
					return fmt.Sprintf("%d jobs left", n)
				}
				return ""
			}

			// The frames each follower should get, their types, and what
			// their home should hold.
			frames := []string{protocol.TypeStatus}
			want := [][]string{frames, frames, frames}
			homes := []bool{true, true, true}
			switch race {
			case "unfollow":
				want[0], homes[0] = nil, false
				// The unfollow count moved: the post leaves its job to a
				// worker's pass over the page again (lateFollowers), which
				// adds nothing and sends no frame twice.
				startWorker(t, s, "worker")
				s.afterQueue = func() {
					s.afterQueue = nil
					if _, err := s.Unfollow(ctx, fans[0].ID, "author"); err != nil {
						t.Error(err)
					}
				}
			case "stall":
				startWorker(t, s, "worker")
				stall := func() { testio.Eventually(t, 30*time.Second, noJobsLeft) }
				if ahead {
					s.afterWrite = func() { s.afterWrite = nil; stall() }
				} else {
					s.afterQueue = func() { s.afterQueue = nil; stall() }
				}
			case "adopted":
				read, release := make(chan struct{}), make(chan struct{})
				s.beforeRewrite = func(job) {
					s.beforeRewrite = nil
					close(read)
					<-release
				}
				startWorker(t, s, "worker")
				s.afterQueue = func() {
					s.afterQueue = nil
					<-read // the worker took the job over and read it
				}
				s.afterWrite = func() {
					s.afterWrite = nil
					close(release)
					testio.Eventually(t, 30*time.Second, noJobsLeft)
				}
			case "delete", "delete, f02 away", "delete, f02 away long", "died, deleted":
				gone := []string{protocol.TypeStatus, protocol.TypeStatusDeleted}
				want, homes = [][]string{gone, gone, gone}, []bool{false, false, false}
				if race == "delete, f02 away" && !ahead {
					// Pushed with no frame; the deletion's walk tells it.
					want[2] = []string{protocol.TypeStatusDeleted}
				}
			}
			if race == "delete, f02 away long" {
				lastSeenAgo(t, s, fans[2].ID, 8*24*time.Hour)
			}
			if strings.HasPrefix(race, "delete") {
				startWorker(t, s, "worker")
				s.afterWrite = func() {
					s.afterWrite = nil
					if err := s.DeleteStatus(ctx, author.ID, lastID()); err != nil {
						t.Error(err)
					}
				}
			}

			if died {
				post(t, dying, author.ID, "loads the scripts")
				for ch, evs := range eventsUntil(t, l, 20*time.Second, func(got map[string][]event) bool { return len(got[channels[1]]) > 0 }) {
					if len(evs) != 1 {
						t.Fatalf("the first post: %d frames on %s, want 1", len(evs), ch)
					}
				}
				// Its frames sent, before its pushes.
				death := &deathAt{before: 3}
				if ahead {
					death.before = 2
				}
				if _, err := dying.Post(context.WithValue(ctx, deathKey{}, death), author.ID, "ahead of its pushes"); err != nil {
					t.Fatalf("a post that died after its round trip %d, its job queued, answered %v, want its status", death.before, err)
				}
				time.Sleep(10 * time.Millisecond) // told online a millisecond after the frames, at least
				connect(fans[2])
				if race == "died, deleted" {
					if err := s.DeleteStatus(ctx, author.ID, lastID()); err != nil {
						t.Fatal(err)
					}
					// Framed (its frame went to every follower of the page,
					// connected or not), then told it is gone; on a
					// cluster its home had it, and the deletion's walk
					// tells it.
					want[2] = []string{protocol.TypeStatusDeleted}
				} else if ahead {
					want[2] = frames // connected since the frames: the worker's push sends it
				} else {
					want[2] = nil // its home had it as it connected
				}
				startWorker(t, s, "worker")
			} else {
				post(t, s, author.ID, "ahead of its pushes")
			}
			id := lastID()
			waitJobsDone(t, s)

			got := map[string][]event{}
			for i, li := range listeners {
				if i > 0 && li == listeners[i-1] {
					continue
				}
				maps.Copy(got, eventsUntil(t, li, 20*time.Second, func(got map[string][]event) bool {
					for i := range fans {
						if listeners[i] == li && len(ofStatus(got[channels[i]], id)) < len(want[i]) {
							return false
						}
					}
					return true
				}))
			}
			time.Sleep(300 * time.Millisecond) // a frame sent twice comes right behind
			for i, li := range listeners {
				if i > 0 && li == listeners[i-1] {
					continue
				}
				for ch, evs := range eventsSoFar(t, li) {
					got[ch] = append(got[ch], evs...)
				}
			}
			for i, f := range fans {
				var types []string
				for _, ev := range ofStatus(got[channels[i]], id) {
					types = append(types, ev.Type)
				}
				home := slices.Contains(homeIDs(t, s, f.ID), id)
				if !slices.Equal(types, want[i]) || home != homes[i] {
					t.Errorf("%s: frames %v, status in home %v; want %v, %v", f.Login, types, home, want[i], homes[i])
				}
			}
		})
	}
}

// ofStatus returns the events about status id.
func ofStatus(events []event, id int64) []event {
	var out []event
	for _, ev := range events {
		if eventIDs([]event{ev})[0] == id {
			out = append(out, ev)
		}
	}
	return out
}
