package social

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Who may see whose statuses: the one place that answers it. A signed-in
// viewer sees no status (nor repost, nor notification) of an account they
// block, an account that blocks them, or an account they mute. Every read
// of statuses goes through Decorate, which asks here for the authors of the
// page it decorates; notifications ask for their senders. The answer costs
// three ZMSCOREs of the page's authors, in the viewer's slot, in the round
// trip the page takes anyway: bounded by the page, whatever the number of
// blocks and mutes. A page whose statuses are hidden ends short; its cursor
// is where the read stopped, so the next page starts where it should.
// Every stream holds the same authors (HiddenAuthors), read as it opens
// and again at each change (hidden_changed), to leave them out of its
// live statuses.
//
// Presence needs no rule here: it is shown to friends only, and a block
// ends the follows both ways (block.go).

// hiddenAuthors is a queued ask of which authors a viewer may not see.
type hiddenAuthors struct {
	authors                  []int64
	blocks, blockedBy, mutes *redis.FloatSliceCmd
}

// queueHidden queues on pipe the ask of which of authors viewer may not see
// (nothing for no viewer or no authors).
func (s *Service) queueHidden(ctx context.Context, pipe redis.Pipeliner, viewer int64, authors []int64) *hiddenAuthors {
	h := &hiddenAuthors{authors: authors}
	if viewer == 0 || len(authors) == 0 {
		return h
	}
	members := make([]string, len(authors))
	for i, a := range authors {
		members[i] = itoa(a)
	}
	k := s.keys
	h.blocks = pipe.ZMScore(ctx, k.blocks(viewer), members...)
	h.blockedBy = pipe.ZMScore(ctx, k.blockedBy(viewer), members...)
	h.mutes = pipe.ZMScore(ctx, k.mutes(viewer), members...)
	return h
}

// set returns the hidden authors once the pipeline ran (nil: none).
func (h *hiddenAuthors) set() map[int64]bool {
	if h.blocks == nil {
		return nil
	}
	var out map[int64]bool
	// The sets' scores are times, never 0; ZMSCORE reads a missing member
	// as 0.
	for _, c := range []*redis.FloatSliceCmd{h.blocks, h.blockedBy, h.mutes} {
		for i, sc := range c.Val() {
			if sc != 0 && i < len(h.authors) {
				if out == nil {
					out = map[int64]bool{}
				}
				out[h.authors[i]] = true
			}
		}
	}
	return out
}

// hidden reports which of authors viewer may not see (see above), in one
// round trip: what the reads of users and notifications ask.
func (s *Service) hidden(ctx context.Context, viewer int64, authors []int64) (map[int64]bool, error) {
	if viewer == 0 || len(authors) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	h := s.queueHidden(ctx, pipe, viewer, authors)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	return h.set(), nil
}
