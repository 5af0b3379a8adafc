package realtime

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"chorus/social"
)

// longHomeFeed serves one user's home timeline as n statuses of an author,
// ids 1 to n, as the home of a follower of a pulled author who posted them
// all would be: read from the author's profile, more than a stored home
// timeline keeps. It counts the pages read of it. With hidden, every
// status is hidden from the user (the author suspended): each page holds
// none, and goes on at the cursor past those it left out.
type longHomeFeed struct {
	*social.Service
	uid, author, n int64
	hidden         bool
	pages          atomic.Int64
}

func (f *longHomeFeed) HomeTimeline(ctx context.Context, uid int64, c social.Cursor) (social.TimelinePage, error) {
	if uid != f.uid {
		return f.Service.HomeTimeline(ctx, uid, c)
	}
	f.pages.Add(1)
	var page social.TimelinePage
	next, step := c.After+1, int64(1)
	if !c.Forward {
		next, step = f.n, -1
		if c.Before > 0 {
			next = min(f.n, c.Before-1)
		}
	}
	for ; next >= 1 && next <= f.n && len(page.Statuses) < c.Limit; next += step {
		page.Statuses = append(page.Statuses, social.Status{ID: next, UID: f.author, Message: fmt.Sprint("status ", next)})
	}
	if n := len(page.Statuses); n > 0 && next >= 1 && next <= f.n {
		last := page.Statuses[n-1].ID
		if c.Forward {
			page.NextAfter = &last
		} else {
			page.NextBefore = &last
		}
	}
	if f.hidden {
		page.Statuses = nil
	}
	return page, nil
}

// A resume reads and sends at most a home timeline's worth, the newest
// statuses after its `after`, oldest first, however many statuses its home
// timeline merges in.
func TestResumeSendsAtMostAHomeTimeline(t *testing.T) {
	t.Parallel()
	feed := &longHomeFeed{n: 3*resumeStatuses + 50}
	e := newEnv(t, envOptions{feed: func(s *social.Service) Feed {
		feed.Service = s
		return feed
	}})
	u, author := e.signUp("reader"), e.signUp("pulled")
	feed.uid, feed.author = u.id, author.id
	s := e.connect(u)

	for _, tc := range []struct {
		name  string
		after int64
		want  []int64
	}{
		{"far behind", 0, ids(feed.n-resumeStatuses+1, feed.n)},
		{"within what was sent", feed.n - 150, nil},
		// Under what the first sent, which is not read again: the cap's
		// worth of reads goes further back.
		{"again", 0, ids(feed.n-2*resumeStatuses+timelinePage+1, feed.n-resumeStatuses)},
	} {
		pages := feed.pages.Load()
		s.send(map[string]any{"type": "resume", "after": tc.after})
		s.ping()
		if got := statusIDs(s.until("unknown_type", 30*time.Second)); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: a resume after %d sent %d statuses (%v…), want %d", tc.name, tc.after, len(got), got[:min(len(got), 3)], len(tc.want))
		}
		if n := feed.pages.Load() - pages; n > resumeStatuses/timelinePage+1 {
			t.Errorf("%s: the resume read %d pages, want at most %d", tc.name, n, resumeStatuses/timelinePage+1)
		}
	}
}

// A resume over a home timeline whose statuses are all hidden (a pulled
// author's, suspended since) reads a bounded number of pages, not every
// page down to the first status, and sends nothing.
func TestResumeReadsBoundedPagesOfHiddenStatuses(t *testing.T) {
	t.Parallel()
	feed := &longHomeFeed{n: 100 * resumeStatuses, hidden: true}
	e := newEnv(t, envOptions{feed: func(s *social.Service) Feed {
		feed.Service = s
		return feed
	}})
	u, author := e.signUp("reader"), e.signUp("pulled")
	feed.uid, feed.author = u.id, author.id
	s := e.connect(u)

	pages := feed.pages.Load()
	s.send(map[string]any{"type": "resume", "after": 0})
	s.ping()
	if got := statusIDs(s.until("unknown_type", 30*time.Second)); len(got) != 0 {
		t.Fatalf("a resume over hidden statuses sent %v, want none", got)
	}
	// The forward read that finds more than a page, then the bounded
	// reads down from the newest.
	if n := feed.pages.Load() - pages; n > resumeReads+1 {
		t.Errorf("the resume read %d pages, want at most %d", n, resumeReads+1)
	}
}

// ids is from to to, in order.
func ids(from, to int64) []int64 {
	var out []int64
	for id := from; id <= to; id++ {
		out = append(out, id)
	}
	return out
}
