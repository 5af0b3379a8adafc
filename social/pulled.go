package social

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// How a home read merges the statuses of the pulled authors its reader
// follows. Up to directPulls of them, it reads each one's profile timeline
// (a range each, as few as a pushed read costs more). Past that, it reads
// the site's newest pulled statuses (pulledStatuses), at most pulledScan
// of them a round, and keeps those whose author the reader follows (one
// ZMSCORE), so a read costs the same whether the reader follows 9 pulled
// authors or 100,000: at most maxTimelineRounds rounds of pulledScan.
const (
	directPulls       = 8
	defaultPulledScan = 1000
)

// pulledMember is status sid's member in the pulled statuses: the author
// rides along, so a reader can tell whose it is without reading it.
func pulledMember(sid, author int64) string { return itoa(sid) + ":" + itoa(author) }

// parsePulledMember is the status id and the author of a pulled statuses
// member; ok is false for anything else.
func parsePulledMember(m string) (sid int64, author string, ok bool) {
	id, author, found := strings.Cut(m, ":")
	sid, err := strconv.ParseInt(id, 10, 64)
	return sid, author, found && err == nil
}

// writePulled writes status sid of pulled author uid where their
// followers' reads find it: the site's pulled statuses (trimmed one write
// in trimEvery) and the author's channel. Written again, it changes nothing
// and sends the frame again (a job redone after a crash; readers drop the
// frame of a status they have).
func (s *Service) writePulled(ctx context.Context, uid, sid int64, payload string) error {
	k := s.keys
	pipe := s.rdb.Pipeline()
	pipe.ZAdd(ctx, k.pulledStatuses(), redis.Z{Score: float64(sid), Member: pulledMember(sid, uid)})
	if sid%trimEvery == 0 {
		pipe.ZRemRangeByRank(ctx, k.pulledStatuses(), 0, int64(-s.opts.PulledStatuses-1))
	}
	s.publish(ctx, pipe, k.authorChannel(uid), payload)
	_, err := pipe.Exec(ctx)
	return err
}

// mergePulled merges, into the ids read from uid's home timeline (stored,
// up to n past cursor), the ids of the site's pulled statuses past cursor
// whose authors uid follows, and returns the first n. It reads at most
// scan of the pulled statuses: when it reads that many, those
// further on are unread, so it returns only ids up to the last one it read
// (edge), and the page goes on past edge. Edge is 0 when nothing was left
// unread.
func (s *Service) mergePulled(ctx context.Context, uid int64, stored []string, newestFirst bool, cursor int64, n, scan int) (ids []int64, edge int64, err error) {
	k := s.keys
	// Once the stored ids fill the page, only pulled ones short of its last
	// could make it.
	var bound int64
	if len(stored) == n {
		bound, _ = strconv.ParseInt(stored[n-1], 10, 64)
	}
	members, err := s.window(ctx, s.rdb, k.pulledStatuses(), newestFirst, cursor, bound, scan).Result()
	if err != nil {
		return nil, 0, err
	}
	if len(members) == scan {
		edge, _, _ = parsePulledMember(members[len(members)-1])
	}
	sids := make([]string, len(members))
	authorOf := make([]string, len(members))
	var authors []string
	index := map[string]int{} // author -> index in authors
	for i, m := range members {
		sid, author, ok := parsePulledMember(m)
		if !ok {
			continue
		}
		sids[i], authorOf[i] = itoa(sid), author
		if _, ok := index[author]; !ok {
			index[author] = len(authors)
			authors = append(authors, author)
		}
	}
	var follows []float64
	if len(authors) > 0 {
		if follows, err = s.rdb.ZMScore(ctx, k.pulls(uid), authors...).Result(); err != nil {
			return nil, 0, err
		}
	}
	mine := make([]string, 0, len(members))
	for i, sid := range sids {
		// ZMSCORE reads a missing member as 0; follow scores never are.
		if sid != "" && follows[index[authorOf[i]]] != 0 {
			mine = append(mine, sid)
		}
	}
	ids = mergeIDs([][]string{stored, mine}, newestFirst, len(stored)+len(mine))
	if edge != 0 {
		ids = slices.DeleteFunc(ids, func(id int64) bool { return (newestFirst && id < edge) || (!newestFirst && id > edge) })
	}
	return ids[:min(n, len(ids))], edge, nil
}
