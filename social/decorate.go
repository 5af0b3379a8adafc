package social

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Decorate fills in what statuses show beyond their hashes, in one round
// trip: each repost's original, and each status's (a repost's: its
// original's) reply, like and repost counts and, for viewer (0: no one
// signed in), whether the viewer liked and reposted it. A repost whose
// original is gone is left out: the original's deletion is taking its
// reposts out (see dropReactionsPass). So is every status viewer may not
// see (visibility.go): its author's, or a repost's original's author's,
// asked in the same round trip (a second, only for the authors of reposts'
// originals not on the page).
//
// The counts are the cardinalities of the sets the writes add to and take
// from, so they are exact whatever the writes raced.
func (s *Service) Decorate(ctx context.Context, viewer int64, sts []Status) ([]Status, error) {
	return s.decorate(ctx, viewer, sts, true)
}

// DecorateHidden is Decorate leaving out none of the statuses viewer may
// not see: for the answer to the viewer's own undoing of a like or repost
// of such a status (a mute since, a block), which did what it asked. It
// shows no more than a visitor reads (statuses are public), and the
// viewer's own state.
func (s *Service) DecorateHidden(ctx context.Context, viewer int64, sts []Status) ([]Status, error) {
	return s.decorate(ctx, viewer, sts, false)
}

func (s *Service) decorate(ctx context.Context, viewer int64, sts []Status, hide bool) ([]Status, error) {
	if len(sts) == 0 {
		return sts, nil
	}
	k := s.keys
	type reads struct {
		original                *redis.SliceCmd
		replies, likes, reposts *redis.IntCmd
		liked, reposted         *redis.FloatCmd
	}
	rs := make([]reads, len(sts))
	pipe := s.rdb.Pipeline()
	asked := map[int64]bool{}
	var authors []int64
	for _, st := range sts {
		if hide && !asked[st.UID] {
			asked[st.UID] = true
			authors = append(authors, st.UID)
		}
	}
	hid := s.queueHidden(ctx, pipe, viewer, authors) // none read without authors
	for i, st := range sts {
		t := st.ID
		if st.RepostOf != nil {
			t = st.RepostOf.ID
			rs[i].original = pipe.HMGet(ctx, k.status(t), statusFields...)
		}
		rs[i].replies = pipe.ZCard(ctx, k.replies(t))
		rs[i].likes = pipe.ZCard(ctx, k.likes(t))
		rs[i].reposts = pipe.ZCard(ctx, k.reposts(t))
		if viewer != 0 {
			rs[i].liked = pipe.ZScore(ctx, k.likes(t), itoa(viewer))
			rs[i].reposted = pipe.ZScore(ctx, k.reposts(t), itoa(viewer))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("decorate statuses: %w", err)
	}
	out := sts[:0]
	for i, st := range sts {
		r := rs[i]
		target := &st
		if r.original != nil {
			orig, ok := parseStatus(r.original.Val())
			if !ok || orig.RepostOf != nil {
				continue
			}
			st.RepostOf = &orig
			target = st.RepostOf
		}
		target.Replies, target.Likes, target.Reposts = r.replies.Val(), r.likes.Val(), r.reposts.Val()
		if viewer != 0 {
			liked, reposted := r.liked.Err() == nil, r.reposted.Err() == nil
			target.Liked, target.Reposted = &liked, &reposted
		}
		out = append(out, st)
	}
	if !hide {
		return out, nil
	}
	return s.leaveOutHidden(ctx, viewer, out, hid.set(), asked)
}

// leaveOutHidden leaves out of sts those viewer may not see: hidden holds
// the hidden among the authors asked already; the authors of reposts'
// originals not asked are asked now.
func (s *Service) leaveOutHidden(ctx context.Context, viewer int64, sts []Status, hidden map[int64]bool, asked map[int64]bool) ([]Status, error) {
	if viewer == 0 {
		return sts, nil
	}
	var more []int64
	for _, st := range sts {
		if o := st.RepostOf; o != nil && !asked[o.UID] {
			asked[o.UID] = true
			more = append(more, o.UID)
		}
	}
	if len(more) > 0 {
		h, err := s.hidden(ctx, viewer, more)
		if err != nil {
			return nil, fmt.Errorf("decorate statuses: %w", err)
		}
		for id := range h {
			if hidden == nil {
				hidden = map[int64]bool{}
			}
			hidden[id] = true
		}
	}
	if len(hidden) == 0 {
		return sts, nil
	}
	out := sts[:0]
	for _, st := range sts {
		if hidden[st.UID] || (st.RepostOf != nil && hidden[st.RepostOf.UID]) {
			continue
		}
		out = append(out, st)
	}
	return out, nil
}
