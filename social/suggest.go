package social

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Suggestion is a user worth following, and why.
type Suggestion struct {
	User   User
	Reason string // one of the Reason constants
	// FollowedBy lists up to three of the users the asker follows who
	// follow this one (ReasonFollowedByFollowing).
	FollowedBy []User
}

// Reasons for a suggestion, best first.
const (
	ReasonFollowsYou          = "follows_you"           // follows the asker, not followed back
	ReasonFollowedByFollowing = "followed_by_following" // followed by those the asker follows
	ReasonPopular             = "popular"               // among the most followed
)

// reasonRank orders suggestions by their reason.
var reasonRank = map[string]int{ReasonFollowsYou: 0, ReasonFollowedByFollowing: 1, ReasonPopular: 2}

// Bounds of the work of one Suggestions call: it reads at most this many
// entries, whatever the population, in four round trips.
const (
	MaxSuggestions     = 30
	suggestFollowees   = 50  // the asker's newest follows looked through
	suggestPerFollowee = 20  // the newest follows of each of them
	suggestFollowers   = 20  // the asker's newest followers
	suggestPopular     = 100 // the most followed users
	suggestFollowedBy  = 3
)

// Suggestions lists up to limit users for uid to follow: those who follow
// uid and are not followed back, then those followed by most of the people
// uid follows (friends of friends), then the most followed. It never
// suggests uid, anyone uid follows, blocks or mutes, or anyone who blocks
// uid.
func (s *Service) Suggestions(ctx context.Context, uid int64, limit int) ([]Suggestion, error) {
	limit = min(max(limit, 1), MaxSuggestions)
	k := s.keys
	pipe := s.rdb.Pipeline()
	followees := pipe.ZRevRange(ctx, k.following(uid), 0, suggestFollowees-1)
	followers := pipe.ZRevRange(ctx, k.followers(uid), 0, suggestFollowers-1)
	popular := pipe.ZRevRange(ctx, k.popular(), 0, suggestPopular-1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("suggestions for %d: %w", uid, err)
	}
	fs := parseIDs(followees.Val())
	var theirs []*redis.StringSliceCmd
	if len(fs) > 0 {
		pipe = s.rdb.Pipeline()
		suspended := pipe.ZMScore(ctx, k.suspended(), followees.Val()...)
		for _, f := range fs {
			theirs = append(theirs, pipe.ZRevRange(ctx, k.following(f), 0, suggestPerFollowee-1))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("suggestions for %d: %w", uid, err)
		}
		// A suspended account's follows are hidden from everyone: they
		// are no reason to suggest anyone.
		for i := range fs {
			if suspended.Val()[i] != 0 {
				theirs[i] = nil
			}
		}
	}

	// Candidates in order of preference, each once.
	type candidate struct {
		id         int64
		reason     string
		order      int     // place among those of its reason
		followedBy []int64 // followees of the asker who follow them
	}
	byID := map[int64]*candidate{}
	var cands []*candidate
	consider := func(id int64, reason string, order int) *candidate {
		if id == uid {
			return nil
		}
		if c := byID[id]; c != nil {
			return c
		}
		c := &candidate{id: id, reason: reason, order: order}
		byID[id] = c
		cands = append(cands, c)
		return c
	}
	for i, id := range parseIDs(followers.Val()) {
		consider(id, ReasonFollowsYou, i)
	}
	for i, cmd := range theirs {
		if cmd == nil {
			continue
		}
		for _, id := range parseIDs(cmd.Val()) {
			// One who follows uid is suggested as such; who else follows
			// them is no reason worth naming then.
			if c := consider(id, ReasonFollowedByFollowing, 0); c != nil && c.reason == ReasonFollowedByFollowing {
				c.followedBy = append(c.followedBy, fs[i])
			}
		}
	}
	for i, id := range parseIDs(popular.Val()) {
		consider(id, ReasonPopular, i)
	}
	if len(cands) == 0 {
		return nil, nil
	}

	// Drop whom uid follows already, and the suspended, then rank: the
	// limit is of those that may be shown.
	ids := make([]int64, len(cands))
	members := make([]string, len(cands))
	for i, c := range cands {
		ids[i], members[i] = c.id, itoa(c.id)
	}
	pipe = s.rdb.Pipeline()
	readRelations := s.queueRelations(ctx, pipe, uid, ids)
	suspended := pipe.ZMScore(ctx, k.suspended(), members...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("suggestions for %d: %w", uid, err)
	}
	rels := readRelations()
	kept := cands[:0]
	for i, c := range cands {
		if r := rels[i]; r.YouFollow || r.Blocking || r.BlockedBy || r.Muting || suspended.Val()[i] != 0 {
			continue
		}
		if c.reason == ReasonFollowedByFollowing {
			c.order = -len(c.followedBy) // more followees first
		}
		kept = append(kept, c)
	}
	slices.SortStableFunc(kept, func(a, b *candidate) int {
		return cmp.Or(cmp.Compare(reasonRank[a.reason], reasonRank[b.reason]), cmp.Compare(a.order, b.order))
	})
	kept = kept[:min(len(kept), limit)]

	// One read of every user shown, suggested or named as a reason.
	var want []int64
	for _, c := range kept {
		want = append(want, c.id)
		c.followedBy = c.followedBy[:min(len(c.followedBy), suggestFollowedBy)]
		want = append(want, c.followedBy...)
	}
	users, err := s.usersByID(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("suggestions for %d: %w", uid, err)
	}
	found := make(map[int64]User, len(users))
	for _, u := range users {
		found[u.ID] = u
	}
	out := make([]Suggestion, 0, len(kept))
	for _, c := range kept {
		u, ok := found[c.id]
		if !ok {
			continue // deleted meanwhile
		}
		sg := Suggestion{User: u, Reason: c.reason}
		for _, id := range c.followedBy {
			if f, ok := found[id]; ok {
				sg.FollowedBy = append(sg.FollowedBy, f)
			}
		}
		out = append(out, sg)
	}
	return out, nil
}

func parseIDs(members []string) []int64 {
	ids := make([]int64, 0, len(members))
	for _, m := range members {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
