package social

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"chorus/internal/testio"
)

// waitNoJobs waits, with a deadline far past any busy machine's, until no
// fan-out job of s is queued or under way.
func waitNoJobs(tb testing.TB, s *Service) {
	tb.Helper()
	testio.Eventually(tb, time.Minute, func() string {
		if n := jobsLeft(tb, ctxT(tb), s.rdb, s.keys); n > 0 {
			return fmt.Sprintf("%d jobs still queued", n)
		}
		return ""
	})
}

// addOnce sets s.afterQueue to add login to list id (owned by owner) the
// first time it runs: between the queuing of a status's (or a deletion's)
// jobs and its write, after the status read whether lists hold its author.
func addOnce(tb testing.TB, s *Service, owner, id int64, login string) {
	tb.Helper()
	once := false
	s.afterQueue = func() {
		if !once {
			once = true
			addMember(tb, s, owner, id, login)
		}
	}
}

// A post whose author is added to their first list between the post's
// read of the lists that hold them (none) and its write (the add's
// backfill read their profile before the status was there) reaches the
// list all the same: the post reads those lists again after its write and
// queues the list job.
func TestListAddRacingAPostGetsTheStatus(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	author := signUp(t, s, "author")
	owner := signUp(t, s, "owner")
	follow(t, s, owner.ID, "author")
	l := createList(t, s, owner.ID, "l")
	addOnce(t, s, owner.ID, l.ID, "author")
	st := post(t, s, author.ID, "first")
	s.afterQueue = nil
	startWorker(t, s, "w")
	waitNoJobs(t, s)
	if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, []int64{st.ID}) {
		t.Errorf("list timeline %v, want the status %d posted as its author was added", got, st.ID)
	}
	page, err := s.ListTimeline(ctxT(t), owner.ID, l.ID, Cursor{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := statusIDs(page.Statuses); !slices.Equal(got, []int64{st.ID}) {
		t.Errorf("list read %v, want %d", got, st.ID)
	}
}

// As TestListAddRacingAPostGetsTheStatus, for a repost: the entry reaches
// the list that took its reposter in as it was made.
func TestListAddRacingARepostGetsTheEntry(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	author := signUp(t, s, "author")
	reposter := signUp(t, s, "reposter")
	owner := signUp(t, s, "owner")
	follow(t, s, owner.ID, "reposter")
	l := createList(t, s, owner.ID, "l")
	orig := post(t, s, author.ID, "original")
	addOnce(t, s, owner.ID, l.ID, "reposter")
	if _, err := s.Repost(ctxT(t), reposter.ID, orig.ID); err != nil {
		t.Fatal(err)
	}
	s.afterQueue = nil
	startWorker(t, s, "w")
	waitNoJobs(t, s)
	entries := zsetIDs(t, s, s.keys.profile(reposter.ID))
	if len(entries) != 1 {
		t.Fatalf("the reposter's profile %v, want one entry", entries)
	}
	if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, entries) {
		t.Errorf("list timeline %v, want the entry %v reposted as its reposter was added", got, entries)
	}
}
