package social

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// List is a named list of accounts, as the API shows it.
type List = protocol.List

// Caps on lists, so that deleting a list and fanning a status out to the
// lists that hold its author stay bounded.
const (
	MaxListsPerUser  = 20  // lists one user may own
	MaxListMembers   = 500 // members one list may hold
	MaxListNameRunes = 64  // the longest list name, counted after trimming
)

// A list's keys (its hash, members and timeline) share its slot; the
// owner's list:out and each member's list:in are in theirs, and
// list:member:seq in its own. So a change that touches both sides is a
// script on one slot and plain commands on the others, in an order that
// keeps what readers and fan-out passes see safe at every step: each step
// is idempotent, a retry of the same request runs them all again and
// finishes one cut short, and the comments of each change say what a crash
// between two steps leaves.
var (
	//go:embed list_owner.lua
	listOwnerSource string

	//go:embed list_create.lua
	listCreateSource string
	listCreateScript = newScript(listCreateSource)

	//go:embed list_rename.lua
	listRenameSource string
	listRenameScript = newScript(listOwnerSource + listRenameSource)

	//go:embed list_delete.lua
	listDeleteSource string
	listDeleteScript = newScript(listOwnerSource + listDeleteSource)
)

// listFields are the fields of a list's hash that reads use; "deleted"
// marks a list whose deletion is under way, which is no list to them.
var listFields = []string{"id", "owner", "name", "created", "members", "deleted"}

// ValidateListName trims name and checks it against the API's rules: those
// of a user's display name.
func ValidateListName(name string) (string, error) {
	return validateName(name, MaxListNameRunes)
}

// CreateList makes a list named name for owner.
//
// The owner's side goes first, a script in their slot that takes a place
// in list:out: it is the step that may refuse (an unknown owner, one at the
// cap), so a refusal leaves nothing to undo and no reader ever sees a list
// that is then taken back. The list's hash follows. A crash between the
// two leaves an id in list:out whose hash never comes: Lists skips it, List
// and every change of it answer ErrListNotFound, and no member can be
// added to it, so no job reaches it; it holds one of the owner's
// MaxListsPerUser places until Lists, a minute on, gives it back. (The hash
// first would instead leave, after a crash, a list in no one's list:out
// that anyone may read by its id, and after a refusal a list that was
// there for a moment.) The script refuses an owner being deleted; one whose
// deletion began after it ran is read again once the hash is written, and
// the list taken back. A retry makes a new list: a create has no key of
// its own to be idempotent by.
func (s *Service) CreateList(ctx context.Context, owner int64, name string) (List, error) {
	name, err := ValidateListName(name)
	if err != nil {
		return List{}, err
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	who := pipe.HMGet(ctx, k.user(owner), "login", "name")
	id := pipe.Incr(ctx, k.listSeq())
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return List{}, fmt.Errorf("create list for %d: %w", owner, err)
	}
	login, _ := who.Val()[0].(string)
	ownerName, _ := who.Val()[1].(string)
	l := List{
		ID: id.Val(), Name: name, Owner: protocol.UserRef{ID: owner, Login: login, Name: ownerName},
		Created: now.Val().UTC().Truncate(time.Millisecond),
	}
	res, err := listCreateScript.Run(ctx, s.rdb, []string{k.user(owner), k.listsOut(owner)},
		l.ID, l.Created.UnixMilli(), MaxListsPerUser).Int()
	if err != nil {
		return List{}, fmt.Errorf("create list for %d: %w", owner, err)
	}
	switch res {
	case -1:
		return List{}, ErrUserNotFound
	case -2:
		return List{}, ErrTooManyLists
	}
	if err := s.rdb.HSet(ctx, k.list(l.ID), "id", l.ID, "owner", owner, "name", name,
		"created", l.Created.UnixMilli(), "members", 0).Err(); err != nil {
		return List{}, fmt.Errorf("create list for %d: %w", owner, err)
	}
	// The owner's deletion may have begun since the script looked, and its
	// job have passed their lists before the hash came: then no one else
	// will delete it. A deletion marked after this read runs its lists step
	// after it, and finds the list there.
	left, err := s.rdb.HMGet(ctx, k.user(owner), "id", "deleted").Result()
	if err != nil {
		return List{}, fmt.Errorf("create list for %d: %w", owner, err)
	}
	if left[0] == nil || left[1] != nil {
		if err := s.DeleteList(ctx, owner, l.ID); err != nil && !errors.Is(err, ErrListNotFound) {
			return List{}, fmt.Errorf("create list for %d, taken back: %w", owner, err)
		}
		return List{}, ErrUserNotFound
	}
	return l, nil
}

// RenameList renames list id, which uid must own, and returns it as it is
// then.
func (s *Service) RenameList(ctx context.Context, uid, id int64, name string) (List, error) {
	name, err := ValidateListName(name)
	if err != nil {
		return List{}, err
	}
	res, err := listRenameScript.Run(ctx, s.rdb, []string{s.keys.list(id)}, uid, name).Int()
	if err != nil {
		return List{}, fmt.Errorf("rename list %d: %w", id, err)
	}
	if err := listRefusal(res); err != nil {
		return List{}, err
	}
	return s.List(ctx, uid, id)
}

// DeleteList deletes list id, which uid must own, with its members and
// timeline.
//
// First a script in the list's slot marks it deleted and hands back its
// members: from then on every read and change but this deletion finds no
// list, and no one can be added to it. Then, in one pipeline, the list
// leaves each member's list:in (all of its memberships are over, so
// whatever score list:in holds goes) and its owner's list:out; last its
// keys go, in one DEL. A crash after the mark leaves a list no one sees,
// still in some list:in and list:out: a fan-out pass that writes its
// timeline takes it out again (a marked list is gone to it), and the list
// holds a place among its owner's lists until a retry of the deletion (the
// script takes a marked list from its owner) runs every step again, or
// the owner's next read of their lists does, a minute after the list was
// made (Lists, finishDeletions). list:out goes before the keys, so that no
// crash leaves an id there that a retry can no longer find.
//
// An add whose script ran before the mark may write list:in after the
// pipeline; it checks the list after writing and takes it out again. A
// list_post pass or a backfill that writes the timeline after the DEL
// checks after writing (the pass the list's hash, the backfill the
// membership) and takes out what it wrote; one whose check comes before
// the DEL wrote before it.
func (s *Service) DeleteList(ctx context.Context, uid, id int64) error {
	k := s.keys
	res, err := listDeleteScript.Run(ctx, s.rdb, []string{k.list(id), k.listMembers(id)}, uid).Slice()
	if err != nil {
		return fmt.Errorf("delete list %d: %w", id, err)
	}
	code, _ := res[0].(int64)
	if err := listRefusal(int(code)); err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	for _, m := range res[1:] {
		s, _ := m.(string)
		if member, err := strconv.ParseInt(s, 10, 64); err == nil {
			pipe.ZRem(ctx, k.listsIn(member), id)
		}
	}
	pipe.ZRem(ctx, k.listsOut(uid), id)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("delete list %d: %w", id, err)
	}
	if err := s.rdb.Del(ctx, k.list(id), k.listMembers(id), k.listStatuses(id)).Err(); err != nil {
		return fmt.Errorf("delete list %d: %w", id, err)
	}
	return nil
}

// listRefusal is the error of a list script's answer: -1 for a list that
// does not exist, -2 for one that belongs to someone else.
func listRefusal(res int) error {
	switch res {
	case -1:
		return ErrListNotFound
	case -2:
		return ErrNotListOwner
	}
	return nil
}

// List returns list id as viewer sees it. Lists are private: to anyone
// but its owner (viewer 0 is a visitor) a list is ErrListNotFound, as one
// that does not exist, so that nobody learns which ids are taken.
func (s *Service) List(ctx context.Context, viewer, id int64) (List, error) {
	vals, err := s.rdb.HMGet(ctx, s.keys.list(id), listFields...).Result()
	if err != nil {
		return List{}, fmt.Errorf("list %d: %w", id, err)
	}
	l, ok := parseList(vals)
	if !ok || l.Owner.ID != viewer {
		return List{}, ErrListNotFound
	}
	owner, err := s.usersByID(ctx, []int64{l.Owner.ID})
	if err != nil {
		return List{}, fmt.Errorf("list %d: %w", id, err)
	}
	if len(owner) == 1 {
		l.Owner = owner[0].Ref()
	}
	return l, nil
}

// Lists returns the lists owner made, oldest first. It also tidies what
// a change cut short left among them, once a list's place is
// lostListAfter old: it gives back the places of lists never made, and
// finishes the deletions of lists marked deleted (finishDeletions).
func (s *Service) Lists(ctx context.Context, owner int64) ([]List, error) {
	k := s.keys
	out, err := s.rdb.ZRangeWithScores(ctx, k.listsOut(owner), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("lists of %d: %w", owner, err)
	}
	pipe := s.rdb.Pipeline()
	who := pipe.HMGet(ctx, k.user(owner), "login", "name")
	clock := pipe.Time(ctx) // Redis's, as the places' scores are
	cmds := make([]*redis.SliceCmd, len(out))
	for i, m := range out {
		id, _ := strconv.ParseInt(fmt.Sprint(m.Member), 10, 64)
		cmds[i] = pipe.HMGet(ctx, k.list(id), listFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("lists of %d: %w", owner, err)
	}
	login, _ := who.Val()[0].(string)
	name, _ := who.Val()[1].(string)
	lists := make([]List, 0, len(cmds))
	var lost []any
	var marked []int64
	for i, c := range cmds {
		l, ok := parseList(c.Val())
		old := clock.Val().Sub(time.UnixMilli(int64(out[i].Score))) > lostListAfter
		switch {
		case ok:
			l.Owner = protocol.UserRef{ID: owner, Login: login, Name: name}
			lists = append(lists, l)
		case !old:
			// A list of the last minute is left to the change that may be
			// under way: a create's hash on its way, or the owner's retry
			// of a deletion cut short, which would find no list once
			// finished here (ErrListNotFound).
		case c.Val()[0] == nil:
			lost = append(lost, out[i].Member)
		case c.Val()[5] != nil: // "deleted"
			id, _ := strconv.ParseInt(fmt.Sprint(out[i].Member), 10, 64)
			marked = append(marked, id)
		}
	}
	if len(lost) > 0 {
		// Places whose list's hash never came (CreateList cut short between
		// its two steps) go back to the owner.
		if err := s.rdb.ZRem(ctx, k.listsOut(owner), lost...).Err(); err != nil {
			s.opts.Logger.WarnContext(ctx, "could not free the places of lists never made", "uid", owner, "err", err)
		}
	}
	s.finishDeletions(ctx, owner, marked)
	return lists, nil
}

// finishDeletions finishes the deletions of owner's lists ids, marked
// deleted, as a retry of DeleteList would: one cut short after its mark
// leaves a list its owner no longer sees, and so may never delete again,
// which holds a place among their MaxListsPerUser and stays in its
// members' list:in. Best effort, as Lists gives back the places of lists
// never made: a failure is logged, and the owner's next read tries again.
// A deletion still under way has its steps run twice, each idempotent.
func (s *Service) finishDeletions(ctx context.Context, owner int64, ids []int64) {
	for _, id := range ids {
		// A list whose keys went meanwhile is deleted already.
		if err := s.DeleteList(ctx, owner, id); err != nil && !errors.Is(err, ErrListNotFound) {
			s.opts.Logger.WarnContext(ctx, "could not finish the deletion of a list", "uid", owner, "list", id, "err", err)
		}
	}
}

// lostListAfter is how long after its place was taken a list whose hash
// is not there is taken for one never made (far longer than CreateList's
// two steps take), and after which Lists finishes the deletion of one
// marked deleted.
const lostListAfter = time.Minute

// parseList reads a list's hash (listFields): all but its owner's login
// and name. It reports false for a list that does not exist, or whose
// deletion is under way.
func parseList(vals []any) (List, bool) {
	str := func(i int) string { s, _ := vals[i].(string); return s }
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	if str(0) == "" || str(5) != "" {
		return List{}, false
	}
	return List{
		ID: num(0), Owner: protocol.UserRef{ID: num(1)}, Name: str(2),
		Created: unixMilli(str(3)), Members: num(4),
	}, true
}

// ListMembers lists the members of list id, newest first, to its owner
// (viewer); to anyone else the list is ErrListNotFound.
func (s *Service) ListMembers(ctx context.Context, viewer, id int64, p Page) ([]User, error) {
	if err := s.listReadable(ctx, viewer, id); err != nil {
		return nil, err
	}
	return s.userList(ctx, s.keys.listMembers(id), p)
}

// ListTimeline pages through the statuses of list id's members, as
// HomeTimeline does: the list's stored timeline, into which list_post jobs
// write the statuses of members who are not pulled, with the statuses of
// its pulled members merged in by id (a pulled author's posts go to no
// list) as a home read merges those of the pulled authors its reader
// follows (see mergePulled): from their profile timelines, one range each,
// up to directPulls of them; past that, from the site's newest pulled
// statuses, kept when the list holds their author, so that a read costs
// the same however many of its members are pulled. A read costs two round
// trips before its page (pulledMembers: the list with its members, then,
// when it has any, which of them are pulled). Only its owner (viewer)
// reads it; to anyone else the list is ErrListNotFound.
func (s *Service) ListTimeline(ctx context.Context, viewer, id int64, c Cursor) (TimelinePage, error) {
	if err := c.validate(); err != nil {
		return TimelinePage{}, err
	}
	pulled, err := s.pulledMembers(ctx, viewer, id)
	if err != nil {
		return TimelinePage{}, err
	}
	key := s.keys.listStatuses(id)
	scan := 0 // pulled statuses the last round scanned
	return s.page(ctx, key, c, func(newestFirst bool, cursor int64, n int) ([]int64, int64, error) {
		stored, err := s.window(ctx, s.rdb, key, newestFirst, cursor, 0, n).Result()
		if err != nil {
			return nil, 0, err
		}
		if len(pulled) > directPulls {
			scan = min(s.pulledScan, max(4*n, 4*scan))
			return s.mergePulled(ctx, s.keys.listMembers(id), stored, newestFirst, cursor, n, scan)
		}
		ids, err := s.mergeAuthors(ctx, stored, pulled, newestFirst, cursor, n)
		return ids, 0, err
	})
}

// pulledMembers returns the members of list id who are pulled authors, or
// ErrListNotFound when it is no list owned by viewer. The list's members
// and authors:pulled are in different slots: two round trips, the second
// only when the list has members.
func (s *Service) pulledMembers(ctx context.Context, viewer, id int64) ([]int64, error) {
	k := s.keys
	pipe := s.rdb.Pipeline()
	list := pipe.HMGet(ctx, k.list(id), "id", "deleted", "owner")
	members := pipe.ZRange(ctx, k.listMembers(id), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("list %d: %w", id, err)
	}
	if !ownedBy(list.Val(), viewer) {
		return nil, ErrListNotFound
	}
	if len(members.Val()) == 0 {
		return nil, nil
	}
	since, err := s.rdb.ZMScore(ctx, k.pulledAuthors(), members.Val()...).Result()
	if err != nil {
		return nil, fmt.Errorf("list %d: %w", id, err)
	}
	var pulled []int64
	for i, m := range parseIDs(members.Val()) {
		// A pulled author's score is a status id, never 0; ZMSCORE reads a
		// missing member as 0.
		if since[i] != 0 {
			pulled = append(pulled, m)
		}
	}
	return pulled, nil
}

// listReadable answers ErrListNotFound unless list id exists, is not being
// deleted, and is viewer's.
func (s *Service) listReadable(ctx context.Context, viewer, id int64) error {
	f, err := s.rdb.HMGet(ctx, s.keys.list(id), "id", "deleted", "owner").Result()
	if err != nil {
		return fmt.Errorf("list %d: %w", id, err)
	}
	if !ownedBy(f, viewer) {
		return ErrListNotFound
	}
	return nil
}

// ownedBy reads a list's "id", "deleted" and "owner" fields: whether the
// list exists, is not being deleted, and belongs to viewer.
func ownedBy(f []any, viewer int64) bool {
	owner, _ := f[2].(string)
	return f[0] != nil && f[1] == nil && viewer != 0 && owner == itoa(viewer)
}
