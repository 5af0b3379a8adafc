package social

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
)

// Statuses posted through two instances while both instances' workers race
// for the jobs all reach every list timeline, and their deletions leave
// every list: no list job runs before the status it carries is written (or,
// for a deletion, taken out), however early a worker reads it.
func TestListJobsWaitForTheirStatus(t *testing.T) {
	t.Parallel()
	const perInstance = 150
	opts := Options{FanoutPassSize: 2}
	a, _ := newService(t, opts)
	rdb, _ := redistest.Backend(t)
	opts.Prefix, opts.BcryptCost = a.opts.Prefix, a.opts.BcryptCost
	b := New(rdb, opts)
	// A job queued before its inputs has no stream entry until it is marked
	// ready (queue_job.lua): the workers race the makers' first passes from
	// then on. The pauses after queueing (before it, on one Redis, where
	// the jobs and the status go in one round trip) and after the status
	// is written stand for a slow maker, whose job a worker must not run
	// early.
	for _, s := range []*Service{a, b} {
		s.afterQueue = func() { time.Sleep(5 * time.Millisecond) }
		s.afterWrite = func() { time.Sleep(5 * time.Millisecond) }
	}
	for i, s := range []*Service{a, b} {
		for w := range 2 {
			startWorker(t, s, fmt.Sprintf("instance%d-worker%d", i, w))
		}
	}

	author := signUp(t, a, "author")
	var lists []List
	for _, owner := range signUpMany(t, a, "owner", 3) {
		follow(t, a, owner.ID, "author")
		lists = append(lists, listsOf(t, a, owner.ID, []string{"first", "second"}, "author")...)
	}

	var (
		mu     sync.Mutex
		posted []Status
		wg     sync.WaitGroup
	)
	for i, s := range []*Service{a, b} {
		wg.Go(func() {
			for n := range perInstance {
				st, err := s.Post(ctxT(t), author.ID, fmt.Sprintf("status %d from instance %d", n, i))
				if err != nil {
					t.Errorf("post: %v", err)
					return
				}
				mu.Lock()
				posted = append(posted, st)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := statusIDs(posted)
	slices.Sort(want)
	missing := func() string {
		for _, l := range lists {
			got := listTimelineIDs(t, a, l.ID)
			var lost []int64
			for _, id := range want {
				if _, ok := slices.BinarySearch(got, id); !ok {
					lost = append(lost, id)
				}
			}
			if len(lost) > 0 || len(got) != len(want) {
				return fmt.Sprintf("list %d holds %d of the %d statuses; missing %v", l.ID, len(got), len(want), lost)
			}
		}
		return ""
	}
	jobsDone := func() string {
		if n := jobsLeft(t, ctxT(t), a.rdb, a.keys); n > 0 {
			return fmt.Sprintf("%d jobs still queued", n)
		}
		return ""
	}
	testio.Eventually(t, 2*time.Minute, jobsDone)
	if msg := missing(); msg != "" {
		t.Fatal(msg)
	}

	// Deleting them all, through both instances, empties every list.
	for i, st := range posted {
		s := []*Service{a, b}[i%2]
		wg.Go(func() {
			if err := s.DeleteStatus(ctxT(t), author.ID, st.ID); err != nil {
				t.Errorf("delete %d: %v", st.ID, err)
			}
		})
		if i%8 == 7 {
			wg.Wait()
		}
	}
	wg.Wait()
	testio.Eventually(t, 2*time.Minute, jobsDone)
	for _, l := range lists {
		if got := listTimelineIDs(t, a, l.ID); len(got) > 0 {
			t.Errorf("list %d still holds %d deleted statuses: %v", l.ID, len(got), got)
		}
	}
}
