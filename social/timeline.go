package social

import (
	"context"
	_ "embed"
	"fmt"

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

//go:embed home_page.lua
var homePageSource string
var homePageScript = redis.NewScript(homePageSource)

// HomeTimeline pages through uid's home timeline: their own statuses and
// those of whom they follow, the pulled authors' merged in by id from their
// profile timelines, in one script call.
func (s *Service) HomeTimeline(ctx context.Context, uid int64, c Cursor) (TimelinePage, error) {
	k := s.keys
	return s.page(ctx, k.home(uid), c, func(newestFirst bool, cursor int64, n int) ([]string, error) {
		dir := 0
		if newestFirst {
			dir = 1
		}
		return homePageScript.Run(ctx, s.rdb, []string{k.home(uid), k.pulls(uid)},
			k.profilePrefix(), dir, cursor, n).StringSlice()
	})
}

// ProfileTimeline pages through the statuses of the user with login.
func (s *Service) ProfileTimeline(ctx context.Context, login string, c Cursor) (TimelinePage, error) {
	uid, err := s.UID(ctx, login)
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
	return s.page(ctx, key, c, func(newestFirst bool, cursor int64, n int) ([]string, error) {
		return s.timelineIDs(ctx, key, newestFirst, cursor, n)
	})
}

// page reads one page of the timeline named key, whose ids read gives: up
// to n past cursor, in the page's direction.
func (s *Service) page(ctx context.Context, key string, c Cursor, read func(newestFirst bool, cursor int64, n int) ([]string, error)) (TimelinePage, error) {
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
		members, err := read(newestFirst, cursor, want+1)
		if err != nil {
			return TimelinePage{}, fmt.Errorf("timeline %s: %w", key, err)
		}
		ids := parseIDs(members)
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

func (s *Service) timelineIDs(ctx context.Context, key string, newestFirst bool, cursor int64, n int) ([]string, error) {
	if newestFirst {
		max := "+inf"
		if cursor > 0 {
			max = "(" + itoa(cursor)
		}
		return s.rdb.ZRevRangeByScore(ctx, key, &redis.ZRangeBy{Max: max, Min: "-inf", Count: int64(n)}).Result()
	}
	return s.rdb.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "(" + itoa(cursor), Max: "+inf", Count: int64(n)}).Result()
}
