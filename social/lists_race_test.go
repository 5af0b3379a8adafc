package social

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"

	"github.com/redis/go-redis/v9"
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

// A status deleted while its author is added to their first list (the
// add's backfill copied it before the deletion) leaves the list: the
// deletion reads the lists that hold its author again once the status is
// gone, and queues the list job. So does a repost undone (Unrepost deletes
// its entry).
func TestListAddRacingADeletionLosesTheStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		undo bool // the status is a repost entry, and the repost undone
	}{{"delete", false}, {"unrepost", true}} {
		undo := c.undo
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{})
			author := signUp(t, s, "author")
			owner := signUp(t, s, "owner")
			follow(t, s, owner.ID, "author")
			l := createList(t, s, owner.ID, "l")
			st := post(t, s, author.ID, "soon deleted")
			deleted, remove := st, func() error { return s.DeleteStatus(ctxT(t), author.ID, st.ID) }
			if undo {
				// The author reposts another's status, and undoes it.
				other := signUp(t, s, "other")
				orig := post(t, s, other.ID, "reposted")
				if _, err := s.Repost(ctxT(t), author.ID, orig.ID); err != nil {
					t.Fatal(err)
				}
				entry := zsetIDs(t, s, s.keys.profile(author.ID))
				deleted.ID = entry[len(entry)-1]
				remove = func() error { _, err := s.Unrepost(ctxT(t), author.ID, orig.ID); return err }
			}
			startWorker(t, s, "w")
			waitNoJobs(t, s)
			addOnce(t, s, owner.ID, l.ID, "author")
			if err := remove(); err != nil {
				t.Fatal(err)
			}
			s.afterQueue = nil
			waitNoJobs(t, s)
			if got := zsetIDs(t, s, s.keys.listsIn(author.ID)); !slices.Equal(got, []int64{l.ID}) {
				t.Fatalf("list:in of the author %v, want the list %d", got, l.ID)
			}
			if got := listTimelineIDs(t, s, l.ID); slices.Contains(got, deleted.ID) {
				t.Errorf("list timeline %v holds %d, deleted as its author was added", got, deleted.ID)
			}
		})
	}
}

// addBeforeDel is a hook that runs add in the first pipeline that deletes
// key, once the commands before the DEL are answered and before it is
// sent: where a deletion of the status at key reads the lists that hold
// its author just before deleting its hash.
type addBeforeDel struct {
	key   string
	add   func()
	fired atomic.Bool
}

func (h *addBeforeDel) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *addBeforeDel) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *addBeforeDel) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		i := slices.IndexFunc(cmds, func(c redis.Cmder) bool {
			args := c.Args()
			return c.Name() == "del" && len(args) == 2 && args[1] == any(h.key)
		})
		if i < 0 || !h.fired.CompareAndSwap(false, true) {
			return next(ctx, cmds)
		}
		if i > 0 {
			if err := next(ctx, cmds[:i]); err != nil {
				return err
			}
		}
		h.add()
		return next(ctx, cmds[i:])
	}
}

// A repost entry deleted with its original (dropReposts) while its
// reposter is added to their first list, the add's backfill copying the
// entry before its hash went, leaves the list: the lists that hold the
// reposter are read once the hash is gone.
func TestListAddRacingARepostsDropLosesTheEntry(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	author := signUp(t, s, "author")
	reposter := signUp(t, s, "reposter")
	owner := signUp(t, s, "owner")
	follow(t, s, owner.ID, "reposter")
	l := createList(t, s, owner.ID, "l")
	orig := post(t, s, author.ID, "original")
	if _, err := s.Repost(ctxT(t), reposter.ID, orig.ID); err != nil {
		t.Fatal(err)
	}
	entries := zsetIDs(t, s, s.keys.profile(reposter.ID))
	if len(entries) != 1 {
		t.Fatalf("the reposter's profile %v, want one entry", entries)
	}
	h := &addBeforeDel{key: s.keys.status(entries[0]), add: func() { addMember(t, s, owner.ID, l.ID, "reposter") }}
	// No worker yet: the original's deletion runs its drop_reactions job's
	// first pass, which deletes the entry, through the hook.
	hooked := New(redistest.WithHook(t, rdb, h), s.opts)
	if err := hooked.DeleteStatus(ctxT(t), author.ID, orig.ID); err != nil {
		t.Fatal(err)
	}
	if !h.fired.Load() {
		t.Fatal("the entry's hash was not deleted in a pipeline of the original's deletion")
	}
	startWorker(t, s, "w")
	waitNoJobs(t, s)
	if got := zsetIDs(t, s, s.keys.listsIn(reposter.ID)); !slices.Equal(got, []int64{l.ID}) {
		t.Fatalf("list:in of the reposter %v, want the list %d", got, l.ID)
	}
	if got := listTimelineIDs(t, s, l.ID); len(got) > 0 {
		t.Errorf("list timeline %v, want none: entry %d was deleted as its reposter was added", got, entries[0])
	}
}

// markDeleted makes the first step of DeleteList of list id by owner, the
// mark, as a deletion cut short right after it leaves it.
func markDeleted(tb testing.TB, s *Service, owner, id int64) {
	tb.Helper()
	k := s.keys
	if err := listDeleteScript.Run(ctxT(tb), s.rdb, []string{k.list(id), k.listMembers(id)}, owner).Err(); err != nil {
		tb.Fatal(err)
	}
}

// listKeysLeft returns those of list id's keys that are still there.
func listKeysLeft(tb testing.TB, s *Service, id int64) []string {
	tb.Helper()
	var left []string
	for _, key := range []string{s.keys.list(id), s.keys.listMembers(id), s.keys.listStatuses(id)} {
		n, err := s.rdb.Exists(ctxT(tb), key).Result()
		if err != nil {
			tb.Fatal(err)
		}
		if n != 0 {
			left = append(left, key)
		}
	}
	return left
}

// A DeleteList cut short after its mark leaves a list its owner no longer
// sees, and so may never delete again: the owner's next read of their
// lists once the list's place is a minute old finishes the deletion,
// giving back its place among their MaxListsPerUser and taking it out of
// its members' list:in, so that no status is routed to it. A younger one
// is left to the owner's retry.
func TestListDeletionCutShortIsFinishedByLists(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	owner := signUp(t, s, "owner")
	author := signUp(t, s, "author")
	follow(t, s, owner.ID, "author")
	var lists []List
	for i := range MaxListsPerUser {
		lists = append(lists, createList(t, s, owner.ID, fmt.Sprint("l", i)))
	}
	cut := lists[0].ID
	addMember(t, s, owner.ID, cut, "author")
	post(t, s, author.ID, "in the list")
	markDeleted(t, s, owner.ID, cut)
	out := s.keys.listsOut(owner.ID)
	if _, err := s.Lists(ctx, owner.ID); err != nil {
		t.Fatal(err)
	}
	if got := zsetIDs(t, s, out); !slices.Contains(got, cut) {
		t.Fatalf("owner's places %v lost the list of the last minute marked deleted", got)
	}

	made := time.Now().Add(-2 * lostListAfter).UnixMilli()
	if err := s.rdb.ZAdd(ctx, out, redis.Z{Score: float64(made), Member: cut}).Err(); err != nil {
		t.Fatal(err)
	}
	seen, err := s.Lists(ctx, owner.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Lists made in one millisecond come in the order of their ids' text.
	if got, want := slices.Sorted(slices.Values(listIDs(seen))), listIDs(lists[1:]); !slices.Equal(got, want) {
		t.Errorf("owner's lists %v, want %v", got, want)
	}
	if got := zsetIDs(t, s, out); slices.Contains(got, cut) {
		t.Errorf("owner's places %v still hold the list deleted", got)
	}
	if got := zsetIDs(t, s, s.keys.listsIn(author.ID)); len(got) > 0 {
		t.Errorf("list:in of its member %v, want none", got)
	}
	if left := listKeysLeft(t, s, cut); len(left) > 0 {
		t.Errorf("keys of the list deleted left: %v", left)
	}
	if _, err := s.CreateList(ctx, owner.ID, "new"); err != nil {
		t.Errorf("the owner of %d lists cannot make another: %v", len(seen), err)
	}
}

// A list_post pass takes a list marked deleted (a DeleteList cut short
// after its mark, its owner yet to read their lists) for gone: it takes
// the status it wrote there back out, with the list's timeline, and the
// list out of its author's list:in.
func TestListPassTakesAMarkedListForGone(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	owner := signUp(t, s, "owner")
	author := signUp(t, s, "author")
	follow(t, s, owner.ID, "author")
	kept := createList(t, s, owner.ID, "kept")
	cut := createList(t, s, owner.ID, "cut")
	addMember(t, s, owner.ID, kept.ID, "author")
	addMember(t, s, owner.ID, cut.ID, "author")
	markDeleted(t, s, owner.ID, cut.ID)
	st := post(t, s, author.ID, "after the mark")
	startWorker(t, s, "w")
	waitNoJobs(t, s)
	if got := listTimelineIDs(t, s, kept.ID); !slices.Equal(got, []int64{st.ID}) {
		t.Errorf("the list kept holds %v, want %d", got, st.ID)
	}
	if got := listTimelineIDs(t, s, cut.ID); len(got) > 0 {
		t.Errorf("the list marked deleted holds %v", got)
	}
	if got := zsetIDs(t, s, s.keys.listsIn(author.ID)); !slices.Equal(got, []int64{kept.ID}) {
		t.Errorf("list:in of the author %v, want only the list kept, %d", got, kept.ID)
	}
}

// A list pass whose read of one list fails, another list's member read
// answering none (its author just taken out), fails whole and is run
// again: the missing member's answer hid the failure, whose empty answer
// was read as the list's fields (a panic), or as the list gone (its
// timeline deleted).
func TestListPassReadFailureBehindAMissingMember(t *testing.T) {
	t.Parallel()
	s, h := failingService(t, Options{}, nil)
	h.alone.Store(true)
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	owner := signUp(t, s, "owner")
	follow(t, s, owner.ID, "author")
	gone := createList(t, s, owner.ID, "gone")
	kept := createList(t, s, owner.ID, "kept")
	addMember(t, s, owner.ID, gone.ID, "author")
	addMember(t, s, owner.ID, kept.ID, "author")
	earlier := post(t, s, author.ID, "earlier")
	// Taken out of the first list, not yet out of the lists that hold it.
	if err := s.rdb.ZRem(ctx, s.keys.listMembers(gone.ID), itoa(author.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	h.set(naming(s.keys.list(kept.ID)))
	h.on.Store(true)
	st := post(t, s, author.ID, "while the kept list's read fails")
	h.on.Store(false)
	runJobIfQueued(t, s, s.keys.job(listPostJobID(st.ID)))
	if got := listTimelineIDs(t, s, kept.ID); !slices.Contains(got, st.ID) || !slices.Contains(got, earlier.ID) {
		t.Errorf("the kept list's timeline %v, want %d and %d", got, st.ID, earlier.ID)
	}
}
