package social

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// exportPage is how many statuses, or users, an export reads a round trip:
// what it holds in memory at once, whatever the size of the account.
const exportPage = 500

// ExportedUser is an account in an export: who, and since when the
// relation (a follow's order, a block's or a mute's time) holds.
type ExportedUser struct {
	protocol.UserRef
	Since *time.Time `json:"since,omitempty"` // when blocked or muted; nil for a follow
}

// ExportedStatus is a status in an export, as stored: a repost names its
// original by id alone (ExportedRepostOf), not as a status whose other
// fields were never read.
type ExportedStatus struct {
	Status
	RepostOf *ExportedRepostOf `json:"repost_of,omitempty"` // hides Status's
}

// ExportedRepostOf is the original of an exported repost.
type ExportedRepostOf struct {
	ID int64 `json:"id"`
}

// exportedStatus is st as an export writes it.
func exportedStatus(st Status) ExportedStatus {
	out := ExportedStatus{Status: st}
	if st.RepostOf != nil {
		out.RepostOf = &ExportedRepostOf{ID: st.RepostOf.ID}
	}
	return out
}

// ExportedList is a list in an export, with all its members.
type ExportedList struct {
	List
	MemberList []protocol.UserRef `json:"member_list"`
}

// Export writes everything of uid's as one JSON document to w:
//
//	{"exported": time, "profile": User, "statuses": [ExportedStatus...]
//	(oldest first, every one), "following": [...], "followers": [...] (oldest
//	follow first), "lists": [List with "member_list"], "blocks": [...],
//	"mutes": [...] (with "since"), "likes": [{"status_id", "at"}]}
//
// It reads exportPage items a round trip and writes each page as it comes,
// so its memory stays bounded whatever the account's size. An error after
// the first byte leaves the document cut short; w's errors (a client gone)
// end it.
func (s *Service) Export(ctx context.Context, uid int64, w io.Writer) error {
	u, err := s.UserByID(ctx, uid)
	if err != nil {
		return err
	}
	now, err := s.now(ctx)
	if err != nil {
		return fmt.Errorf("export %d: %w", uid, err)
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	e := &exporter{s: s, w: bw}
	e.raw(`{"exported":`)
	e.value(now)
	e.raw(`,"profile":`)
	e.value(u)
	k := s.keys
	e.raw(`,"statuses":[`)
	e.pages(ctx, k.profile(uid), false, func(members []redis.Z) error {
		sts, err := s.statusesByID(ctx, zIDs(members))
		for _, st := range sts {
			e.item(exportedStatus(st))
		}
		return err
	})
	for _, rel := range []struct{ name, key string }{
		{"following", k.following(uid)}, {"followers", k.followers(uid)},
		{"blocks", k.blocks(uid)}, {"mutes", k.mutes(uid)},
	} {
		e.raw(`],"` + rel.name + `":[`)
		timed := rel.name == "blocks" || rel.name == "mutes"
		e.pages(ctx, rel.key, timed, func(members []redis.Z) error {
			users, err := s.usersByIDAll(ctx, zIDs(members))
			byID := make(map[int64]User, len(users))
			for _, u := range users {
				byID[u.ID] = u
			}
			for _, m := range members {
				id, _ := strconv.ParseInt(fmt.Sprint(m.Member), 10, 64)
				u, ok := byID[id]
				if !ok {
					continue // an account gone meanwhile (a suspended one is still theirs to export)
				}
				out := ExportedUser{UserRef: u.Ref()}
				if timed {
					at := time.UnixMilli(int64(m.Score)).UTC()
					out.Since = &at
				}
				e.item(out)
			}
			return err
		})
	}
	e.raw(`],"lists":[`)
	if e.err == nil {
		lists, err := s.Lists(ctx, uid)
		e.fail(err)
		for _, l := range lists {
			members, err := s.rdb.ZRange(ctx, k.listMembers(l.ID), 0, -1).Result() // at most MaxListMembers
			e.fail(err)
			users, err := s.usersByIDAll(ctx, parseIDs(members))
			e.fail(err)
			out := ExportedList{List: l, MemberList: make([]protocol.UserRef, 0, len(users))}
			for _, m := range users {
				out.MemberList = append(out.MemberList, m.Ref())
			}
			e.item(out)
		}
	}
	e.raw(`],"likes":[`)
	e.pages(ctx, k.liked(uid), true, func(members []redis.Z) error {
		for _, m := range members {
			id, _ := strconv.ParseInt(fmt.Sprint(m.Member), 10, 64)
			e.item(struct {
				StatusID int64     `json:"status_id"`
				At       time.Time `json:"at"`
			}{id, time.UnixMilli(int64(m.Score)).UTC()})
		}
		return nil
	})
	e.raw("]}\n")
	if e.err == nil {
		e.err = bw.Flush()
	}
	if e.err != nil {
		return fmt.Errorf("export %d: %w", uid, e.err)
	}
	return nil
}

// exporter writes a JSON document piece by piece, keeping the first error
// and writing nothing after it.
type exporter struct {
	s     *Service
	w     *bufio.Writer
	err   error
	comma bool // an item was written in the array open now
}

func (e *exporter) fail(err error) {
	if e.err == nil && err != nil {
		e.err = err
	}
}

func (e *exporter) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
	e.comma = false
}

func (e *exporter) value(v any) {
	if e.err != nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		e.err = err
		return
	}
	_, e.err = e.w.Write(raw)
}

// item writes v as the next element of the array open now.
func (e *exporter) item(v any) {
	if e.comma && e.err == nil {
		e.err = e.w.WriteByte(',')
	}
	e.value(v)
	e.comma = true
}

// pages reads the sorted set key exportPage members a round trip, lowest
// score first, and hands each page to write. With unique scores (ids,
// sequence numbers) each page starts after the last score read. With
// byTime (scores are times, which two members may share) it starts at the
// last score read, and leaves out the members of that score it read before:
// those whose bytes sort up to the last member read (Redis orders the
// members of one score so). Either way a member added or removed meanwhile
// shifts no other one: none is read twice or passed over, as paging by rank
// would.
func (e *exporter) pages(ctx context.Context, key string, byTime bool, write func([]redis.Z) error) {
	min := "-inf"
	var (
		last redis.Z
		// seen is how many members of last's score were read: at most as
		// many come again at the start of the next read, which reads as
		// many more. (Only with byTime; a page's worth more each time a read
		// brings none new, which only members added meanwhile with an old
		// time can cause.)
		seen int64
	)
	for e.err == nil {
		count := exportPage + seen
		members, err := e.s.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
			Min: min, Max: "+inf", Count: count,
		}).Result()
		if err != nil {
			e.fail(err)
			return
		}
		full := int64(len(members)) == count
		if seen > 0 {
			members = slices.DeleteFunc(members, func(m redis.Z) bool {
				return m.Score == last.Score && fmt.Sprint(m.Member) <= fmt.Sprint(last.Member)
			})
		}
		if len(members) > 0 {
			e.fail(write(members))
			end := members[len(members)-1]
			if end.Score != last.Score {
				seen = 0
			}
			for _, m := range members {
				if m.Score == end.Score {
					seen++
				}
			}
			last = end
		} else if full {
			seen += exportPage
		}
		if !full {
			return
		}
		at := strconv.FormatFloat(last.Score, 'f', -1, 64)
		if byTime {
			min = at
		} else {
			min, seen = "("+at, 0
		}
	}
}

// zIDs are the members of a page read as ids.
func zIDs(members []redis.Z) []int64 {
	ids := make([]int64, 0, len(members))
	for _, m := range members {
		if id, err := strconv.ParseInt(fmt.Sprint(m.Member), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
