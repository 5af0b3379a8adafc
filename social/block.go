package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed relation_add.lua
	relationAddSource string
	relationAddScript = newScript(relationAddSource)

	//go:embed relation_told.lua
	relationToldSource string
	relationToldScript = newScript(relationToldSource)

	//go:embed notes_drop_from.lua
	notesDropFromSource string
	notesDropFromScript = newScript(notesDropFromSource)
)

// Caps of a user's sets of accounts.
const (
	MaxBlocks = 10_000 // accounts one user may block
	MaxMutes  = 10_000 // accounts one user may mute
)

// A block of other by uid is written in this order, every step idempotent,
// and Block runs every step every time, so a retry finishes a block cut
// short:
//
//  1. blocks:{uid} gains other (refused past MaxBlocks): where the block
//     stands, what GET /blocks lists.
//  2. blocked_by:{other} gains uid: the reverse, in other's slot.
//  3. uid unfollows other and other unfollows uid, each as an Unfollow
//     does it (lists, the followee's side, counts, the friend mirror, the
//     walk of the home timeline, friend_removed when a friendship ends).
//  4. uid's notifications from other go, and other's from uid
//     (notes_drop_from.lua, in each one's slot), so that neither unread
//     count holds any the pages hide; the store script refuses new ones
//     either way.
//
// A follow's first step (follow_follower.lua) refuses, in the follower's
// slot, a followee the follower blocks (step 1 of uid -> other) or is
// blocked by (step 2 of other -> uid). A follow whose first step ran before
// those was written before step 3, which takes it out again; one that runs
// after is refused. So once Block returns neither follows the other, and no
// follow can be written again while the block stands. A racing follow
// that step 3 overtook between its two sides no longer stands at its last
// read: it is refused (ErrBlocked) and announces no friendship. A
// friendship such a racing follow made and still held at its last read is
// announced by it (Befriended) and then checked again (see Follow), so the
// last frame each stream gets about the other is the friend_removed.
//
// Presence is shown to friends only (presence frames, online friends, the
// online and last_seen of user views), so ending the follows hides it both
// ways on every instance. Reads hide each other's statuses at read time
// (visibility.go), and the streams of both are told (announceRelation:
// hidden_changed to both, and to the blocker's a relation frame after it)
// to read again whose live statuses they leave out: only by a call that
// changed step 1 or 2 (or may have: a write whose answer was lost), even
// when a later step failed, as those sets are all a stream reads again. A
// retry announces what it changes itself, so a block cut short is
// announced by the call that wrote it or by its retry, and a block or an
// unblock that changes nothing, which any account may send about anyone,
// makes no stream read its hidden authors again. (Lost only when the
// process dies between the write and the announcement, as every courtesy
// frame may be.)
// Unblock takes steps 1 and 2 back in that order and restores nothing. A
// block and an unblock of the same pair racing each other leave the two
// sides agreeing (syncBlockedBy).

// Block makes uid block the user with login (idempotent): see above.
func (s *Service) Block(ctx context.Context, uid int64, login string) error {
	other, err := s.relationTarget(ctx, uid, login)
	if err != nil {
		return err
	}
	// From the first write on, the block runs though the client goes: cut
	// short as either account's deletion begins, it would find no retry
	// (see settleGone); and once written, the streams are told.
	ctx, cancel := detached(ctx)
	defer cancel()
	changed, err := s.block(ctx, uid, other)
	if changed {
		s.announceRelation(ctx, uid, other, protocol.RelationBlock)
	}
	if err != nil {
		return fmt.Errorf("block %d->%d: %w", uid, other, err)
	}
	return nil
}

// block runs the steps of uid's block of other (see above), and says
// whether it changed, or may have changed, either side (steps 1 and 2),
// also when a later step failed.
func (s *Service) block(ctx context.Context, uid, other int64) (changed bool, err error) {
	k := s.keys
	now, err := s.now(ctx)
	if err != nil {
		return false, err
	}
	ms := now.UnixMilli()
	added, err := s.addRelation(ctx, k.blocks(uid), other, ms, MaxBlocks, ErrTooManyBlocks)
	if err != nil {
		return mayHaveWritten(err, ErrTooManyBlocks), err
	}
	mirrored, err := s.mirrorBlock(ctx, uid, other)
	changed = added || mirrored
	if err != nil {
		return changed, err
	}
	// Written on both sides, and looked at: the deletion of either, begun
	// since the block's first read, walks their blocks after its mark, and
	// may have passed this one. The block is then taken out again here,
	// and its follows are the deletion's to undo.
	if err := s.settleGone(ctx, uid, other, func(ctx context.Context) error { return s.dropBlock(ctx, uid, other) }); err != nil {
		return changed, err
	}
	for _, p := range [2][2]int64{{uid, other}, {other, uid}} {
		ended, err := s.unfollow(ctx, p[0], p[1])
		if err != nil {
			return changed, err
		}
		if ended {
			// The block stands; telling the ex-friends' streams is a
			// courtesy that may fail, as for an unfollow.
			if err := s.announceFriendshipEnded(ctx, p[0], p[1]); err != nil {
				s.opts.Logger.WarnContext(ctx, "could not announce the end of a friendship", "uid", p[0], "friend", p[1], "err", err)
			}
		}
	}
	if err := s.dropNotesFrom(ctx, uid, other, true); err != nil {
		return changed, err
	}
	// Quietly: nobody is told that they are blocked.
	return changed, s.dropNotesFrom(ctx, other, uid, false)
}

// Unblock takes back uid's block of the user with login (idempotent). It
// restores no follow and nothing a block took out.
func (s *Service) Unblock(ctx context.Context, uid int64, login string) error {
	other, err := s.relationTarget(ctx, uid, login)
	if err != nil {
		return err
	}
	// From the first write on, the unblock runs though the client goes:
	// cut short, the blocked one's side would hold a block the blocker's
	// list no longer shows. Both streams are told only when a side changed
	// (or may have), as for a block.
	ctx, cancel := detached(ctx)
	defer cancel()
	removed, err := s.rdb.ZRem(ctx, s.keys.blocks(uid), itoa(other)).Result()
	changed := err != nil || removed > 0
	if err == nil {
		var mirrored bool
		mirrored, err = s.mirrorBlock(ctx, uid, other)
		changed = changed || mirrored
	}
	if changed {
		s.announceRelation(ctx, uid, other, protocol.RelationBlock)
	}
	if err != nil {
		return fmt.Errorf("unblock %d->%d: %w", uid, other, err)
	}
	return nil
}

// mayHaveWritten says whether a write that failed with err may have
// written all the same: unless the script refused it (refused), its
// answer may have been lost after Redis ran it.
func mayHaveWritten(err, refused error) bool {
	return !errors.Is(err, refused)
}

// mirrorBlock is syncBlockedBy, and says whether it changed other's side
// (uid joined or left it), or may have (it failed). Whether other's side
// held uid is read with the first read of uid's side, in the same round
// trip.
func (s *Service) mirrorBlock(ctx context.Context, uid, other int64) (changed bool, err error) {
	k := s.keys
	var held *redis.FloatCmd
	var blocks float64
	err = s.mirrorMember(ctx, k.blockedBy(other), itoa(uid), func() (float64, error) {
		pipe := s.rdb.Pipeline()
		mine := pipe.ZScore(ctx, k.blocks(uid), itoa(other)) // a block's score is a time, never 0
		if held == nil {
			held = pipe.ZScore(ctx, k.blockedBy(other), itoa(uid))
		}
		_, _ = pipe.Exec(ctx) // each answer's error is read below
		for _, c := range []*redis.FloatCmd{mine, held} {
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return 0, err
			}
		}
		blocks = mine.Val()
		return blocks, nil
	}, s.betweenBlockSides)
	if err != nil {
		return true, fmt.Errorf("the block of %d by %d: %w", other, uid, err)
	}
	// The mirror now agrees with the last read of uid's side.
	return (held.Err() == nil) != (blocks != 0), nil
}

// syncBlockedBy makes other's blocked_by agree about uid with uid's
// blocks, which Block and Unblock write first (mirrorMember): a block and
// an unblock of the same pair racing each other leave the two sides
// agreeing, never a block that other's side does not see (a follow, a
// reply, a like between them allowed again) nor one only other's side
// holds.
func (s *Service) syncBlockedBy(ctx context.Context, uid, other int64) error {
	_, err := s.mirrorBlock(ctx, uid, other)
	return err
}

// Mute makes uid mute the user with login (idempotent): their statuses and
// notifications are hidden from uid (visibility.go). Nothing else changes
// and they are not told.
func (s *Service) Mute(ctx context.Context, uid int64, login string) error {
	other, err := s.relationTarget(ctx, uid, login)
	if err != nil {
		return err
	}
	if s.betweenRelationReads != nil {
		s.betweenRelationReads()
	}
	now, err := s.now(ctx)
	if err != nil {
		return fmt.Errorf("mute %d->%d: %w", uid, other, err)
	}
	// From the first write on, the mute runs though the client goes: cut
	// short, the notifications from other stored before would stay, the
	// unread count counting them, and no stream would be told. uid's
	// streams are told only when the mute was written (or may have been),
	// also when a later step failed, as for a block.
	ctx, cancel := detached(ctx)
	defer cancel()
	changed, err := s.mute(ctx, uid, other, now.UnixMilli())
	if changed {
		s.announceRelation(ctx, uid, other, protocol.RelationMute)
	}
	if err != nil {
		return fmt.Errorf("mute %d->%d: %w", uid, other, err)
	}
	return nil
}

// mute writes uid's mute of other at ms and drops other's notifications
// to uid, and says whether it added the mute, or may have (a write whose
// answer was lost), also when a later step failed.
func (s *Service) mute(ctx context.Context, uid, other, ms int64) (changed bool, err error) {
	mute := func() (bool, error) {
		return s.addRelation(ctx, s.keys.mutes(uid), other, ms, MaxMutes, ErrTooManyMutes)
	}
	changed, err = mute()
	if errors.Is(err, ErrTooManyMutes) {
		// Mutes of accounts deleted since stay (no reverse index finds
		// them) and count: the oldest are looked at, and the places of the
		// gone given back, before the cap is said to be reached.
		var freed int
		if freed, err = s.dropGoneMutes(ctx, uid); err == nil {
			err = ErrTooManyMutes
			if freed > 0 {
				changed, err = mute()
			}
		}
	}
	if err != nil {
		return changed || mayHaveWritten(err, ErrTooManyMutes), err
	}
	// A muter whose deletion began since: their mutes may be deleted
	// already, and are not written again.
	if err := s.settleGone(ctx, uid, other, func(ctx context.Context) error {
		return s.rdb.ZRem(ctx, s.keys.mutes(uid), itoa(other)).Err()
	}); err != nil {
		return changed, err
	}
	// The notifications from other stored before go, as a block's do: the
	// pages would hide them, and the unread count would still count them.
	// None is stored while the mute stands; unmuting restores none.
	return changed, s.dropNotesFrom(ctx, uid, other, true)
}

// goneMutesLooked is how many of a user's oldest mutes a mute at the cap
// looks at for accounts gone.
const goneMutesLooked = 500

// dropGoneMutes takes out of uid's mutes those of the oldest
// goneMutesLooked whose accounts are gone or being deleted, and returns
// how many it took out: one round trip to read them, one to take them out.
func (s *Service) dropGoneMutes(ctx context.Context, uid int64) (int, error) {
	k := s.keys
	ids, err := s.rdb.ZRange(ctx, k.mutes(uid), 0, goneMutesLooked-1).Result()
	if err != nil {
		return 0, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		n, _ := strconv.ParseInt(id, 10, 64) // a member not an id is no account
		cmds[i] = pipe.HMGet(ctx, k.user(n), goneFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	var gone []any
	for i, c := range cmds {
		if accountGone(c.Val()) {
			gone = append(gone, ids[i])
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	return len(gone), s.rdb.ZRem(ctx, k.mutes(uid), gone...).Err()
}

// notesRemovedHead and notesRemovedTail are a notifications_removed frame
// around its list of ids, for notes_drop_from.lua to fill.
var notesRemovedHead, notesRemovedTail = func() (string, string) {
	frame, _ := json.Marshal(protocol.NotificationsRemoved{Type: protocol.TypeNotificationsRemoved, IDs: []int64{}})
	head, tail, _ := strings.Cut(string(frame), "[]")
	return head + "[", "]" + tail
}()

// dropNotesFrom takes out of uid's notifications every one from other,
// and, with tell, tells uid's streams which went (notifications_removed),
// in one frame, when any did: uid blocked or muted other. The one blocked
// is not told (their bell keeps the count until its next read).
func (s *Service) dropNotesFrom(ctx context.Context, uid, other int64, tell bool) error {
	k := s.keys
	command, channel := s.bus.Command(), s.bus.UserChannel(uid)
	if !tell {
		command, channel = "", ""
	}
	return notesDropFromScript.Run(ctx, s.rdb, []string{k.notes(uid), k.noteData(uid), k.noteCauses(uid), k.user(uid)},
		other, command, channel, notesRemovedHead, notesRemovedTail).Err()
}

// Unmute takes back uid's mute of the user with login (idempotent).
func (s *Service) Unmute(ctx context.Context, uid int64, login string) error {
	other, err := s.relationTarget(ctx, uid, login)
	if err != nil {
		return err
	}
	// Detached, so that the streams of a mute taken back are told though
	// the client goes; told only when it was taken back (or may have
	// been: an answer lost).
	ctx, cancel := detached(ctx)
	defer cancel()
	removed, err := s.rdb.ZRem(ctx, s.keys.mutes(uid), itoa(other)).Result()
	if err != nil || removed > 0 {
		s.announceRelation(ctx, uid, other, protocol.RelationMute)
	}
	if err != nil {
		return fmt.Errorf("unmute %d->%d: %w", uid, other, err)
	}
	return nil
}

// settleGone looks, after uid's relation to other was written, at whether
// either account is gone or being deleted (no id in its hash, or the
// deleted mark), and then runs undo and returns errAccountGone (uid) or
// ErrUserNotFound (other).
//
// It runs detached from the request: once either is marked, no retry
// comes (the session ended, or the login leads to no one), and a look cut
// short by the client would leave the relation standing.
func (s *Service) settleGone(ctx context.Context, uid, other int64, undo func(context.Context) error) error {
	ctx, cancel := detached(ctx)
	defer cancel()
	pipe := s.rdb.Pipeline()
	mine := pipe.HMGet(ctx, s.keys.user(uid), goneFields...)
	theirs := pipe.HMGet(ctx, s.keys.user(other), goneFields...)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var why error
	switch {
	case accountGone(mine.Val()):
		why = errAccountGone
	case accountGone(theirs.Val()):
		why = ErrUserNotFound
	default:
		return nil
	}
	if err := undo(ctx); err != nil {
		return err
	}
	return why
}

// Blocks lists whom uid blocks, newest block first.
func (s *Service) Blocks(ctx context.Context, uid int64, p Page) ([]User, error) {
	return s.userList(ctx, s.keys.blocks(uid), p)
}

// Mutes lists whom uid mutes, newest mute first.
func (s *Service) Mutes(ctx context.Context, uid int64, p Page) ([]User, error) {
	return s.userList(ctx, s.keys.mutes(uid), p)
}

// HiddenAuthors returns the authors whose statuses uid may not see
// (visibility.go): whom uid blocks and mutes (at most MaxBlocks and
// MaxMutes) and the newest MaxBlocks of those who block uid. A stream holds
// them from its opening (StreamOpening.Hidden), to leave their statuses and
// reposts of them out of its live frames, and reads them again at each
// change (hidden_changed: announceRelation).
func (s *Service) HiddenAuthors(ctx context.Context, uid int64) ([]int64, error) {
	pipe := s.rdb.Pipeline()
	read := s.queueHiddenAuthors(ctx, pipe, uid)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("hidden from %d: %w", uid, err)
	}
	return read(), nil
}

// HiddenAuthorsOf is HiddenAuthors of each of uids, in two round trips
// whatever their number: whether each blocks, mutes or is blocked by
// anyone (one EXISTS each; most users are none of these), then the
// authors hidden from those who are.
func (s *Service) HiddenAuthorsOf(ctx context.Context, uids []int64) ([][]int64, error) {
	k := s.keys
	pipe := s.rdb.Pipeline()
	hides := make([]*redis.IntCmd, len(uids))
	for i, uid := range uids {
		hides[i] = pipe.Exists(ctx, k.blocks(uid), k.mutes(uid), k.blockedBy(uid))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("hidden from %d users: %w", len(uids), err)
	}
	out := make([][]int64, len(uids))
	reads := make([]func() []int64, len(uids))
	pipe = s.rdb.Pipeline()
	for i, uid := range uids {
		if hides[i].Val() > 0 {
			reads[i] = s.queueHiddenAuthors(ctx, pipe, uid)
		}
	}
	if pipe.Len() == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("hidden from %d users: %w", len(uids), err)
	}
	for i, read := range reads {
		if read != nil {
			out[i] = read()
		}
	}
	return out, nil
}

// queueHiddenAuthors queues on pipe HiddenAuthors' reads (three, in uid's
// slot), and returns what reads their answers once the pipeline ran.
func (s *Service) queueHiddenAuthors(ctx context.Context, pipe redis.Pipeliner, uid int64) func() []int64 {
	k := s.keys
	blocks := pipe.ZRange(ctx, k.blocks(uid), 0, -1)
	mutes := pipe.ZRange(ctx, k.mutes(uid), 0, -1)
	by := pipe.ZRevRange(ctx, k.blockedBy(uid), 0, MaxBlocks-1)
	return func() []int64 {
		var out []int64
		for _, c := range []*redis.StringSliceCmd{blocks, mutes, by} {
			out = append(out, parseIDs(c.Val())...)
		}
		return out
	}
}

// announceRelation tells uid's streams, on every instance, that uid's
// block or mute (kind, protocol.RelationBlock or RelationMute) of other
// changed: hidden_changed, for the instances to read whom uid hides
// again, then a relation frame of the state that stands as it is told
// (relation_told.lua), for the client; for a block, other's streams get
// hidden_changed alone, which says nothing of why: nobody is told that
// they are blocked or muted. The change stands; telling is a courtesy
// that may fail: a stream opened later reads it as it opens, and one open
// now when its channel's subscription is made again; until then it may
// still show the author's live statuses.
func (s *Service) announceRelation(ctx context.Context, uid, other int64, kind string) {
	if err := s.tellRelation(ctx, uid, other, kind); err != nil {
		s.opts.Logger.WarnContext(ctx, "could not announce a block or mute", "uid", uid, "other", other, "kind", kind, "err", err)
	}
}

func (s *Service) tellRelation(ctx context.Context, uid, other int64, kind string) error {
	hidden, err := json.Marshal(protocol.Internal{Type: protocol.TypeHiddenChanged})
	if err != nil {
		return err
	}
	// Each side told whether or not the other could be: a failure on the
	// other's channel must not leave uid's streams showing whom uid hides.
	var otherErr error
	if kind == protocol.RelationBlock {
		otherErr = s.bus.Publish(ctx, s.bus.UserChannel(other), hidden)
	}
	// The frame names other as a user is shown. One that cannot be read
	// (an account gone since, a failed read) leaves uid's streams
	// hidden_changed alone: they read whom uid hides again all the same.
	users, readErr := s.usersByIDAll(ctx, []int64{other})
	if readErr != nil || len(users) != 1 {
		return errors.Join(otherErr, readErr, s.bus.Publish(ctx, s.bus.UserChannel(uid), hidden))
	}
	frame := protocol.Relation{Type: protocol.TypeRelation, Kind: kind, User: users[0].Ref(), On: true}
	on, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	frame.On = false
	off, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	key := s.keys.mutes(uid)
	if kind == protocol.RelationBlock {
		key = s.keys.blocks(uid)
	}
	return errors.Join(otherErr, relationToldScript.Run(ctx, s.rdb, []string{key}, other, s.bus.Command(), s.bus.UserChannel(uid), hidden, on, off).Err())
}

// relationTarget resolves the login uid blocks or mutes: not uid, and a user.
func (s *Service) relationTarget(ctx context.Context, uid int64, login string) (int64, error) {
	other, err := s.UID(ctx, login)
	if err != nil {
		return 0, err
	}
	if other == uid {
		return 0, ErrSelfBlock
	}
	return other, nil
}

// addRelation adds other to the set key (relation_add.lua), answering full
// when the set holds most already, and says whether it added other (false
// when other was there).
func (s *Service) addRelation(ctx context.Context, key string, other, ms int64, most int, full error) (added bool, err error) {
	res, err := relationAddScript.Run(ctx, s.rdb, []string{key}, other, ms, most).Int()
	if err != nil {
		return false, err
	}
	if res < 0 {
		return false, full
	}
	return res == 1, nil
}

// refuseHidden answers ErrBlocked when uid blocks other or other blocks
// uid, and ErrStatusNotFound when uid mutes other, in one round trip to
// uid's slot: a like or a repost of a status hidden from uid is refused as
// reading it is, before anything is written.
func (s *Service) refuseHidden(ctx context.Context, uid, other int64) error {
	pipe := s.rdb.Pipeline()
	blocked := s.queueBlockedEither(ctx, pipe, uid, other)
	muted := pipe.ZScore(ctx, s.keys.mutes(uid), itoa(other))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	switch {
	case blocked():
		return ErrBlocked
	case muted.Err() == nil:
		return ErrStatusNotFound
	}
	return nil
}

// queueBlockedEither queues on pipe the reads of whether uid blocks other
// or other blocks uid (in uid's slot), and returns what reads their answer
// once it ran.
func (s *Service) queueBlockedEither(ctx context.Context, pipe redis.Pipeliner, uid, other int64) func() bool {
	blocks := pipe.ZScore(ctx, s.keys.blocks(uid), itoa(other))
	by := pipe.ZScore(ctx, s.keys.blockedBy(uid), itoa(other))
	return func() bool { return blocks.Err() == nil || by.Err() == nil }
}
