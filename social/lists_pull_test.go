package social

import (
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// walkList pages through list id's whole timeline, limit statuses a page,
// newest first and oldest first, and fails unless both give want (oldest
// first) exactly, each status once.
func walkList(t *testing.T, s *Service, id int64, want []int64) {
	t.Helper()
	ctx := ctxT(t)
	owner, err := s.rdb.HGet(ctx, s.keys.list(id), "owner").Int64()
	if err != nil {
		t.Fatal(err)
	}
	read := func(c Cursor) (TimelinePage, error) { return s.ListTimeline(ctx, owner, id, c) }
	for _, limit := range []int{1, 2, 5, 100} {
		if got, _ := walkTimeline(t, read, Cursor{Limit: limit}); !slices.Equal(got, reversed(want)) {
			t.Errorf("list %d, limit %d, newest first: %v, want %v", id, limit, got, reversed(want))
		}
		if got, _ := walkTimeline(t, read, Cursor{Limit: limit, Forward: true}); !slices.Equal(got, want) {
			t.Errorf("list %d, limit %d, oldest first: %v, want %v", id, limit, got, want)
		}
	}
}

// A pulled author's statuses go to no list: their post queues no list job
// and writes no list timeline, yet every list that holds them reads them,
// merged by id with the stored timeline, with exact cursors both ways. The
// statuses pushed before the promotion stay where they were written (and
// are read once). A list job queued before the promotion and run after it
// writes nothing; a deletion of a status posted once pulled walks no list,
// one of a status from before takes it out of the lists; a pulled member
// taken out of a list leaves its reads.
func TestListsMergePulledMembers(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PullThreshold: 3, FanoutPassSize: 1})
	ctx := ctxT(t)
	k := s.keys
	w := newPullWorld(t, s)
	owner := signUp(t, s, "owner")
	lists := listsOf(t, s, owner.ID, []string{"first", "second"}, "big", "small")
	first, second := lists[0], lists[1]
	for _, l := range lists {
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, w.before) {
			t.Fatalf("list %q after the adds = %v, want the statuses pushed before the promotion %v", l.Name, got, w.before)
		}
	}

	var all, bySmall, byBig []int64
	all = append(all, w.before...)
	for i := range 9 {
		by := w.big
		if i%3 == 1 {
			by = w.small
		}
		st := post(t, s, by.ID, fmt.Sprint("status ", i))
		all = append(all, st.ID)
		job := k.job(listPostJobID(st.ID))
		if by.ID == w.big.ID {
			byBig = append(byBig, st.ID)
			if n := rdb.Exists(ctx, job).Val(); n != 0 {
				t.Fatalf("a pulled author's post queued a list job")
			}
			continue
		}
		bySmall = append(bySmall, st.ID)
		runJob(t, s, job)
	}
	stored := append(slices.Clone(w.before), bySmall...)
	for _, l := range lists {
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, stored) {
			t.Errorf("list %q stores %v, want only the pushed statuses %v", l.Name, got, stored)
		}
		walkList(t, s, l.ID, all)
	}

	// A job queued before the promotion, run after it.
	late := byBig[0]
	key := k.job(listPostJobID(late))
	queueListJob(t, s, rdb, key, "list_post", w.big.ID, late, "ready", 1)
	if steps := runListJob(t, s, key, s.listPostPass); len(steps) != 1 || steps[0].reached != 0 {
		t.Errorf("a list job of a pulled author ran %+v, want one pass reaching no list", steps)
	}
	for _, l := range lists {
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, stored) {
			t.Errorf("list %q after a job of a pulled author = %v, want %v", l.Name, got, stored)
		}
	}

	// Deletions: one posted once pulled, one pushed before.
	for _, id := range []int64{byBig[1], w.before[0]} {
		if err := s.DeleteStatus(ctx, w.big.ID, id); err != nil {
			t.Fatal(err)
		}
		passes := runJob(t, s, k.job(listDeleteJobID(id)))
		if id == byBig[1] && (len(passes) != 1 || passes[0].reached != 0) {
			t.Errorf("the list cleanup of a status posted once pulled ran %+v, want one pass reaching no list", passes)
		}
		all = slices.DeleteFunc(all, func(x int64) bool { return x == id })
	}
	stored = append(slices.Clone(w.before[1:]), bySmall...)
	for _, l := range lists {
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, stored) {
			t.Errorf("list %q after the deletions stores %v, want %v", l.Name, got, stored)
		}
		walkList(t, s, l.ID, all)
	}

	// The pulled member leaves one list.
	if _, err := s.RemoveListMember(ctx, owner.ID, second.ID, "big"); err != nil {
		t.Fatal(err)
	}
	walkList(t, s, second.ID, bySmall)
	walkList(t, s, first.ID, all)
}

// An author in as many lists as the pull threshold is made pulled, though
// their followers are fewer: the first pass of their next list job queues
// the promotion, and once it has run their posts go to no list and are read
// from every list that holds them.
func TestListCountPromotesAuthor(t *testing.T) {
	t.Parallel()
	const threshold = 3
	s, rdb := newService(t, Options{PullThreshold: threshold})
	ctx := ctxT(t)
	k := s.keys
	author := signUp(t, s, "author")
	owner := signUp(t, s, "owner")
	lists := listsOf(t, s, owner.ID, []string{"one", "two", "three"}, "author")
	if n := rdb.ZCard(ctx, k.followers(author.ID)).Val(); n >= threshold {
		t.Fatalf("the author has %d followers; the test wants fewer than %d", n, threshold)
	}
	pushed := post(t, s, author.ID, "the last pushed to lists")
	promotion := k.job(promoteJobID(author.ID))
	if rdb.Exists(ctx, promotion).Val() != 1 {
		t.Fatal("an author in as many lists as the threshold was not queued for promotion")
	}
	runJob(t, s, k.job(listPostJobID(pushed.ID)))
	runJob(t, s, promotion)
	if err := rdb.ZScore(ctx, k.pulledAuthors(), itoa(author.ID)).Err(); err != nil {
		t.Fatalf("the author is not pulled after the promotion: %v", err)
	}
	pulled := post(t, s, author.ID, "merged at read")
	if rdb.Exists(ctx, k.job(listPostJobID(pulled.ID))).Val() != 0 {
		t.Error("a pulled author's post queued a list job")
	}
	for _, l := range lists {
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, []int64{pushed.ID}) {
			t.Errorf("list %q stores %v, want only %d", l.Name, got, pushed.ID)
		}
		walkList(t, s, l.ID, []int64{pushed.ID, pulled.ID})
	}
}

// A list of more pulled members than a read takes one by one reads their
// statuses as a home read does past directPulls: from the site's pulled
// statuses, kept when the list holds their author, merged in order, once
// each, with exact paging both ways, also when each round scans only a few
// pulled statuses and pages end early. A pulled author the owner follows
// but the list does not hold is left out, and so is a member taken out.
func TestListMergesManyPulledMembers(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	s.pulledScan = 5
	ctx := ctxT(t)
	owner := signUp(t, s, "owner")
	authors := followPulled(t, s, owner, directPulls+3)
	outside := authors[len(authors)-1] // followed, pulled, never in the list
	members := authors[:len(authors)-1]
	l, err := s.CreateList(ctx, owner.ID, "many")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range members {
		if _, err := s.AddListMember(ctx, owner.ID, l.ID, a.Login); err != nil {
			t.Fatal(err)
		}
	}
	var want []int64 // oldest first
	byAuthor := map[int64][]int64{}
	for round := range 2 {
		for _, a := range members {
			st := post(t, s, a.ID, fmt.Sprintf("member %d", round))
			want = append(want, st.ID)
			byAuthor[a.ID] = append(byAuthor[a.ID], st.ID)
		}
		post(t, s, outside.ID, "not in the list")
	}
	walkList(t, s, l.ID, want)

	if _, err := s.RemoveListMember(ctx, owner.ID, l.ID, members[0].Login); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(id int64) bool { return slices.Contains(byAuthor[members[0].ID], id) })
	walkList(t, s, l.ID, want)
}

// A list read costs the same Redis commands whether the list holds 200
// pulled members or 500: the list and its members, which of them are
// pulled, the stored window, one range of the site's pulled statuses, one
// ZMSCORE, and the page's statuses. Up to directPulls, one range per
// member.
func TestListReadCostBoundedByPulledMembers(t *testing.T) {
	t.Parallel()
	calls := map[int]int64{}
	for _, n := range []int{10, 200, MaxListMembers} {
		s, rdb := newPrivateService(t, Options{})
		ctx := ctxT(t)
		owner := signUp(t, s, "owner")
		l, err := s.CreateList(ctx, owner.ID, "many")
		if err != nil {
			t.Fatal(err)
		}
		seedPulled(t, s, owner.ID, n, 3)
		// The seeded authors, members of the list as an add writes them,
		// and the list's stored timeline the reader's home's.
		pipe := rdb.Pipeline()
		for a := range n {
			pipe.ZAdd(ctx, s.keys.listMembers(l.ID), redis.Z{Score: float64(a + 1), Member: 3_000_000 + a})
		}
		pipe.ZUnionStore(ctx, s.keys.listStatuses(l.ID), &redis.ZStore{Keys: []string{s.keys.home(owner.ID)}})
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		resetStats(t, rdb)
		page, err := s.ListTimeline(ctx, owner.ID, l.ID, Cursor{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Statuses) != 20 || page.NextBefore == nil {
			t.Fatalf("%d pulled members: a page of %d, next %v; want 20 and a cursor", n, len(page.Statuses), page.NextBefore)
		}
		for name, c := range commandCalls(t, rdb) {
			if name != "info" && name != "config|resetstat" {
				calls[n] += c
			}
		}
	}
	// 3 (the list, its members, which are pulled) + 1 (stored window) + 10
	// ranges + 20 (HMGET of each status).
	if calls[10] != 34 {
		t.Errorf("commands of a list read of 10 pulled members: %d, want 34", calls[10])
	}
	// 3 + 1 + 1 (pulled statuses) + 1 (ZMSCORE) + 20.
	if calls[200] != calls[MaxListMembers] || calls[MaxListMembers] > 26 {
		t.Errorf("commands of a list read: %d of 200 pulled members, %d of %d; want the same, at most 26", calls[200], calls[MaxListMembers], MaxListMembers)
	}
}
