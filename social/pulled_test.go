package social

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// seedPulled has reader follow n pulled authors (uids from 3,000,000 on,
// no accounts: a home read reads only the keys written here) who posted
// `each` statuses apiece in turns, written as their posts write them, and
// gives reader a home timeline of 30 pushed statuses older than those.
func seedPulled(tb testing.TB, s *Service, reader int64, n, each int) {
	tb.Helper()
	ctx := context.Background()
	pipe := s.rdb.Pipeline()
	status := func(id, author int64) {
		pipe.HSet(ctx, s.keys.status(id), "id", id, "uid", author, "login", "a"+itoa(author),
			"name", "Author", "message", "seeded status", "posted", 1)
	}
	for i := range 30 {
		id := int64(i + 1)
		status(id, 2_000_000)
		pipe.ZAdd(ctx, s.keys.home(reader), redis.Z{Score: float64(id), Member: id})
	}
	for a := range n {
		author := int64(3_000_000 + a)
		pipe.ZAdd(ctx, s.keys.pulls(reader), redis.Z{Score: float64(a + 1), Member: author})
		pipe.ZAdd(ctx, s.keys.pulledAuthors(), redis.Z{Score: 1, Member: author})
		for i := range each {
			id := int64(1000 + i*n + a)
			status(id, author)
			pipe.ZAdd(ctx, s.keys.pulledStatuses(), redis.Z{Score: float64(id), Member: pulledMember(id, author)})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
}

// A home read costs the same Redis commands whether its reader follows 200
// pulled authors or 1,000: the stored window and the first pulled
// authors, one range of the site's pulled statuses, one ZMSCORE, and the
// page's statuses. Up to directPulls, one range per author.
func TestHomeReadCostBoundedByPulledAuthors(t *testing.T) {
	t.Parallel()
	calls := map[int]int64{}
	for _, n := range []int{10, 200, 1000} {
		s, rdb := newPrivateService(t, Options{})
		reader := signUp(t, s, "reader")
		seedPulled(t, s, reader.ID, n, 3)
		resetStats(t, rdb)
		page, err := s.HomeTimeline(ctxT(t), reader.ID, Cursor{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Statuses) != 20 || page.NextBefore == nil {
			t.Fatalf("%d pulled authors: a page of %d, next %v; want 20 and a cursor", n, len(page.Statuses), page.NextBefore)
		}
		for name, c := range commandCalls(t, rdb) {
			if name != "info" && name != "config|resetstat" {
				calls[n] += c
			}
		}
	}
	// 2 (home window, pulled authors) + 10 ranges + 20 (HMGET of each status).
	if calls[10] != 32 {
		t.Errorf("commands of a home read following 10 pulled authors: %d, want 32", calls[10])
	}
	// 2 + 1 (pulled statuses) + 1 (ZMSCORE) + 20.
	if calls[200] != calls[1000] || calls[1000] > 24 {
		t.Errorf("commands of a home read: %d following 200 pulled authors, %d following 1,000; want the same, at most 24", calls[200], calls[1000])
	}
}

// A reader who follows more pulled authors than a read takes one by one
// reads their statuses, and none of the pulled authors they do not follow,
// merged with the pushed ones in order, once each, with exact paging both
// ways, also when each round of a read scans only a few pulled statuses
// and pages end early; a deleted status and an unfollowed author's leave
// the reads.
func TestPulledStatusesMergedIntoHome(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	s.pulledScan = 5
	ctx := ctxT(t)
	reader := signUp(t, s, "reader")
	pushed := signUp(t, s, "pushed")
	follow(t, s, reader.ID, pushed.Login)
	authors := followPulled(t, s, reader, directPulls+2)
	stranger := followPulled(t, s, signUp(t, s, "other"), 1)[0] // pulled, not followed by reader

	var want []int64 // oldest first
	byAuthor := map[int64][]int64{}
	for round := range 2 {
		for i := range 2 {
			want = append(want, post(t, s, pushed.ID, fmt.Sprintf("pushed %d %d", round, i)).ID)
		}
		for _, a := range authors {
			st := post(t, s, a.ID, fmt.Sprintf("pulled %d", round))
			want = append(want, st.ID)
			byAuthor[a.ID] = append(byAuthor[a.ID], st.ID)
			post(t, s, stranger.ID, "not followed")
		}
		want = append(want, post(t, s, reader.ID, fmt.Sprintf("own %d", round)).ID)
	}
	check := func(when string) {
		t.Helper()
		newestWant := reversed(want)
		for _, limit := range []int{5, 40} {
			newest, oldest := walkHome(t, s, reader.ID, limit)
			if !slices.Equal(newest, newestWant) {
				t.Errorf("%s, limit %d, newest first: %v, want %v", when, limit, newest, newestWant)
			}
			if !slices.Equal(oldest, want) {
				t.Errorf("%s, limit %d, oldest first: %v, want %v", when, limit, oldest, want)
			}
		}
	}
	check("posted")

	gone := byAuthor[authors[0].ID][1]
	if err := s.DeleteStatus(ctx, authors[0].ID, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unfollow(ctx, reader.ID, authors[1].Login); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(id int64) bool {
		return id == gone || slices.Contains(byAuthor[authors[1].ID], id)
	})
	check("after a delete and an unfollow")
}

// The site's pulled statuses keep the newest Options.PulledStatuses (and
// up to trimEvery more between trims).
func TestPulledStatusesTrimmed(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PulledStatuses: 10})
	author := followPulled(t, s, signUp(t, s, "reader"), 1)[0]
	var last int64
	for i := range 60 {
		last = post(t, s, author.ID, fmt.Sprintf("status %d", i)).ID
	}
	held, err := rdb.ZRange(ctxT(t), s.keys.pulledStatuses(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(held) < 10 || len(held) > 10+trimEvery || held[len(held)-1] != pulledMember(last, author.ID) {
		t.Errorf("pulled statuses hold %d, newest %q; want 10 to %d, newest %q", len(held), held[len(held)-1], 10+trimEvery, pulledMember(last, author.ID))
	}
}

// A Redis from before the pulled statuses gets them filled once from the
// pulled authors' profiles: what each posted once pulled, not what was
// pushed before.
func TestFillPulledStatuses(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	reader := signUp(t, s, "reader")
	authors := followPulled(t, s, reader, directPulls+1)
	var want []string
	for i, a := range authors {
		pushed := post(t, s, a.ID, "before").ID
		// Pulled from the status after: as a promotion writes it.
		rdb.ZAdd(ctx, s.keys.pulledAuthors(), redis.Z{Score: float64(pushed + 1), Member: a.ID})
		if i%2 == 0 {
			want = append(want, pulledMember(post(t, s, a.ID, "after").ID, a.ID))
		}
	}
	// As an older Redis: the statuses only in the profiles.
	for _, key := range []string{s.keys.pulledStatuses(), s.keys.pulledStatusesFilled()} { // two slots on a cluster
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := s.FillPulledStatuses(ctx, log); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.ZRange(ctx, s.keys.pulledStatuses(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("pulled statuses after the fill: %v, want %v", got, want)
	}
	page, err := s.HomeTimeline(ctx, reader.ID, Cursor{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Statuses) != len(want) {
		t.Errorf("home after the fill holds %d statuses, want the %d pulled ones", len(page.Statuses), len(want))
	}
	// Once filled, never again.
	rdb.Del(ctx, s.keys.pulledStatuses())
	if err := s.FillPulledStatuses(ctx, log); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, s.keys.pulledStatuses()).Result(); n != 0 {
		t.Error("a second fill wrote the pulled statuses again")
	}
}
