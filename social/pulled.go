package social

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// How a home read merges the statuses of the pulled authors its reader
// follows (and a list's read those of its pulled members). Up to
// directPulls of them, it reads each one's profile timeline (a range
// each). Past that, it reads the site's newest pulled statuses
// (pulledStatuses), at most pulledScan of them a round, and keeps those
// whose author the reader follows, or the list holds (one ZMSCORE), so a
// read costs the same whether the reader follows 129 pulled authors or
// 100,000: at most
// maxTimelineRounds rounds of pulledScan. A range costs Redis about as
// much as scanning 2 or 3 pulled statuses (docs/BENCHMARKS.md), so the
// ranges are cheaper for a reader whose pulled authors post a small share
// of the pulled statuses, the scan for one whose authors post much of
// them; directPulls is about where they cost the same on a site of 1,000
// pulled authors who post alike.
const (
	directPulls       = 128
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
	s.bus.Queue(ctx, pipe, s.bus.AuthorChannel(uid), payload)
	_, err := pipe.Exec(ctx)
	return err
}

// mergePulled merges, into the ids read from a stored timeline (stored, up
// to n past cursor: a home timeline, a list's), the ids of the site's
// pulled statuses past cursor whose authors are in the sorted set authors
// (a reader's pulled authors, a list's members; a member's score is never
// 0), and returns the first n. It reads at most
// scan of the pulled statuses: when it reads that many, those
// further on are unread, so it returns only ids up to the last one it read
// (edge), and the page goes on past edge. Edge is 0 when nothing was left
// unread.
func (s *Service) mergePulled(ctx context.Context, authorsKey string, stored []string, newestFirst bool, cursor int64, n, scan int) (ids []int64, edge int64, err error) {
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
		if follows, err = s.rdb.ZMScore(ctx, authorsKey, authors...).Result(); err != nil {
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

// The fill of the pulled statuses from a Redis from before them: whichever
// instance starts first does it, in batches; a fill cut short is begun again
// by the next start.
const (
	pulledFillBatch = 10 // authors read in one pipeline
	pulledFillLock  = 10 * time.Minute
)

// FillPulledStatuses writes into the site's pulled statuses what each
// pulled author posted once pulled (their newest Options.PulledStatuses),
// unless that was done already: a Redis from before the pulled statuses
// holds them only in the authors' profiles. Posts keep them up to date
// afterwards; writing a status twice changes nothing. It reads every
// pulled author once, in one pipeline a batch.
func (s *Service) FillPulledStatuses(ctx context.Context, log *slog.Logger) (err error) {
	k := s.keys
	err = s.rdb.SetArgs(ctx, k.pulledStatusesFilled(), "filling", redis.SetArgs{Mode: "NX", TTL: pulledFillLock}).Err()
	if errors.Is(err, redis.Nil) {
		return nil // filled, or being filled
	}
	if err != nil {
		return fmt.Errorf("fill pulled statuses: %w", err)
	}
	defer func() {
		if err != nil { // let the next start try again at once
			s.rdb.Del(context.WithoutCancel(ctx), k.pulledStatusesFilled())
		}
	}()
	authors, err := s.rdb.ZRangeWithScores(ctx, k.pulledAuthors(), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("fill pulled statuses: %w", err)
	}
	written := 0
	for batch := range slices.Chunk(authors, pulledFillBatch) {
		pipe := s.rdb.Pipeline()
		reads := make([]*redis.StringSliceCmd, len(batch))
		uids := make([]int64, len(batch))
		for i, a := range batch {
			m, _ := a.Member.(string)
			uid, _ := strconv.ParseInt(m, 10, 64)
			uids[i] = uid
			// Since the first status id not pushed: those before reached
			// their followers' home timelines.
			reads[i] = pipe.ZRevRangeByScore(ctx, k.profile(uid), &redis.ZRangeBy{
				Max: "+inf", Min: strconv.FormatFloat(a.Score, 'f', -1, 64), Count: int64(s.opts.PulledStatuses),
			})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("fill pulled statuses: %w", err)
		}
		var members []redis.Z
		for i, r := range reads {
			for _, sid := range parseIDs(r.Val()) {
				members = append(members, redis.Z{Score: float64(sid), Member: pulledMember(sid, uids[i])})
			}
		}
		if len(members) == 0 {
			continue
		}
		pipe = s.rdb.Pipeline()
		pipe.ZAdd(ctx, k.pulledStatuses(), members...)
		pipe.ZRemRangeByRank(ctx, k.pulledStatuses(), 0, int64(-s.opts.PulledStatuses-1))
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("fill pulled statuses: %w", err)
		}
		written += len(members)
	}
	if err := s.rdb.Set(ctx, k.pulledStatusesFilled(), "done", 0).Err(); err != nil {
		return fmt.Errorf("fill pulled statuses: %w", err)
	}
	if len(authors) > 0 {
		log.Info("pulled statuses filled from the pulled authors' profiles", "authors", len(authors), "statuses", written)
	}
	return nil
}
