package social

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Cursor selects a page of a timeline: the Limit newest statuses older than
// Before (or the newest ones when Before is 0), or, when Forward is set, the
// Limit oldest statuses newer than After.
type Cursor struct {
	Limit   int
	Before  int64
	After   int64
	Forward bool
}

// validate refuses a cursor that selects no page: a limit under 1 (a
// negative one would cut the read short of nothing, and 0 would give back
// its own cursor as the next one, forever), a negative id, or an id for
// the other direction, which would be ignored.
func (c Cursor) validate() error {
	switch {
	case c.Limit < 1:
		return invalid("limit", "must be at least 1")
	case c.Before < 0:
		return invalid("before", "must not be negative")
	case c.After < 0:
		return invalid("after", "must not be negative")
	case c.Forward && c.Before != 0:
		return invalid("cursor", "before applies to newest-first pages only")
	case !c.Forward && c.After != 0:
		return invalid("cursor", "after applies to oldest-first pages only")
	}
	return nil
}

// TimelinePage is one page of a timeline. NextBefore (newest-first pages) or
// NextAfter (catch-up pages) is the cursor for the next page, nil at the end.
type TimelinePage struct {
	Statuses   []Status
	NextBefore *int64
	NextAfter  *int64
}

// HomeTimeline pages through uid's home timeline: their own statuses and
// those of whom they follow, the pulled authors' merged in by id, without
// duplicates (a status pushed before its author was pulled is in both).
// A reader who follows no pulled author costs one round trip for the ids,
// as a plain timeline does. One who follows up to directPulls of them, a
// second for those authors' profile timelines (on a cluster they live with
// their authors, on other shards). One who follows more, two: a range of
// the site's pulled statuses past the cursor and one ZMSCORE of their
// authors in the reader's pulled authors (see mergePulled), four times as
// many statuses each round, up to pulledScan; only the newest
// Options.PulledStatuses pulled statuses are there, and a page ends early,
// its cursor exact, where its last round stopped short of the rest.
func (s *Service) HomeTimeline(ctx context.Context, uid int64, c Cursor) (TimelinePage, error) {
	k := s.keys
	scan := 0 // pulled statuses the last round scanned
	return s.page(ctx, k.home(uid), c, func(newestFirst bool, cursor int64, n int) ([]int64, int64, error) {
		pipe := s.rdb.Pipeline()
		home := s.window(ctx, pipe, k.home(uid), newestFirst, cursor, 0, n)
		pulls := pipe.ZRange(ctx, k.pulls(uid), 0, directPulls)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, err
		}
		if authors := pulls.Val(); len(authors) > directPulls {
			// A few pages' worth first, as a reader of many pulled authors
			// fills a page from them; more each round for one who does not.
			scan = min(s.pulledScan, max(4*n, 4*scan))
			return s.mergePulled(ctx, k.pulls(uid), home.Val(), newestFirst, cursor, n, scan)
		}
		ids, err := s.mergeAuthors(ctx, home.Val(), parseIDs(pulls.Val()), newestFirst, cursor, n)
		return ids, 0, err
	})
}

// mergeAuthors merges stored, up to n ids of a stored timeline past cursor
// in the page's direction, with the statuses of the pulled authors, read
// from their profile timelines in one pipeline, into the first n of their
// union, without duplicates (a status pushed before its author was pulled
// is in both). With no authors it reads nothing.
func (s *Service) mergeAuthors(ctx context.Context, stored []string, authors []int64, newestFirst bool, cursor int64, n int) ([]int64, error) {
	if len(authors) == 0 {
		return parseIDs(stored), nil
	}
	// Each author gives at most n ids past the cursor and, once the stored
	// timeline fills the page, only ids that could still make it.
	var bound int64
	if len(stored) == n {
		bound, _ = strconv.ParseInt(stored[n-1], 10, 64)
	}
	pipe := s.rdb.Pipeline()
	theirs := make([]*redis.StringSliceCmd, 0, len(authors))
	for _, a := range authors {
		theirs = append(theirs, s.window(ctx, pipe, s.keys.profile(a), newestFirst, cursor, bound, n))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	sources := [][]string{stored}
	for _, a := range theirs {
		sources = append(sources, a.Val())
	}
	return mergeIDs(sources, newestFirst, n), nil
}

// window reads (or queues the read of) up to n ids of the timeline key past cursor (0:
// none) and, when bound is set, short of it, in the page's direction.
func (s *Service) window(ctx context.Context, c redis.Cmdable, key string, newestFirst bool, cursor, bound int64, n int) *redis.StringSliceCmd {
	if newestFirst {
		r := &redis.ZRangeBy{Max: "+inf", Min: "-inf", Count: int64(n)}
		if cursor > 0 {
			r.Max = "(" + itoa(cursor)
		}
		if bound > 0 {
			r.Min = "(" + itoa(bound)
		}
		return c.ZRevRangeByScore(ctx, key, r)
	}
	r := &redis.ZRangeBy{Min: "(" + itoa(cursor), Max: "+inf", Count: int64(n)}
	if bound > 0 {
		r.Max = "(" + itoa(bound)
	}
	return c.ZRangeByScore(ctx, key, r)
}

// mergeIDs merges timelines' ids, each in the page's order, into the first n
// of their union in that order, without duplicates.
func mergeIDs(sources [][]string, newestFirst bool, n int) []int64 {
	var ids []int64
	for _, src := range sources {
		ids = append(ids, parseIDs(src)...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if newestFirst {
		slices.Reverse(ids)
	}
	return ids[:min(n, len(ids))]
}

// ProfileTimeline pages through the statuses of the user with login:
// ErrUserNotFound for an account not shown (see shownUID).
func (s *Service) ProfileTimeline(ctx context.Context, login string, c Cursor) (TimelinePage, error) {
	uid, err := s.shownUID(ctx, login)
	if err != nil {
		return TimelinePage{}, err
	}
	return s.timeline(ctx, s.keys.profile(uid), c)
}

// GlobalTimeline pages through the latest statuses site-wide.
func (s *Service) GlobalTimeline(ctx context.Context, c Cursor) (TimelinePage, error) {
	return s.timeline(ctx, s.keys.global(), c)
}

// maxTimelineRounds bounds the reads one page may take when statuses were
// deleted from under their ids (the cleanup job has not reached them yet).
const maxTimelineRounds = 4

func (s *Service) timeline(ctx context.Context, key string, c Cursor) (TimelinePage, error) {
	return s.page(ctx, key, c, func(newestFirst bool, cursor int64, n int) ([]int64, int64, error) {
		ids, err := s.timelineIDs(ctx, key, newestFirst, cursor, n)
		return ids, 0, err
	})
}

// page reads one page of the timeline named key, whose ids read gives: up
// to n past cursor, in the page's direction. A read that stops short of
// some ids past cursor gives the last id it got to (edge; else 0): the ids
// it returns are all those up to edge, and the page goes on past edge.
func (s *Service) page(ctx context.Context, key string, c Cursor, read func(newestFirst bool, cursor int64, n int) (ids []int64, edge int64, err error)) (TimelinePage, error) {
	if err := c.validate(); err != nil {
		return TimelinePage{}, err
	}
	newestFirst := !c.Forward
	cursor := c.Before
	if !newestFirst {
		cursor = c.After
	}
	var page TimelinePage
	more := false
	for round := 0; round < maxTimelineRounds; round++ {
		want := c.Limit - len(page.Statuses)
		ids, edge, err := read(newestFirst, cursor, want+1)
		if err != nil {
			return TimelinePage{}, fmt.Errorf("timeline %s: %w", key, err)
		}
		more = len(ids) > want
		if more {
			ids = ids[:want]
		}
		sts, err := s.statusesByID(ctx, ids)
		if err != nil {
			return TimelinePage{}, fmt.Errorf("timeline %s: %w", key, err)
		}
		page.Statuses = append(page.Statuses, sts...)
		if len(ids) > 0 {
			cursor = ids[len(ids)-1]
		}
		if edge != 0 && !more {
			cursor, more = edge, true
		}
		if !more || len(page.Statuses) == c.Limit {
			break
		}
	}
	if more {
		if newestFirst {
			page.NextBefore = &cursor
		} else {
			page.NextAfter = &cursor
		}
	}
	if page.Statuses == nil {
		page.Statuses = []Status{}
	}
	return page, nil
}

func (s *Service) timelineIDs(ctx context.Context, key string, newestFirst bool, cursor int64, n int) ([]int64, error) {
	members, err := s.window(ctx, s.rdb, key, newestFirst, cursor, 0, n).Result()
	return parseIDs(members), err
}
