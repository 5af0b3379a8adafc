package social

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Bounds of a thread's context: the descendants it reads, the replies of one
// status below the first level, and the levels.
const (
	MaxDescendants      = 200
	maxRepliesPerStatus = 50
	maxThreadDepth      = 50
)

// Thread is the conversation around a status: its nearest ancestors, oldest
// first, and its descendants in thread order (each reply followed by its
// own replies, oldest first). A deleted ancestor is left out; its replies
// stay, answering a deleted status.
type Thread struct {
	// ID is the thread's (keptThread): the status whose channel tells its
	// new replies and deletions to the streams that watch it.
	ID          int64
	Ancestors   []Status
	Descendants []Status
	// More holds the statuses, the status itself or descendants, whose
	// replies the bounds left unread, some or all: their own contexts
	// read more. The last statuses read, where a bound stopped the walk,
	// are named whether they have replies or not. A status's replies
	// count beyond the replies shown under it counts, elsewhere, replies
	// hidden from the reader.
	More []int64
}

// Context reads the thread around status id (a repost: its original's):
// at most MaxAncestors up and MaxDescendants down, at most
// maxRepliesPerStatus replies of each descendant and maxThreadDepth levels.
// What it leaves out shows in the counts: a status whose replies count
// exceeds the replies read here has more, which its own context reads.
// It costs one round trip for the status, one a level, and one for the
// statuses, whatever the thread's size.
func (s *Service) Context(ctx context.Context, id int64) (Thread, error) {
	path, thread, orig, err := s.threadHead(ctx, id)
	if err == nil && orig != 0 {
		// A repost's thread is its original's; an original is never a
		// repost, so one hop ends it.
		id = orig
		if path, thread, orig, err = s.threadHead(ctx, id); err == nil && orig != 0 {
			err = ErrStatusNotFound
		}
	}
	if err != nil {
		return Thread{}, err
	}
	var ancestors []int64
	if path != "" {
		ancestors = parseIDs(strings.Split(path, ","))
	}
	children, more, err := s.descendants(ctx, id)
	if err != nil {
		return Thread{}, fmt.Errorf("thread of %d: %w", id, err)
	}
	var order []int64
	var walk func(int64)
	walk = func(p int64) {
		for _, c := range children[p] {
			order = append(order, c)
			walk(c)
		}
	}
	walk(id)
	sts, err := s.statusesByID(ctx, append(ancestors, order...))
	if err != nil {
		return Thread{}, fmt.Errorf("thread of %d: %w", id, err)
	}
	t := Thread{ID: keptThread(id, path, thread), More: more}
	for _, st := range sts {
		if st.ID < id {
			t.Ancestors = append(t.Ancestors, st)
		} else {
			t.Descendants = append(t.Descendants, st)
		}
	}
	if t.Ancestors == nil {
		t.Ancestors = []Status{}
	}
	if t.Descendants == nil {
		t.Descendants = []Status{}
	}
	return t, nil
}

// threadHead reads what Context starts from: status id's path and thread
// (its hash's fields: keptThread), and the original it reposts (0 for
// none). A status that is not there, or hidden, is ErrStatusNotFound.
func (s *Service) threadHead(ctx context.Context, id int64) (path, thread string, orig int64, err error) {
	v, err := s.rdb.HMGet(ctx, s.keys.status(id), "id", "path", "repost_of", "hidden", "thread").Result()
	if err != nil {
		return "", "", 0, fmt.Errorf("thread of %d: %w", id, err)
	}
	if sid, _ := v[0].(string); sid == "" || v[3] != nil {
		return "", "", 0, ErrStatusNotFound
	}
	path, _ = v[1].(string)
	if o, _ := v[2].(string); o != "" {
		if orig, err = strconv.ParseInt(o, 10, 64); err != nil || orig <= 0 {
			return "", "", 0, ErrStatusNotFound
		}
	}
	thread, _ = v[4].(string)
	return path, thread, orig, nil
}

// descendants reads the replies below root, level by level, one pipeline a
// level: each status's replies, oldest first, as the bounds of Context
// allow, and the statuses whose replies the bounds left unread (one reply
// more than a status may give is asked, to tell).
func (s *Service) descendants(ctx context.Context, root int64) (children map[int64][]int64, more []int64, err error) {
	children = map[int64][]int64{}
	frontier := []int64{root}
	total := 0
	for depth := 0; len(frontier) > 0 && total < MaxDescendants && depth < maxThreadDepth; depth++ {
		each := MaxDescendants - total
		if depth > 0 {
			each = min(each, maxRepliesPerStatus)
		}
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(frontier))
		for i, p := range frontier {
			cmds[i] = pipe.ZRange(ctx, s.keys.replies(p), 0, int64(each))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, err
		}
		var next []int64
		for i, p := range frontier {
			ids := parseIDs(cmds[i].Val())
			cut := len(ids) > each
			for _, c := range ids[:min(len(ids), each)] {
				if total == MaxDescendants {
					cut = true
					break
				}
				children[p] = append(children[p], c)
				next = append(next, c)
				total++
			}
			if cut {
				more = append(more, p)
			}
		}
		frontier = next
	}
	// Stopped at a bound: the replies of the statuses read last are not.
	if total == MaxDescendants || len(frontier) > 0 {
		more = append(more, frontier...)
	}
	return children, more, nil
}
