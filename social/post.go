package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// A post is made in three round trips to Redis on one Redis, its frames
// leaving in the second, and in four on a cluster, its frames leaving in
// the third, however many of the author's followers the first page holds
// (FanoutPassSize):
//
//  1. the reads: the session (when the caller knows the user only by it,
//     and the instance has seen it before; else it is read first, one
//     round trip more), and then the author's activity noted (PostAs,
//     when this instance has not lately, see noteActivity; one back after
//     InactiveAfter away has their home rebuilt once this round trip is
//     answered, more round trips, rarely; on a session checked here, by a
//     note that checks it too, which a session that ended makes write
//     nothing, or, on a cluster, where it cannot, in a round trip of its
//     own once the session is known to be there),
//     the caller's rate limit (PostRequest.Admit), the author, whether lists
//     hold them or their statuses are pulled, a new status id and the time
//     (a post refused from here on leaves its id unused), the follow
//     sequence, the author's unfollow count and the first page of
//     followers (by its members alone, see firstPage: read again with its
//     scores, one round trip more, in the rare post whose page changed
//     between its reads);
//  2. the fan-out job queued, not ready, with no stream entry (so a worker
//     adopts it and finishes the post should this instance die from here
//     on, or Redis fail it: an error once the job's queuing is answered is
//     logged, and the post answered, see leftToJob), and the page's
//     activity (on one Redis none but, for a reply,
//     who follows the author answered: see followerActivity); on one
//     Redis, in the same transaction
//     (MULTI/EXEC: what Redis refuses as it queues, a write at maxmemory,
//     it refuses whole, so no status is written, nor frame sent, without
//     its job), the status written
//     where its author owns it (writePost), and the frames of the page's
//     followers, in one message that each instance hands to those of them
//     it holds streams of, whom they went to written in the job
//     (queueFrames), so that they leave Redis without waiting for the
//     pushes; and after the status, the followers counted up to the
//     page's end, and the author's unfollow count (lateFollowers);
//  3. on a cluster, the status written, the followers counted after it
//     as on one Redis in 2, and the pushes to the page, each frame with
//     its push (push.lua, see homePush);
//  4. (3 on one Redis) the pushes, on one Redis, with no frames (unless 2
//     left them to the pushes: the author's unfollow count moved since 1,
//     and the page's activity is then read first, one round trip more, as
//     it is when the frames call ran again after 2, see followerActivity);
//     the job finished, or moved past the page (or to its start again,
//     when the count says a follow raced the page: see lateFollowers),
//     marked ready and given its stream entry; the status and its
//     author looked at again: a deletion of the status that raced the
//     push is undone there, and a suspension or an account deletion since
//     the first is followed (settleAuthor; more round trips, rarely); for
//     an author no list held in 1, the lists that hold them read again: a
//     list that took them in since gets the list job (listsAgain; one
//     round trip more, rarely, and its first pass); on a
//     cluster, the activity of those of the page found away in 2 read
//     again, now that the status is written, and the status pushed to any
//     back since (pushReturned; two round trips more, rarely: an error
//     there is logged, and the post answered, its status written).
//
// A reply reads its parent in the first round trip, and checks blocks and
// takes its id in one more (so that a reply to no status takes none);
// mentions are resolved in one more, and an author some list
// holds gets the list job's first pass before the answer. A pulled author's
// post goes the way of a job's passes (postPass).

// PostRequest is a post (or a reply) by the holder of a session, whose
// session is checked in the post's first round trip (PostAs).
type PostRequest struct {
	Token   string // the session's token
	ReplyTo int64  // the status answered; 0: none
	Message string
	// Admit, when set, is queued on the post's first round trip: whether
	// the user may post now (a rate limit).
	Admit Admit
}

// PostAs posts as the user whose session req.Token is, after the session
// and req.Admit allow it: ErrUnauthenticated when the session is not
// there. An instance that has seen the session before checks it in the
// post's first round trip, as it reads the rest; one that has not reads it
// first (as Authenticate). Either notes the user's activity in the post's
// first round trip (but on a cluster, on a session checked there: see
// post). The session's user is the status's UID.
func (s *Service) PostAs(ctx context.Context, req PostRequest) (Status, error) {
	if !tokenShaped(req.Token) {
		return Status{}, ErrUnauthenticated
	}
	in := postInput{replyTo: req.ReplyTo, message: req.Message, admit: req.Admit, note: true}
	id := hashToken(req.Token)
	uid, known := s.sessionUsers.Get(id)
	_, err := ValidateMessage(req.Message)
	switch valid := err == nil && req.ReplyTo >= 0; {
	case valid && known:
		in.session = id
	case valid:
		// The post's reads are its user's: the session is read before.
		if uid, err = s.sessionUser(ctx, req.Token); err != nil {
			return Status{}, err
		}
	default:
		// A refusal of the session comes before any of the input's.
		if uid, err = s.Authenticate(ctx, req.Token); err != nil {
			return Status{}, err
		}
	}
	in.uid = uid
	return s.post(ctx, in)
}

// postInput is what post needs.
type postInput struct {
	uid     int64
	session string // the id of uid's session to check in the first round trip; "" when checked
	note    bool   // note uid's activity in the first round trip (see noteActivity)
	replyTo int64
	message string
	admit   Admit
}

// postReads are the answers of a post's first round trip.
type postReads struct {
	session   *redis.StringCmd
	seen      *redis.Cmd // the author's activity noted (queueNote); nil: noted lately
	admitted  func() error
	author    *redis.SliceCmd
	unfollows *redis.StringCmd
	inLists   *redis.IntCmd
	pulled    *redis.FloatCmd
	sid       *redis.IntCmd
	now       *redis.TimeCmd
	seq       *redis.StringCmd
	promoting *redis.IntCmd
	followers *redis.IntCmd
	page      *firstPage
	parent    *redis.SliceCmd
	mentions  *redis.SliceCmd
}

// post posts in.message by in.uid, as the comment above says.
func (s *Service) post(ctx context.Context, in postInput) (Status, error) {
	if in.replyTo < 0 {
		return Status{}, invalid("reply_to", "must be a status id")
	}
	message, err := ValidateMessage(in.message)
	if err != nil {
		return Status{}, err
	}
	uid := in.uid
	candidates := mentionCandidates(message)
	r, err := s.readPost(ctx, in, candidates)
	if err != nil {
		return Status{}, fmt.Errorf("post by %d: %w", uid, err)
	}
	if in.session != "" {
		if got, _ := sessionUID(r.session); got != uid {
			s.sessionUsers.Remove(in.session)
			return Status{}, ErrUnauthenticated
		}
		// On a cluster, noted only now: a note queued with the reads,
		// which cannot check the session there, would have written the
		// activity of a user whose session ended (or whose account was
		// deleted) before the session was found gone.
		if in.note && !s.checksSessionInNote() {
			if err := s.noteActivity(ctx, uid); err != nil {
				return Status{}, fmt.Errorf("post by %d: %w", uid, err)
			}
		}
	}
	if err := s.notedBy(ctx, uid, r.seen); err != nil {
		return Status{}, fmt.Errorf("post by %d: %w", uid, err)
	}
	if r.admitted != nil {
		if err := r.admitted(); err != nil {
			return Status{}, err
		}
	}
	login, _ := r.author.Val()[0].(string)
	name, _ := r.author.Val()[1].(string)
	if login == "" {
		return Status{}, ErrUserNotFound
	}
	if r.author.Val()[2] != nil {
		return Status{}, ErrSuspended
	}
	var answers parent
	if in.replyTo != 0 {
		if answers, err = s.parentOf(ctx, in.replyTo, r.parent.Val()); err != nil {
			return Status{}, err
		}
		// No reply between two of whom one blocks the other (block.go); its
		// id is taken once the parent is known to be there.
		pipe := s.rdb.Pipeline()
		blocked := s.queueBlockedEither(ctx, pipe, uid, answers.ref.UID)
		r.sid, r.now = pipe.Incr(ctx, s.keys.statusSeq()), pipe.Time(ctx)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return Status{}, fmt.Errorf("post by %d: %w", uid, err)
		}
		if blocked() {
			return Status{}, fmt.Errorf("post by %d: %w", uid, ErrBlocked)
		}
	}
	mentions := []protocol.Mention{}
	if r.mentions != nil {
		if mentions, err = s.mentionedUsers(ctx, r.mentions.Val()); err != nil {
			return Status{}, err
		}
	}
	st := Status{
		ID: r.sid.Val(), UID: uid, Login: login, Name: name, Message: message,
		Posted: r.now.Val().UTC().Truncate(time.Millisecond), Mentions: mentions,
	}
	if in.replyTo != 0 {
		st.ReplyTo = &answers.ref
	}
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: st})
	if err != nil {
		return Status{}, fmt.Errorf("post by %d: %w", uid, err)
	}
	toLists := r.inLists.Val() > 0 && r.pulled.Err() != nil
	if r.pulled.Err() == nil {
		// A pulled author's status reaches no home timeline: it goes the
		// way of a job's first pass, which writes it among the pulled.
		return st, s.postQueued(ctx, st, answers.at, payload, toLists)
	}
	if err := s.pushPost(ctx, st, answers.at, payload, toLists, r); err != nil {
		return Status{}, fmt.Errorf("post by %d: %w", uid, err)
	}
	return st, nil
}

// readPost makes a post's first round trip.
func (s *Service) readPost(ctx context.Context, in postInput, candidates []string) (postReads, error) {
	k := s.keys
	uid := in.uid
	var r postReads
	pipe := s.rdb.Pipeline()
	if in.session != "" {
		r.session = s.queueSession(ctx, pipe, in.session)
	}
	if in.note && (in.session == "" || s.checksSessionInNote()) {
		// The session was read before, or is checked by the note itself:
		// a session that ended notes nothing. On a cluster one checked
		// here is noted once known to be still there (see post).
		r.seen = s.queueNote(ctx, pipe, uid, in.session)
	}
	// The admission's commands, whose errors its check reads.
	admitFrom, admitTo := pipe.Len(), pipe.Len()
	if in.admit != nil {
		r.admitted = in.admit(ctx, pipe, uid)
		admitTo = pipe.Len()
	}
	r.author = pipe.HMGet(ctx, k.user(uid), "login", "name", "suspended")
	r.unfollows = s.queueUnfollows(ctx, pipe, uid) // before the page (see homePush)
	r.inLists = pipe.ZCard(ctx, k.listsIn(uid))
	r.pulled = pipe.ZScore(ctx, k.pulledAuthors(), itoa(uid)) // then lists merge the status at read
	if in.replyTo == 0 {                                      // a reply's, once its parent is read
		r.sid, r.now = pipe.Incr(ctx, k.statusSeq()), pipe.Time(ctx)
	}
	// The page is read after the sequence: every follower in it whose
	// score is past the sequence came after, and gets the status from
	// their backfill.
	r.seq = pipe.Get(ctx, k.followSeq())
	r.promoting = pipe.Exists(ctx, k.job(promoteJobID(uid)))
	r.followers = pipe.ZCard(ctx, k.followers(uid))
	r.page = s.queueFirstPage(ctx, pipe, uid, "-inf")
	if in.replyTo != 0 {
		r.parent = pipe.HMGet(ctx, k.status(in.replyTo), parentFields...)
	}
	if len(candidates) > 0 {
		lower := make([]string, len(candidates))
		for i, l := range candidates {
			lower[i] = strings.ToLower(l)
		}
		r.mentions = pipe.HMGet(ctx, k.loginIndex(), lower...)
	}
	if cmds, err := pipe.Exec(ctx); err != nil {
		// GET and ZSCORE answer redis.Nil for what is not there.
		for i, c := range cmds {
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) && (i < admitFrom || i >= admitTo) {
				return postReads{}, err
			}
		}
	}
	return r, nil
}

// pushPost makes a post's last round trips (see the top of the file)
// for status st, read as r says.
func (s *Service) pushPost(ctx context.Context, st Status, at place, payload []byte, toLists bool, r postReads) error {
	k := s.keys
	until := r.seq.Val()
	if until == "" {
		until = "0"
	}
	members, last, full, err := r.page.cut(ctx, s, until, r.unfollows.Val())
	if err != nil {
		return err
	}
	answered := answeredOnly(st)

	// 2: the jobs, and who of the page the status reaches; on one Redis
	// the status too, and the frames of the page's followers
	// (queueFrames), ahead of their pushes, all in one transaction: what
	// Redis refuses as it queues a command (a write at maxmemory) it
	// refuses whole, so that no status or frame goes without its job, and
	// a death part way leaves nothing.
	oneRedis := !k.cluster
	if oneRedis && s.afterQueue != nil {
		s.afterQueue()
	}
	// From here on the post's writes run though the request ends
	// (detached): once its job is queued (with the frames, on one Redis),
	// the rest follows at once, not a worker's JobClaimIdle later; and
	// once the jobs are ready (maybe done), no redo does. A request ended
	// before posts nothing.
	if err := ctx.Err(); err != nil {
		return err
	}
	dctx, cancel := detached(ctx)
	defer cancel()
	pipe := s.rdb.Pipeline()
	if oneRedis {
		pipe = s.rdb.TxPipeline()
	}
	homeJob, listJob, queued := s.queuePostJobsOn(dctx, pipe, st, payload, toLists)
	var frames *redis.Cmd
	// On one Redis the followers' last requests and presence's set are
	// read later, when at all (see followerActivity).
	act := s.queueActivity(dctx, pipe, members, answered, oneRedis)
	var late *lateFollowers
	if oneRedis {
		if err := s.queueWritePost(dctx, pipe, st, at, payload); err != nil {
			return err
		}
		late = s.queueLateFollowers(dctx, pipe, st.UID, members, last, full)
		if len(members) > 0 {
			frames = s.queueFrames(dctx, pipe, homeJob, st.UID, st.ID, string(payload), members, answered, r.unfollows.Val())
		}
	}
	cmds, err := pipe.Exec(dctx)
	code, flags := int64(framesNot), ""
	resent := false // the frames call ran again after the transaction
	if frames != nil {
		resent = redis.HasErrorPrefix(frames.Err(), "NOSCRIPT")
		if code, flags, err = s.framesAnswer(dctx, frames, cmds, err); err == nil && flags != "" && len(flags) != len(members) {
			err = fmt.Errorf("frames: %d flags for %d followers", len(flags), len(members))
		}
	}
	if err != nil && !oneRedis && firstErr(queued) == nil {
		// The jobs are queued, and a read of the page's activity failed:
		// read again, so that the post goes on in place, not a worker's
		// JobClaimIdle later.
		err = resendFailed(dctx, s.rdb, cmds)
	}
	if err != nil {
		return s.queueFailed(dctx, st, queued, err)
	}
	if !oneRedis && s.afterQueue != nil {
		s.afterQueue()
	}
	if code != framesSent || resent {
		// The frames were not sent ahead (on one Redis, rarely: see
		// queueFrames), and the pushes send them to those connected: who
		// is, and who is active, read now, one round trip more. When they
		// were, they went to every follower the pushes reach (those who
		// follow the author answered too, for a reply, as the transaction
		// read), and none needs them from the pushes, nor, on a deletion,
		// to be told of it but as one framed; unless the call ran again
		// after the transaction (a Redis that lost its scripts answered
		// NOSCRIPT within it), on a reply's follows as they were then.
		if err := act.readOnline(dctx, s); err != nil {
			return s.leftToJob(ctx, st, err)
		}
	}
	push, connected, onlyIfOn := act.active(r.now.Val(), s.opts.InactiveAfter)
	framed := framedBy(code, flags, members, push) // none on a cluster
	uids := make([]int64, len(push))
	for i, m := range push {
		uids[i], _ = strconv.ParseInt(m, 10, 64)
	}

	var h *homePush
	var added []int64
	if oneRedis {
		if s.afterWrite != nil {
			s.afterWrite()
		}
	} else {
		// 3, on a cluster: the status, and the push with its frames.
		pipe = s.rdb.Pipeline()
		if err := s.queueWritePost(dctx, pipe, st, at, payload); err != nil {
			return err
		}
		late = s.queueLateFollowers(dctx, pipe, st.UID, members, last, full)
		h = s.queuePush(dctx, pipe, st.UID, st.ID, 0, string(payload), uids, connected, nil, r.unfollows.Val())
		cmds, err := pipe.Exec(dctx)
		// A slot being migrated answers TRYAGAIN to a script whose keys
		// are moved in part (the author's first status, say): sent again,
		// and the count behind it, once they are (behind it but for an
		// ASK, see lateFollowers).
		err = resendTryAgain(dctx, s.rdb, cmds, err, late.reads()...)
		if added, err = h.results(dctx, s.rdb, cmds, err); err != nil {
			return s.leftToJob(ctx, st, err)
		}
		if s.afterWrite != nil {
			s.afterWrite()
		}
	}

	// The last: on one Redis the pushes (sending the frames 2 left to
	// them); the job past the page, ready for the next pass (or finished);
	// and the status looked at again. The job's later passes reach up to a
	// follow sequence read by the first of them, not until: a follow that
	// took its place after until, and copied the author's statuses before
	// this one was written, is behind the page yet lacks the status; one
	// after that read copies it (see postPass). A follow that raced the
	// page has the next pass begin again at the first follower, and a page
	// that was every follower then has one (see lateFollowers).
	j := job{key: homeJob, kind: jobPost, uid: st.UID, sid: st.ID}
	next := j
	next.ready = true
	finish := "1"
	switch {
	case late.raced(r):
		next.cursor, finish = racedCursor, "0"
	case full:
		next.cursor, finish = last, "0"
	}
	args := []any{jobGroup, "0", finish}
	if finish == "0" {
		args = append(args, j.moves(next)...)
	}
	if oneRedis {
		args[2] = finish + "!" // nothing written at maxmemory, where the pushes before it are refused
	}
	pipe = s.rdb.Pipeline()
	if oneRedis {
		// Before the job moves past the page, so that a death in this
		// round trip leaves the pushes to the worker that takes the job
		// over (sending frames to those not framed); by push.lua's text,
		// so that the job never moves on though they did not run (a Redis
		// that lost its scripts since 2 would answer NOSCRIPT to its hash).
		live := liveAfterFrames(code, framed, connected)
		h = s.queuePush(dctx, pipe, st.UID, st.ID, 0, string(payload), uids, live, onlyIfOn, r.unfollows.Val())
		h.bySource()
	}
	advanced := advanceScript.Eval(dctx, pipe, []string{homeJob, k.jobs(), k.making()}, args...)
	if listJob != "" {
		flagJobsScript.Eval(dctx, pipe, s.flagKeys(listJob), "ready")
	}
	exists := pipe.Exists(dctx, k.status(st.ID))
	look := s.queueAuthorLook(dctx, pipe, st.UID)
	blocked := s.queueReplyBlocked(dctx, pipe, st)
	// A list that took the author in since the first round trip's read,
	// whose backfill may have missed the status (see listsAgain).
	again := s.queueListsAgain(dctx, pipe, listPostJob(st, payload), listJob)
	// On a cluster the page's activity was read before the status was
	// written: a follower found away then, who came back since, may have
	// had their home rebuilt before the status was there. Those found away
	// are read again now, after it (see pushReturned).
	var away *followerActivity
	if !oneRedis {
		if gone := act.away(r.now.Val(), s.opts.InactiveAfter); len(gone) > 0 {
			away = &followerActivity{members: gone}
			away.queueReads(dctx, pipe, s)
		}
	}
	cmds, err = pipe.Exec(dctx)
	// Whether this post moved its job past the page, or finished it (0: a
	// worker took the job over, and redoes the post).
	moved, _ := advanced.Int64()
	if err != nil && moved == 1 {
		// What else failed here is left to no one, and is sent again.
		err = resendFailed(dctx, s.rdb, cmds)
	}
	if oneRedis {
		added, err = h.results(dctx, s.rdb, cmds, err)
	}
	// Queued whatever else failed: the status is written, and a worker
	// that redoes the post queues no list job.
	if late := again.queue(dctx, s); late != "" {
		listJob = late
	}
	if err != nil {
		if moved != 1 {
			return s.leftToJob(ctx, st, err)
		}
		// The status is written: a retry would post it twice. What did
		// answer is followed still.
		s.opts.Logger.ErrorContext(ctx, "could not finish a post once its job moved on", "status", st.ID, "uid", st.UID, "err", err)
		if exists.Err() != nil || look.Err() != nil || exists.Val() == 0 && added == nil {
			return nil
		}
	}
	if exists.Val() == 0 {
		// Those the frames call framed are told too, connected or not as
		// presence's set said: a stream may be live before it is listed.
		told := make([]bool, len(push))
		for i := range push {
			told[i] = connected[i] || framed[i]
		}
		if err := s.unpush(dctx, st, uids, added, told); err != nil {
			// Its job done, the status deleted: read as deleted, and in no
			// home's later reads (see the Timelines of docs/API.md).
			s.opts.Logger.WarnContext(ctx, "could not take a deleted post back out of its followers' homes", "status", st.ID, "uid", st.UID, "err", err)
		}
	} else {
		if blocked() {
			return s.takeBackReply(dctx, st)
		}
		if err := s.settleAuthorOf(dctx, st.UID, st.ID, look.Val()); err != nil {
			if err := s.settleFailed(dctx, st, err); err != nil {
				return err
			}
		}
		if err := s.pushReturned(dctx, st, payload, away, r); err != nil {
			// The status is written and its job done: a follower who
			// raced the post and is not reached for an error here is
			// logged, and the post answered, which a retry would make
			// twice.
			s.opts.Logger.WarnContext(ctx, "could not push a post to a follower back as it was made", "status", st.ID, "uid", st.UID, "err", err)
		}
	}
	// An author over the threshold (one who passed it before it was
	// lowered) is made pulled from here on; this status is still pushed.
	// The status is written: a promotion not queued for an error is
	// logged, and left to the author's next post.
	if t := s.opts.PullThreshold; t > 0 && r.followers.Val() >= int64(t) && r.promoting.Val() == 0 {
		if err := s.queuePromotion(dctx, st.UID); err != nil {
			s.opts.Logger.WarnContext(ctx, "could not queue an author's promotion to pulled", "uid", st.UID, "err", err)
		}
	}
	if listJob != "" {
		s.inlinePass(ctx, listJob)
	}
	return nil
}

// leftToJob answers err, met by post st once its job was queued (the
// second round trip answered), as what it is: no failure of the post. The
// job holds the status, and its worker writes what this instance did not
// (a pass; or, when the job was not made ready, a redo once JobClaimIdle
// passed, see makerDone). A retry the client made of an answer that
// failed would post the status twice. So err is logged, and the post
// answered: its status reaches every follower, late.
func (s *Service) leftToJob(ctx context.Context, st Status, err error) error {
	s.opts.Logger.WarnContext(ctx, "a post failed once queued; its job finishes it", "status", st.ID, "uid", st.UID, "err", err)
	return nil
}

// queueFailed answers err, met by the round trip that queued post st's
// jobs (queued, the commands that queued them, see queuePostJobsOn): when
// none of them was answered, nothing of the post need be in Redis (but for
// a connection lost between Redis's work and its answer), and err is
// answered, which a retry posts once; else the post is left to its jobs
// (leftToJob), and one that was not queued (where they are not queued in
// one transaction: on a cluster, and a pulled author's) is queued again.
func (s *Service) queueFailed(ctx context.Context, st Status, queued []redis.Cmder, err error) error {
	if !slices.ContainsFunc(queued, func(c redis.Cmder) bool { return c.Err() == nil }) {
		return err
	}
	if err := resendFailed(ctx, s.rdb, queued); err != nil {
		s.opts.Logger.ErrorContext(ctx, "could not queue a post's job beside its other one", "status", st.ID, "uid", st.UID, "err", err)
	}
	return s.leftToJob(ctx, st, err)
}

// settleFailed answers err, met by settleAuthorOf once post st's jobs are
// ready (so that no redo follows): an account deleted meanwhile as it is
// (errAccountGone), and an error of Redis logged, the post answered; the
// status is written, and a retry would post it twice.
func (s *Service) settleFailed(ctx context.Context, st Status, err error) error {
	if errors.Is(err, ErrUnauthenticated) {
		return err
	}
	s.opts.Logger.ErrorContext(ctx, "could not settle a post with its author's suspension or deletion", "status", st.ID, "uid", st.UID, "err", err)
	return nil
}

// pushReturned pushes status st, on a cluster, to those of its page's
// followers found away before it was written (away, read again after it;
// nil for none) who are active or connected now: a follower back since
// noted their activity before their home's rebuild began (noted), and so
// before it could miss the status, which a rebuild after this read finds.
// One round trip more, only in a post that raced such a return.
func (s *Service) pushReturned(ctx context.Context, st Status, payload []byte, away *followerActivity, r postReads) error {
	if away == nil {
		return nil
	}
	back, connected, _ := away.active(r.now.Val(), s.opts.InactiveAfter)
	return s.pushStatus(ctx, st.UID, st.ID, 0, string(payload), back, connected, nil, r.unfollows.Val())
}

// lateFollowers is what a post reads of its author's followers once its
// status is written (after its writes to the author's profile, in the same
// transaction on one Redis, and on a cluster in the same pipeline to the
// author's shard, where the followers are too, so that the shard runs them
// after the writes; but not while the author's slot migrates, where a
// command redirected by ASK is sent again after the others): how many are scored
// up to its page's end (its last member's score, or, for a page that was
// every follower, without end), and the author's unfollow count.
//
// A follow takes its place in the follow sequence before it joins the
// author's followers, and copies the author's statuses after: one that
// took its place before the page was read, but joined after, may have
// copied them before the status was written, and the page lacks them,
// though they are scored inside it (below a follow that took its place
// after theirs but joined first) or past it in a page that was every
// follower. While the count is the page's and the unfollow count the one
// read before the page (an unfollow counts itself, and a follow's score
// changes only by an unfollow and a follow again), none came; else (and
// when the page was cut at the follow sequence: members scored past it, a
// follow that came between the two reads, on a cluster, where they are on
// different shards) the job's next pass begins again at the first follower
// (racedCursor), reading the follow sequence as a first pass does
// (postPass): the homes that have the status already are left as they are
// and sent no frame, and those who lack it get it, from Redis, so that a
// death of this instance loses none. A follow that joins after these reads
// copies the status.
type lateFollowers struct {
	page      int // the page's members
	count     *redis.IntCmd
	unfollows *redis.SliceCmd // [count], nil when none was counted
}

// racedCursor is the cursor of a post's job whose page a follow raced: its
// next pass begins at the first follower (every follow number is 1 or
// more), and is not a first pass (which finds the status pulled, or its
// author due to be, when so).
const racedCursor = -1

// queueLateFollowers queues on pipe, after the status's writes, the reads
// of the followers of author that the post's page (members, the last
// scored last, full when more may follow) is checked against.
func (s *Service) queueLateFollowers(ctx context.Context, pipe redis.Pipeliner, author int64, members []string, last float64, full bool) *lateFollowers {
	end := "+inf"
	if full {
		end = score(last)
	}
	// The unfollow count by MGET, which answers none without an error (in
	// a transaction, GET's redis.Nil would fail it).
	return &lateFollowers{
		page:      len(members),
		count:     pipe.ZCount(ctx, s.keys.followers(author), "-inf", end),
		unfollows: pipe.MGet(ctx, s.keys.unfollows(author)),
	}
}

// raced reports whether a follow may have raced the post's page (see
// lateFollowers), r being what the post read first.
func (l *lateFollowers) raced(r postReads) bool {
	var unfollows string
	if v := l.unfollows.Val(); len(v) == 1 {
		unfollows, _ = v[0].(string)
	}
	return l.count.Val() != int64(l.page) || unfollows != r.unfollows.Val()
}

// reads returns the commands of l's reads.
func (l *lateFollowers) reads() []redis.Cmder { return []redis.Cmder{l.count, l.unfollows} }

// postQueued makes a post the way a job's passes do: its jobs queued, the
// status written, the jobs marked ready (queuePostJobs), and their first
// passes run.
func (s *Service) postQueued(ctx context.Context, st Status, at place, payload []byte, toLists bool) error {
	homeJob, listJob, err := s.queuePostJobs(ctx, st, at, payload, toLists)
	if err != nil {
		return fmt.Errorf("post by %d: %w", st.UID, err)
	}
	if homeJob == "" {
		return nil // left to the job (leftToJob)
	}
	s.inlinePass(ctx, homeJob)
	if listJob != "" {
		s.inlinePass(ctx, listJob)
	}
	return nil
}

// queuePostJobs queues status st's fan-out jobs (the lists' too when
// toLists), writes the status, and marks the jobs ready. It returns the
// jobs' keys ("" for no list job; both "" when a failure once a job
// was queued left the post to it, see leftToJob).
func (s *Service) queuePostJobs(ctx context.Context, st Status, at place, payload []byte, toLists bool) (homeJob, listJob string, err error) {
	// Detached from the queuing on, as pushPost is: a request that ended
	// before posts nothing.
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	dctx, cancel := detached(ctx)
	defer cancel()
	pipe := s.rdb.Pipeline()
	homeJob, listJob, queued := s.queuePostJobsOn(dctx, pipe, st, payload, toLists)
	if _, err := pipe.Exec(dctx); err != nil {
		return "", "", s.queueFailed(dctx, st, queued, err)
	}
	if s.afterQueue != nil {
		s.afterQueue()
	}
	if err := s.writePost(dctx, st, at, payload); err != nil {
		return "", "", s.leftToJob(dctx, st, err)
	}
	pipe = s.rdb.Pipeline()
	ready := []string{homeJob}
	if listJob != "" {
		ready = append(ready, listJob)
	}
	flagged := flagJobsScript.Eval(dctx, pipe, s.flagKeys(ready...), "ready")
	look := s.queueAuthorLook(dctx, pipe, st.UID)
	blocked := s.queueReplyBlocked(dctx, pipe, st)
	cmds, err := pipe.Exec(dctx)
	if err != nil && flagged.Err() == nil {
		err = resendFailed(dctx, s.rdb, cmds) // the jobs are ready: no redo looks
	}
	if err != nil {
		if flagged.Err() != nil {
			return "", "", s.leftToJob(dctx, st, err)
		}
		s.opts.Logger.ErrorContext(ctx, "could not settle a post with its author's suspension or deletion", "status", st.ID, "uid", st.UID, "err", err)
		return homeJob, listJob, nil
	}
	if blocked() {
		return "", "", s.takeBackReply(dctx, st)
	}
	if err := s.settleAuthorOf(dctx, st.UID, st.ID, look.Val()); err != nil {
		return homeJob, listJob, s.settleFailed(dctx, st, err)
	}
	return homeJob, listJob, nil
}

// queueReplyBlocked queues on pipe, for reply st to someone else, the
// reads of whether a block stands between its author and the person it
// answers, in the author's slot, and returns what reads their answer once
// it ran (false for a status that is no such reply, and for a read that
// failed, which leaves the reply as the check before it found it).
//
// The reply checked the block before it was written (post); a block that
// raced it since writes its side in the author's slot before it returns,
// so it is either seen by this read, made after the reply's writes, or
// came after them (a reply made before a block stands, as a status does).
func (s *Service) queueReplyBlocked(ctx context.Context, pipe redis.Pipeliner, st Status) func() bool {
	answered := answeredOnly(st)
	if answered == 0 {
		return func() bool { return false }
	}
	return s.queueBlockedEither(ctx, pipe, st.UID, answered)
}

// takeBackReply deletes reply st, written, its jobs ready, when a block
// between its author and the person it answers was found to have raced it
// (queueReplyBlocked), as DeleteStatus deletes a status: out of its thread,
// its notifications, and every timeline it reached. It answers ErrBlocked,
// as a reply refused before it was written, or the deletion's error.
func (s *Service) takeBackReply(ctx context.Context, st Status) error {
	if err := s.DeleteStatus(ctx, st.UID, st.ID); err != nil && !errors.Is(err, ErrStatusNotFound) {
		return fmt.Errorf("take back a reply a block raced: %w", err)
	}
	return ErrBlocked
}

// queuePostJobsOn queues on pipe status st's fan-out jobs, the lists' too
// when toLists, and returns their keys ("" for no list job) and the
// commands that queue them (each answered without an error once its job
// is there), the home job's first. Neither job
// is ready until the status is written: a worker that reads one before
// waits (see makerDone), so no pass looks for a status that is not there
// yet and ends its job.
func (s *Service) queuePostJobsOn(ctx context.Context, pipe redis.Pipeliner, st Status, payload []byte, toLists bool) (homeJob, listJob string, queued []redis.Cmder) {
	k := s.keys
	post := job{kind: jobPost, uid: st.UID, sid: st.ID, payload: string(payload)}
	homeJob = k.job(post.id())
	queued = append(queued, s.queueJob(ctx, pipe, post, inputsPending))
	if toLists {
		list := listPostJob(st, payload)
		listJob = k.job(list.id())
		queued = append(queued, s.queueJob(ctx, pipe, list, inputsPending))
	}
	return homeJob, listJob, queued
}

// listPostJob is the list_post job of status st, whose frame is payload.
func listPostJob(st Status, payload []byte) job {
	return job{kind: jobListPost, uid: st.UID, sid: st.ID, payload: string(payload)}
}
