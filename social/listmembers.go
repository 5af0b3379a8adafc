package social

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed list_add_member.lua
	listAddSource string
	listAddScript = newScript(listOwnerSource + listAddSource)

	//go:embed list_remove_member.lua
	listRemoveSource string
	listRemoveScript = newScript(listOwnerSource + listRemoveSource)

	//go:embed list_leave.lua
	listLeaveSource string
	listLeaveScript = newScript(listLeaveSource)
)

// maxSettleRounds bounds the rounds of settleListIn against memberships
// ended and made again while it runs.
const maxSettleRounds = 5

// AddListMember adds the user with login to list id, which uid must own
// (idempotent), and backfills the list's timeline with their latest
// statuses. It returns the list as it is then. Only those uid follows may
// be added, and uid: anyone else is ErrNotFollowing. So an author is in at
// most MaxListsPerUser lists of each follower (and of their own), and
// Unfollow takes them out of the lists of whoever stops following them.
//
// Three steps: the membership, made by a script in the list's slot that
// keeps the cap, with a score from list:member:seq; the list in the
// member's list:in at that score (see settleListIn); the backfill. Each
// runs also when the user was a member already, so a retry finishes an add
// cut short. A crash after the membership leaves a member whose statuses
// do not reach the list until the retry.
//
// The follow is read in uid's slot before the script and again after it,
// as an unfollow writes its end of the follow before it reads the lists
// (see leaveLists): either the read after the membership sees the unfollow,
// and the add takes the membership back and refuses, or the unfollow's
// read comes after the membership and takes it out. No interleaving
// leaves someone uid does not follow in uid's list, and a retry of an add
// cut short between its write and that check takes the membership back.
//
// No status is missed between the job and the backfill: the membership is
// in list:in before the backfill reads the profile, and a list_post job
// reads list:member:seq (its "until") after the status is in the profile
// and pages list:in after that. If the backfill read the profile before the
// status was there, the membership's score was taken before, so it is
// within until and in list:in when the job pages it; otherwise the
// backfill copies it.
func (s *Service) AddListMember(ctx context.Context, uid, id int64, login string) (List, error) {
	member, err := s.UID(ctx, login)
	if err != nil {
		return List{}, err
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	exists := pipe.Exists(ctx, k.user(member))
	follows := pipe.ZMScore(ctx, k.following(uid), itoa(member))
	if _, err := pipe.Exec(ctx); err != nil {
		return List{}, fmt.Errorf("add %d to list %d: %w", member, id, err)
	}
	// ZMSCORE reads a missing member as 0; follow scores never are.
	followed := member == uid || follows.Val()[0] != 0
	add := func(seq int64) (int64, error) {
		return listAddScript.Run(ctx, s.rdb, []string{k.list(id), k.listMembers(id)},
			uid, member, exists.Val(), MaxListMembers, seq, boolArg(followed)).Int64()
	}
	// The first call only checks: a refusal, or a member already, takes no
	// score, and so changes nothing. The second checks again with a score.
	score, err := add(0)
	if err == nil && score == 0 {
		// From the write on, the add runs though the client goes: cut
		// short once the membership is written, it would leave a member
		// counted whose statuses reach the list by no job (list:in not
		// settled), nor checked against an unfollow since.
		var cancel context.CancelFunc
		ctx, cancel = detached(ctx)
		defer cancel()
		var seq int64
		if seq, err = s.rdb.Incr(ctx, k.listMemberSeq()).Result(); err == nil {
			score, err = add(seq)
		}
	}
	if err != nil {
		return List{}, fmt.Errorf("add %d to list %d: %w", member, id, err)
	}
	switch score {
	case -3:
		return List{}, ErrUserNotFound
	case -4:
		return List{}, ErrListFull
	case -5:
		return List{}, ErrNotFollowing
	}
	if err := listRefusal(int(score)); err != nil {
		return List{}, err
	}
	// The check after the write: an unfollow since the read above. (-6:
	// an earlier add, cut short, left a member uid no longer follows.)
	if score == -6 || member != uid {
		still := ""
		if score != -6 {
			if still, err = s.followScore(ctx, uid, member); err != nil {
				return List{}, fmt.Errorf("add %d to list %d: %w", member, id, err)
			}
		}
		if still == "" {
			if err := s.removeMember(ctx, uid, id, member); err != nil {
				return List{}, fmt.Errorf("add %d to list %d: %w", member, id, err)
			}
			return List{}, ErrNotFollowing
		}
	}
	if err := s.settleListIn(ctx, id, member, score); err != nil {
		return List{}, fmt.Errorf("add %d to list %d: %w", member, id, err)
	}
	g := guard{key: k.listMembers(id), member: itoa(member)}
	if _, err := s.copyLatest(ctx, k.listStatuses(id), k.profile(member), g, s.opts.HomeSize); err != nil {
		return List{}, fmt.Errorf("add %d to list %d: backfill: %w", member, id, err)
	}
	return s.List(ctx, uid, id)
}

// boolArg is a script's flag argument: "1" or "0".
func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// RemoveListMember takes the user with login out of list id, which uid
// must own (idempotent), and their statuses out of its timeline. It returns
// the list as it is then.
func (s *Service) RemoveListMember(ctx context.Context, uid, id int64, login string) (List, error) {
	member, err := s.UID(ctx, login)
	if err != nil {
		return List{}, err
	}
	// Run to its end though the client goes: cut short once the
	// membership is gone, the member's statuses would stay in the list's
	// timeline until a retry that may never come.
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := s.removeMember(ctx, uid, id, member); err != nil {
		if errors.Is(err, ErrListNotFound) || errors.Is(err, ErrNotListOwner) {
			return List{}, err
		}
		return List{}, fmt.Errorf("remove %d from list %d: %w", member, id, err)
	}
	return s.List(ctx, uid, id)
}

// removeMember takes member out of list id, which uid must own, and their
// statuses out of its timeline: the removal of RemoveListMember, of an
// unfollow (leaveLists) and of an add that found the follow gone.
//
// Three steps, each run also when the user was no member, so a retry
// finishes a removal cut short: the membership goes, by a script in the
// list's slot; then the list from the member's list:in (settleListIn); then
// the member's statuses from the list's timeline, copied back when an add
// made the member again meanwhile. A crash after the first leaves the list
// in list:in: the member's statuses still reach the list's timeline for a
// moment, and each pass that writes one takes it out again (it checks the
// membership after writing), until the retry.
//
// The membership goes first because it is what every writer of the
// timeline checks after writing: a list_post pass or a backfill either sees
// it gone and takes its status out, or wrote before the walk below reads
// the timeline.
func (s *Service) removeMember(ctx context.Context, uid, id, member int64) error {
	k := s.keys
	res, err := listRemoveScript.Run(ctx, s.rdb, []string{k.list(id), k.listMembers(id)}, uid, member).Int()
	if err != nil {
		return err
	}
	if err := listRefusal(res); err != nil {
		return err
	}
	if err := s.settleListIn(ctx, id, member, 0); err != nil {
		return err
	}
	if err := s.dropStatusesOf(ctx, id, member); err != nil {
		return err
	}
	// An add since the membership went (a second tab, a retried request,
	// a follow and add after an unfollow) may have copied the member's
	// statuses before the walk above took them out: with the membership
	// standing again, they are copied back, as that add did.
	again, err := s.membership(ctx, id, member)
	if err != nil || again == 0 {
		return err
	}
	g := guard{key: k.listMembers(id), member: itoa(member)}
	_, err = s.copyLatest(ctx, k.listStatuses(id), k.profile(member), g, s.opts.HomeSize)
	return err
}

// leaveLists takes other out of every list uid owns, once uid no longer
// follows them: the lists' step of an unfollow, which runs after the
// follower's side of it is written. It does nothing while uid follows other
// (a follow since has come). uid owns at most MaxListsPerUser lists, so
// this is one round trip for the memberships and a removal per list that
// holds other.
//
// The memberships are read after the unfollow is written; an add that
// writes a membership after that read checks the follow after writing it,
// sees the unfollow, and takes the membership back (see AddListMember).
func (s *Service) leaveLists(ctx context.Context, uid, other int64) error {
	k := s.keys
	ids, err := s.rdb.ZRange(ctx, k.listsOut(uid), 0, -1).Result()
	if err != nil || len(ids) == 0 {
		return err
	}
	lists := parseIDs(ids)
	pipe := s.rdb.Pipeline()
	follows := pipe.ZMScore(ctx, k.following(uid), itoa(other))
	member := make([]*redis.FloatSliceCmd, len(lists))
	for i, id := range lists {
		member[i] = pipe.ZMScore(ctx, k.listMembers(id), itoa(other))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if follows.Val()[0] != 0 {
		return nil
	}
	for i, id := range lists {
		if member[i].Val()[0] == 0 {
			continue
		}
		// A list deleted meanwhile has no member left to remove.
		if err := s.removeMember(ctx, uid, id, other); err != nil && !errors.Is(err, ErrListNotFound) {
			return err
		}
	}
	return nil
}

// dropStatusesOf takes out of list id's timeline the statuses of member,
// with the deleted ones whose list cleanup job is under way (the job walks
// the lists that hold the author, which may no longer include this one).
// The timeline is capped and the profile may be large, so it walks the
// timeline.
func (s *Service) dropStatusesOf(ctx context.Context, id, member int64) error {
	k := s.keys
	timeline := k.listStatuses(id)
	ids, err := s.rdb.ZRange(ctx, timeline, 0, -1).Result()
	if err != nil || len(ids) == 0 {
		return err
	}
	pipe := s.rdb.Pipeline()
	theirs := pipe.ZMScore(ctx, k.profile(member), ids...)
	cleanups := make([]*redis.IntCmd, len(ids))
	for i, sid := range ids {
		cleanups[i] = pipe.Exists(ctx, k.job(listDeleteJobPrefix+sid))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var drop []any
	for i, sid := range ids {
		// ZMSCORE reads a missing member as 0; status ids never are.
		if theirs.Val()[i] != 0 || cleanups[i].Val() == 1 {
			drop = append(drop, sid)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	return s.rdb.ZRem(ctx, timeline, drop...).Err()
}

// settleListIn brings member's list:in in line with their membership of
// list id: the list at the membership's score while it lasts, else not at
// all. score, when not 0, is that of a membership just made or found, and
// is written first.
//
// list:in is in the member's slot and the membership in the list's, so
// this is reads and writes in turn, each safe whatever runs beside it.
// Only a score read from the list's members is ever written to list:in. A
// score is taken out of list:in only when it was read there before the
// membership was read and found ended (or the list gone or being deleted),
// and by list_leave.lua, only if list:in still holds that score. An ended
// membership never comes back: a new one takes a new score. So the entry of
// a membership that lasts is never taken out; one written over by an older
// score (two adds and a removal racing) is seen on the next read and
// written again.
func (s *Service) settleListIn(ctx context.Context, id, member, score int64) error {
	in := s.keys.listsIn(member)
	for range maxSettleRounds {
		if score > 0 {
			if err := s.rdb.ZAdd(ctx, in, redis.Z{Score: float64(score), Member: id}).Err(); err != nil {
				return err
			}
		}
		held, err := s.rdb.ZScore(ctx, in, itoa(id)).Result()
		if errors.Is(err, redis.Nil) {
			held = 0
		} else if err != nil {
			return err
		}
		current, err := s.membership(ctx, id, member)
		if err != nil {
			return err
		}
		switch {
		case current == int64(held):
			return nil
		case current == 0:
			return listLeaveScript.Run(ctx, s.rdb, []string{in}, id, int64(held)).Err()
		}
		score = current
	}
	// Still racing: list:in holds the list at some score, which routes
	// statuses as well as any; passes check the membership after writing.
	return nil
}

// membership returns the score of member's membership of list id, or 0
// when they are no member, or the list is gone or being deleted.
func (s *Service) membership(ctx context.Context, id, member int64) (int64, error) {
	k := s.keys
	pipe := s.rdb.Pipeline()
	list := pipe.HMGet(ctx, k.list(id), "id", "deleted")
	score := pipe.ZScore(ctx, k.listMembers(id), itoa(member))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	if f := list.Val(); f[0] == nil || f[1] != nil || score.Err() != nil {
		return 0, nil
	}
	return int64(score.Val()), nil
}
