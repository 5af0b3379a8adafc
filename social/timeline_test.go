package social

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// Paging through a timeline with the cursors each page gives, newest first
// or oldest first, yields every status exactly once, in order, whatever
// the page size: also across statuses deleted from under a home timeline
// whose cleanup has not reached it yet.
func TestTimelinePagesExactly(t *testing.T) {
	t.Parallel()
	// One follower a pass: the inline pass of a delete cleans only the
	// first follower's home timeline, as if the job were still running.
	s, _ := newService(t, Options{FanoutPassSize: 1})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	other := signUp(t, s, "other")
	clean := signUp(t, s, "clean")
	stale := signUp(t, s, "stale")
	follow(t, s, clean.ID, "author")
	follow(t, s, stale.ID, "author")
	follow(t, s, clean.ID, "other")
	var byAuthor, byOther []int64
	for i := range 30 {
		st := post(t, s, author.ID, fmt.Sprint("status ", i))
		runJob(t, s, s.keys.job(postJobID(st.ID)))
		byAuthor = append(byAuthor, st.ID)
		if i%4 == 0 {
			byOther = append(byOther, post(t, s, other.ID, fmt.Sprint("other ", i)).ID)
		}
	}
	// A run of deletions longer than a page read, and a few apart.
	var deleted []int64
	for i, id := range byAuthor {
		if (i >= 10 && i < 21) || i == 3 || i == 27 {
			if err := s.DeleteStatus(ctx, author.ID, id); err != nil {
				t.Fatal(err)
			}
			deleted = append(deleted, id)
		}
	}
	live := func(ids []int64) []int64 {
		return slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return slices.Contains(deleted, id) })
	}
	if got := homeIDs(t, s, stale.ID); len(got) != len(byAuthor) {
		t.Fatalf("stale home holds %d ids, want all %d written, deleted ones too", len(got), len(byAuthor))
	}

	for _, tl := range []struct {
		name string
		read func(Cursor) (TimelinePage, error)
		want []int64 // oldest first
		full bool    // every page but the last is full
	}{
		{"profile", func(c Cursor) (TimelinePage, error) { return s.ProfileTimeline(ctx, "author", c) }, live(byAuthor), true},
		{"global", func(c Cursor) (TimelinePage, error) { return s.GlobalTimeline(ctx, c) }, newestOf(100, live(byAuthor), byOther), true},
		{"home", func(c Cursor) (TimelinePage, error) { return s.HomeTimeline(ctx, clean.ID, c) }, newestOf(100, live(byAuthor), byOther), true},
		{"home with deleted ids", func(c Cursor) (TimelinePage, error) { return s.HomeTimeline(ctx, stale.ID, c) }, live(byAuthor), false},
	} {
		for _, limit := range []int{1, 4, 7, 100} {
			t.Run(fmt.Sprintf("%s/limit=%d", tl.name, limit), func(t *testing.T) {
				// Newest first, from the top.
				got, pages := walkTimeline(t, tl.read, Cursor{Limit: limit})
				if !slices.Equal(got, reversed(tl.want)) {
					t.Errorf("newest first: %v, want %v", got, reversed(tl.want))
				}
				if want := (len(tl.want) + limit - 1) / limit; tl.full && pages != want {
					t.Errorf("newest first took %d pages, want %d", pages, want)
				}
				// Oldest first, from the start.
				got, pages = walkTimeline(t, tl.read, Cursor{Limit: limit, Forward: true})
				if !slices.Equal(got, tl.want) {
					t.Errorf("oldest first: %v, want %v", got, tl.want)
				}
				if want := (len(tl.want) + limit - 1) / limit; tl.full && pages != want {
					t.Errorf("oldest first took %d pages, want %d", pages, want)
				}
				// From a cursor at a deleted status, both ways.
				mid := deleted[len(deleted)/2]
				got, _ = walkTimeline(t, tl.read, Cursor{Limit: limit, Before: mid})
				want := reversed(slices.DeleteFunc(slices.Clone(tl.want), func(id int64) bool { return id >= mid }))
				if !slices.Equal(got, want) {
					t.Errorf("before %d: %v, want %v", mid, got, want)
				}
				got, _ = walkTimeline(t, tl.read, Cursor{Limit: limit, After: mid, Forward: true})
				want = slices.DeleteFunc(slices.Clone(tl.want), func(id int64) bool { return id <= mid })
				if !slices.Equal(got, want) {
					t.Errorf("after %d: %v, want %v", mid, got, want)
				}
			})
		}
	}
}

// walkTimeline reads pages from c on, each from the cursor the last one
// gave, until a page gives none; it returns the ids read and the number of
// pages.
func walkTimeline(tb testing.TB, read func(Cursor) (TimelinePage, error), c Cursor) (ids []int64, pages int) {
	tb.Helper()
	for {
		page, err := read(c)
		if err != nil {
			tb.Fatal(err)
		}
		pages++
		if len(page.Statuses) > c.Limit {
			tb.Fatalf("page %d holds %d statuses, over its limit %d", pages, len(page.Statuses), c.Limit)
		}
		ids = append(ids, statusIDs(page.Statuses)...)
		next := page.NextBefore
		if c.Forward {
			next = page.NextAfter
			if page.NextBefore != nil {
				tb.Fatalf("an oldest-first page gives a before cursor, %d", *page.NextBefore)
			}
		} else if page.NextAfter != nil {
			tb.Fatalf("a newest-first page gives an after cursor, %d", *page.NextAfter)
		}
		if next == nil {
			return ids, pages
		}
		if c.Forward {
			c.After = *next
		} else {
			c.Before = *next
		}
		if pages > 1000 {
			tb.Fatalf("no end after %d pages; the last cursor was %d", pages, *next)
		}
	}
}

// A cursor that cannot select a page is refused as an *InvalidError naming
// the field, on every timeline, before anything is read.
func TestTimelineRefusesBadCursors(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	post(t, s, author.ID, "something to page through")
	for _, tc := range []struct {
		name  string
		c     Cursor
		field string
	}{
		{"no limit", Cursor{}, "limit"},
		{"negative limit", Cursor{Limit: -1}, "limit"},
		{"negative limit, oldest first", Cursor{Limit: -5, Forward: true}, "limit"},
		{"negative before", Cursor{Limit: 10, Before: -1}, "before"},
		{"negative after", Cursor{Limit: 10, After: -1, Forward: true}, "after"},
		{"before on an oldest-first page", Cursor{Limit: 10, Before: 5, Forward: true}, "cursor"},
		{"after on a newest-first page", Cursor{Limit: 10, After: 5}, "cursor"},
	} {
		for _, tl := range []struct {
			name string
			read func(Cursor) (TimelinePage, error)
		}{
			{"home", func(c Cursor) (TimelinePage, error) { return s.HomeTimeline(ctx, author.ID, c) }},
			{"profile", func(c Cursor) (TimelinePage, error) { return s.ProfileTimeline(ctx, "author", c) }},
			{"global", func(c Cursor) (TimelinePage, error) { return s.GlobalTimeline(ctx, c) }},
		} {
			t.Run(tc.name+"/"+tl.name, func(t *testing.T) {
				page, err := tl.read(tc.c)
				var inv *InvalidError
				if !errors.As(err, &inv) || inv.Field != tc.field {
					t.Fatalf("read %+v: %+v, %v; want an invalid %s", tc.c, page, err, tc.field)
				}
			})
		}
	}
}
