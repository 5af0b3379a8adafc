package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// A repost is a timeline entry of its own: a status hash with its own id
// from the status sequence, no message, and "repost_of" naming the
// original. It is written and fanned out as a post is (queuePost): its jobs
// are queued first, then it is written where the reposter owns it (not the
// global timeline), then the jobs are marked ready and run. What makes it a
// repost is the claim, reposts:<original> uid -> entry id, taken with the
// write: one repost per user and status, however many requests race.

var (
	//go:embed repost_claim.lua
	repostClaimSource string
	repostClaimScript = newScript(repostClaimSource)

	//go:embed repost_unclaim.lua
	repostUnclaimSource string
	repostUnclaimScript = newScript(repostUnclaimSource)
)

// Repost reposts status id (a repost entry: its original) as uid, and
// returns the original. Reposting what uid reposted already changes
// nothing. The entry is in uid's timelines when Repost returns, and
// reaches uid's followers and the lists that hold uid as a post does; the
// original's author is told (the reposted notification), unless uid is the
// author.
func (s *Service) Repost(ctx context.Context, uid, id int64) (Status, error) {
	orig, err := s.original(ctx, id)
	if err != nil {
		return Status{}, fmt.Errorf("repost %d: %w", id, err)
	}
	if err := s.refuseHidden(ctx, uid, orig.UID); err != nil {
		return Status{}, fmt.Errorf("repost %d: %w", id, err)
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	author := pipe.HMGet(ctx, k.user(uid), "login", "name")
	claim := pipe.ZScore(ctx, k.reposts(orig.ID), itoa(uid))
	inLists := pipe.ZCard(ctx, k.listsIn(uid))
	pulled := pipe.ZScore(ctx, k.pulledAuthors(), itoa(uid))
	replies, likes := pipe.ZCard(ctx, k.replies(orig.ID)), pipe.ZCard(ctx, k.likes(orig.ID))
	reposts := pipe.ZCard(ctx, k.reposts(orig.ID))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Status{}, fmt.Errorf("repost %d: %w", id, err)
	}
	if claim.Err() == nil {
		return orig, nil
	}
	login, _ := author.Val()[0].(string)
	name, _ := author.Val()[1].(string)
	if login == "" {
		return Status{}, ErrUserNotFound
	}
	pipe = s.rdb.Pipeline()
	eid := pipe.Incr(ctx, k.statusSeq())
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return Status{}, fmt.Errorf("repost %d: %w", id, err)
	}
	// The entry's frame shows the original's counts as they stand, this
	// repost among them: writeRepost's claim counts it, and a claim lost
	// sends no frame.
	shown := orig
	shown.Replies, shown.Likes, shown.Reposts = replies.Val(), likes.Val(), reposts.Val()+1
	entry := Status{
		ID: eid.Val(), UID: uid, Login: login, Name: name, Mentions: []protocol.Mention{},
		Posted: now.Val().UTC().Truncate(time.Millisecond), RepostOf: &shown,
	}
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: entry})
	if err != nil {
		return Status{}, fmt.Errorf("repost %d: %w", id, err)
	}
	// As queuePost: the jobs first, not ready, so that a worker finishes
	// the repost (its redo is writeRepost) should this instance die.
	post := job{kind: jobPost, uid: uid, sid: entry.ID, payload: string(payload)}
	list := listPostJob(entry, payload)
	homeJob, listJob := k.job(post.id()), ""
	pipe = s.rdb.Pipeline()
	s.queueJob(ctx, pipe, post, inputsPending)
	if inLists.Val() > 0 && pulled.Err() != nil {
		listJob = k.job(list.id())
		s.queueJob(ctx, pipe, list, inputsPending)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return Status{}, fmt.Errorf("repost %d: %w", id, err)
	}
	if s.afterQueue != nil {
		s.afterQueue()
	}
	written := s.writeRepost(ctx, entry, payload)
	if written != nil && !takenBack(written) {
		return Status{}, fmt.Errorf("repost %d: %w", id, written)
	}
	// A repost that lost its claim, or was taken back, left no entry: its
	// jobs find none and end.
	if listJob, err = s.markRepostReady(ctx, list, homeJob, listJob, pulled.Err() == nil); err != nil {
		return Status{}, fmt.Errorf("repost %d: %w", id, err)
	}
	s.inlinePass(ctx, homeJob)
	if listJob != "" {
		s.inlinePass(ctx, listJob)
	}
	if written != nil {
		return Status{}, fmt.Errorf("repost %d: %w", id, written)
	}
	return orig, nil
}

// markRepostReady marks a repost's jobs ready (homeJob, and listJob when
// not ""), and returns the key of its list job, "" for none. For a
// reposter no list held at the repost's read, who is not pulled (a pulled
// author's entries reach no list, see ListTimeline), a list that took them
// in since may have backfilled before the entry was written: list:in is
// read again, and list (the list job) queued then (markReadyForLists).
func (s *Service) markRepostReady(ctx context.Context, list job, homeJob, listJob string, pulled bool) (string, error) {
	if pulled {
		return listJob, s.markReady(ctx, homeJob, listJob)
	}
	return s.markReadyForLists(ctx, list, listJob, homeJob)
}

// writeRepost writes repost entry st where its reposter owns it, as
// writePost does a post (not into the global timeline), and tells the
// original's author. First it claims the reposter's one repost of the
// original for st; a claim that names another entry (a repost that raced
// this one) leaves st unwritten. After writing, it looks at the original
// and the claim again, and takes st back if either went meanwhile: the
// original's deletion pages its reposts after the original is gone, and
// an undo takes the claim after the entry, so either they see st or this
// sees them; at a block between the reposter and the original's author,
// in the reposter's slot, where the block writes its side before it
// returns: a block that raced the repost is seen here, st taken back and
// ErrBlocked returned, or came after the write (a repost made before a
// block stands); and at the reposter, whose suspension or account deletion
// since the repost checked them it follows (settleAuthor: a deleted
// reposter's entry is taken back, and errAccountGone returned). Idempotent:
// a post job whose maker died runs it again.
func (s *Service) writeRepost(ctx context.Context, st Status, payload []byte) error {
	k := s.keys
	orig := st.RepostOf
	won, err := repostClaimScript.Run(ctx, s.rdb, []string{k.reposts(orig.ID)}, st.UID, st.ID).Int()
	if err != nil {
		return err
	}
	if won == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	pipe.HSet(ctx, k.status(st.ID), "id", st.ID, "uid", st.UID, "login", st.Login,
		"name", st.Name, "message", "", "posted", st.Posted.UnixMilli(), "repost_of", orig.ID)
	postAuthorScript.Eval(ctx, pipe, []string{k.user(st.UID), k.profile(st.UID), k.home(st.UID)},
		st.ID, s.opts.HomeSize, s.bus.Command(), s.bus.UserChannel(st.UID), payload)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	pipe = s.rdb.Pipeline()
	exists := pipe.Exists(ctx, k.status(orig.ID))
	claim := pipe.ZScore(ctx, k.reposts(orig.ID), itoa(st.UID))
	look := s.queueAuthorLook(ctx, pipe, st.UID)
	blocked := s.queueBlockedEither(ctx, pipe, st.UID, orig.UID)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if exists.Val() == 0 || claim.Err() != nil || int64(claim.Val()) != st.ID {
		return s.takeBackRepost(ctx, st)
	}
	settle, cancel := detached(ctx) // as a post's last round trip
	defer cancel()
	if blocked() {
		// Nothing told yet: the notification comes after this look.
		if err := s.takeBackRepost(settle, st); err != nil {
			return err
		}
		return ErrBlocked
	}
	// The reposter suspended or deleted since the repost checked them.
	// A reposter deleted: taken back, and errAccountGone returned; its jobs
	// find no entry and end.
	if err := s.settleAuthor(settle, st.UID, st.ID, look.Val(), func() error { return s.takeBackRepost(settle, st) }); err != nil {
		return err
	}
	n := note{to: orig.UID, from: st.UID, kind: protocol.NotifyReposted, sid: orig.ID,
		at: st.Posted, fromUser: protocol.User{ID: st.UID, Login: st.Login, Name: st.Name}, status: orig}
	return s.notifyWhile(settle, n, k.reposts(orig.ID), itoa(st.UID))
}

// takenBack reports whether err, writeRepost's, says its entry was taken
// back (its reposter deleted, or a block between the two seen): its jobs
// find no entry and end.
func takenBack(err error) bool {
	return errors.Is(err, errAccountGone) || errors.Is(err, ErrBlocked)
}

// takeBackRepost undoes writeRepost's writes of st, whose original or
// claim went while it wrote, or which a block raced: the entry out of the
// reposter's timelines, and its claim, if the claim still names it. No job
// pushed it yet (its jobs wait for writeRepost), so none has to take it
// out of other timelines.
func (s *Service) takeBackRepost(ctx context.Context, st Status) error {
	payload, err := json.Marshal(protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: st.ID})
	if err != nil {
		return err
	}
	if err := s.writeDelete(ctx, st.UID, st.ID, payload); err != nil {
		return err
	}
	return repostUnclaimScript.Run(ctx, s.rdb, []string{s.keys.reposts(st.RepostOf.ID)}, st.UID, st.ID).Err()
}

// rewritePost does again the writes of a post job's maker, from the frame
// it queued: writeRepost for a repost entry, writePost for a post (for a
// reply, with its maker's look at a block after them).
func (s *Service) rewritePost(ctx context.Context, st Status, payload []byte) error {
	if st.RepostOf != nil {
		if err := s.writeRepost(ctx, st, payload); err != nil && !takenBack(err) {
			return err
		}
		return nil // written; or taken back, and the job finds no entry and ends
	}
	if err := s.redoPost(ctx, st, payload); err != nil {
		return err
	}
	// A reply looks at a block after its writes, as its maker would have
	// in its last round trip (queueReplyBlocked): one that raced it has the
	// reply deleted as its maker would (takeBackReply), which marks the
	// job, so that the redo ends it (rewriteUnlessDeleted); the deletion's
	// jobs take it out of the homes a maker that died pushed it to.
	pipe := s.rdb.Pipeline()
	blocked := s.queueReplyBlocked(ctx, pipe, st)
	if pipe.Len() == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if !blocked() {
		return nil
	}
	if err := s.takeBackReply(ctx, st); !errors.Is(err, ErrBlocked) {
		return err
	}
	return nil
}

// Unrepost takes uid's repost of status id (a repost entry: its original)
// back, and returns the original: the entry is deleted as DeleteStatus
// deletes a status (its cleanup job takes the claim and the notification
// back), so it leaves every timeline it reached. Undoing what uid did not
// repost changes nothing.
func (s *Service) Unrepost(ctx context.Context, uid, id int64) (Status, error) {
	orig, err := s.original(ctx, id)
	if err != nil {
		return Status{}, fmt.Errorf("undo repost %d: %w", id, err)
	}
	eid, err := s.rdb.ZScore(ctx, s.keys.reposts(orig.ID), itoa(uid)).Result()
	if errors.Is(err, redis.Nil) {
		return orig, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("undo repost %d: %w", id, err)
	}
	// An entry not written yet is its maker's (or, should it die, its
	// job's) to write: the claim stands, and a later undo finds the entry.
	if err := s.DeleteStatus(ctx, uid, int64(eid)); err != nil && !errors.Is(err, ErrStatusNotFound) {
		return Status{}, fmt.Errorf("undo repost %d: %w", id, err)
	}
	return orig, nil
}

// repostOf is the id of the original st reposts, 0 for a post.
func repostOf(st Status) int64 {
	if st.RepostOf == nil {
		return 0
	}
	return st.RepostOf.ID
}

// Originals fills in the original of each repost entry of sts, in one
// round trip when there is one (none otherwise), leaving out entries whose
// original is gone, as Decorate does, without counts: what a stream's
// catch-up sends, as the live frames carry it.
func (s *Service) Originals(ctx context.Context, sts []Status) ([]Status, error) {
	reads := make([]*redis.SliceCmd, len(sts))
	pipe := s.rdb.Pipeline()
	for i, st := range sts {
		if st.RepostOf != nil {
			reads[i] = pipe.HMGet(ctx, s.keys.status(st.RepostOf.ID), statusFields...)
		}
	}
	if pipe.Len() == 0 {
		return sts, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("originals of reposts: %w", err)
	}
	out := make([]Status, 0, len(sts))
	for i, st := range sts {
		if reads[i] != nil {
			orig, ok := parseStatus(reads[i].Val())
			if !ok || orig.RepostOf != nil {
				continue
			}
			st.RepostOf = &orig
		}
		out = append(out, st)
	}
	return out, nil
}
