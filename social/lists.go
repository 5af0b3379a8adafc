package social

import (
	"context"
	_ "embed"
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

var (
	//go:embed list_owner.lua
	listOwnerSource string

	//go:embed list_create.lua
	listCreateSource string
	listCreateScript = redis.NewScript(listCreateSource)

	//go:embed list_rename.lua
	listRenameSource string
	listRenameScript = redis.NewScript(listOwnerSource + listRenameSource)

	//go:embed list_delete.lua
	listDeleteSource string
	listDeleteScript = redis.NewScript(listOwnerSource + listDeleteSource)

	//go:embed list_add_member.lua
	listAddSource string
	listAddScript = redis.NewScript(sharedSource + listOwnerSource + listAddSource)

	//go:embed list_remove_member.lua
	listRemoveSource string
	listRemoveScript = redis.NewScript(listOwnerSource + listRemoveSource)
)

var listFields = []string{"id", "owner", "name", "created", "members"}

// ValidateListName trims name and checks it against the API's rules: those
// of a user's display name.
func ValidateListName(name string) (string, error) {
	return validateName(name, MaxListNameRunes)
}

// CreateList makes a list named name for owner.
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
	res, err := listCreateScript.Run(ctx, s.rdb, []string{k.user(owner), k.listsOut(owner), k.list(l.ID)},
		l.ID, owner, name, l.Created.UnixMilli(), MaxListsPerUser).Int()
	if err != nil {
		return List{}, fmt.Errorf("create list for %d: %w", owner, err)
	}
	switch res {
	case -1:
		return List{}, ErrUserNotFound
	case -2:
		return List{}, ErrTooManyLists
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
	return s.List(ctx, id)
}

// DeleteList deletes list id, which uid must own, with its members and
// timeline.
func (s *Service) DeleteList(ctx context.Context, uid, id int64) error {
	k := s.keys
	res, err := listDeleteScript.Run(ctx, s.rdb, []string{
		k.list(id), k.listMembers(id), k.listStatuses(id), k.listsOut(uid),
	}, uid, id, k.listsInPrefix()).Int()
	if err != nil {
		return fmt.Errorf("delete list %d: %w", id, err)
	}
	return listRefusal(res)
}

// AddListMember adds the user with login to list id, which uid must own
// (idempotent; anyone may be added, uid included), and backfills the
// list's timeline with their latest statuses. It returns the list as it is
// then.
func (s *Service) AddListMember(ctx context.Context, uid, id int64, login string) (List, error) {
	member, err := s.UID(ctx, login)
	if err != nil {
		return List{}, err
	}
	k := s.keys
	res, err := listAddScript.Run(ctx, s.rdb, []string{
		k.list(id), k.listMembers(id), k.listsIn(member), k.listStatuses(id),
		k.user(member), k.profile(member), k.listMemberSeq(),
	}, uid, member, id, MaxListMembers, s.opts.HomeSize).Int()
	if err != nil {
		return List{}, fmt.Errorf("add %d to list %d: %w", member, id, err)
	}
	switch res {
	case -3:
		return List{}, ErrUserNotFound
	case -4:
		return List{}, ErrListFull
	}
	if err := listRefusal(res); err != nil {
		return List{}, err
	}
	return s.List(ctx, id)
}

// RemoveListMember takes the user with login out of list id, which uid
// must own (idempotent), and their statuses out of its timeline. It returns
// the list as it is then.
func (s *Service) RemoveListMember(ctx context.Context, uid, id int64, login string) (List, error) {
	member, err := s.UID(ctx, login)
	if err != nil {
		return List{}, err
	}
	k := s.keys
	res, err := listRemoveScript.Run(ctx, s.rdb, []string{
		k.list(id), k.listMembers(id), k.listsIn(member), k.listStatuses(id), k.profile(member),
	}, uid, member, id, k.job(listDeleteJobPrefix)).Int()
	if err != nil {
		return List{}, fmt.Errorf("remove %d from list %d: %w", member, id, err)
	}
	if err := listRefusal(res); err != nil {
		return List{}, err
	}
	return s.List(ctx, id)
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

// List returns list id; anyone may read any list.
func (s *Service) List(ctx context.Context, id int64) (List, error) {
	vals, err := s.rdb.HMGet(ctx, s.keys.list(id), listFields...).Result()
	if err != nil {
		return List{}, fmt.Errorf("list %d: %w", id, err)
	}
	l, ok := parseList(vals)
	if !ok {
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

// Lists returns the lists owner made, oldest first.
func (s *Service) Lists(ctx context.Context, owner int64) ([]List, error) {
	k := s.keys
	ids, err := s.rdb.ZRange(ctx, k.listsOut(owner), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("lists of %d: %w", owner, err)
	}
	pipe := s.rdb.Pipeline()
	who := pipe.HMGet(ctx, k.user(owner), "login", "name")
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range parseIDs(ids) {
		cmds[i] = pipe.HMGet(ctx, k.list(id), listFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("lists of %d: %w", owner, err)
	}
	login, _ := who.Val()[0].(string)
	name, _ := who.Val()[1].(string)
	lists := make([]List, 0, len(cmds))
	for _, c := range cmds {
		if l, ok := parseList(c.Val()); ok {
			l.Owner = protocol.UserRef{ID: owner, Login: login, Name: name}
			lists = append(lists, l)
		}
	}
	return lists, nil
}

// parseList reads a list's hash (listFields): all but its owner's login
// and name. It reports false for a list that does not exist.
func parseList(vals []any) (List, bool) {
	str := func(i int) string { s, _ := vals[i].(string); return s }
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	if str(0) == "" {
		return List{}, false
	}
	return List{
		ID: num(0), Owner: protocol.UserRef{ID: num(1)}, Name: str(2),
		Created: unixMilli(str(3)), Members: num(4),
	}, true
}

// ListMembers lists the members of list id, newest first.
func (s *Service) ListMembers(ctx context.Context, id int64, p Page) ([]User, error) {
	if err := s.listExists(ctx, id); err != nil {
		return nil, err
	}
	return s.userList(ctx, s.keys.listMembers(id), p)
}

// ListTimeline pages through the statuses of list id's members, as
// HomeTimeline does.
func (s *Service) ListTimeline(ctx context.Context, id int64, c Cursor) (TimelinePage, error) {
	if err := c.validate(); err != nil {
		return TimelinePage{}, err
	}
	if err := s.listExists(ctx, id); err != nil {
		return TimelinePage{}, err
	}
	return s.timeline(ctx, s.keys.listStatuses(id), c)
}

func (s *Service) listExists(ctx context.Context, id int64) error {
	n, err := s.rdb.Exists(ctx, s.keys.list(id)).Result()
	if err != nil {
		return fmt.Errorf("list %d: %w", id, err)
	}
	if n == 0 {
		return ErrListNotFound
	}
	return nil
}
