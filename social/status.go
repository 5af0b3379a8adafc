package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// MaxMessageRunes is the longest status message, counted after trimming.
const MaxMessageRunes = 500

// Status is one posted message, as the API shows it.
type Status = protocol.Status

var userCreatedEvent, _ = json.Marshal(protocol.Internal{Type: protocol.TypeUserCreated})

var (
	//go:embed post_author.lua
	postAuthorSource string
	postAuthorScript = newScript(postAuthorSource)

	//go:embed flag_jobs.lua
	flagJobsSource string
	flagJobsScript = newScript(flagJobsSource)

	//go:embed delete_author.lua
	deleteAuthorSource string
	deleteAuthorScript = newScript(deleteAuthorSource)
)

// statusFields are the fields of a status hash that statusesByID reads, in
// the order parseStatus takes them: a reply's "reply_to" (the id),
// "reply_uid" and "reply_login", its "path" (the ids of its nearest
// ancestors, oldest first, comma-separated), its "mentions" ("uid:login"
// pairs, space-separated), a repost's "repost_of", and "hidden", set on the
// statuses of a suspended account (see Suspend).
var statusFields = []string{"id", "uid", "login", "message", "posted", "name",
	"reply_to", "reply_uid", "reply_login", "path", "mentions", "repost_of", "hidden"}

// ValidateMessage trims message and checks it against the API's rules.
func ValidateMessage(message string) (string, error) {
	if !utf8.ValidString(message) {
		return "", invalid("message", "must be valid UTF-8")
	}
	message = strings.TrimSpace(message)
	if n := utf8.RuneCountInString(message); n == 0 || n > MaxMessageRunes {
		return "", invalid("message", "must be 1 to %d characters after trimming", MaxMessageRunes)
	}
	if strings.ContainsFunc(message, forbiddenInMessage) {
		return "", invalid("message", "must not contain control characters other than tab, newline and carriage return, nor bidirectional embeddings, overrides or isolates")
	}
	return message, nil
}

// forbiddenInMessage reports whether r may not appear in a message: a control
// character (C0, DEL, C1) other than tab, newline and carriage return, or a
// bidirectional embedding, override or isolate (U+202A-U+202E,
// U+2066-U+2069), which would reorder the text shown around the message.
// The marks (U+200E, U+200F, U+061C), which text mixing directions needs to
// read right, and the zero-width spaces and joiners, which some scripts and
// emoji need, stay allowed: unlike a name, a message impersonates nothing.
func forbiddenInMessage(r rune) bool {
	return (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r') || isBidiControl(r)
}

// isBidiControl reports whether r is a bidirectional embedding, override or
// isolate, or the pop that ends one.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Post publishes a status by uid: it is in the author's timelines and the
// global one when Post returns, and in followers' home timelines and the
// timelines of lists that hold the author after the fan-out jobs, whose
// first passes run before Post returns.
//
// The status's keys are on several shards of a cluster, so its jobs are
// queued first: once Post has queued them, a worker finishes the post
// should this instance die before it wrote the rest (see writePost).
func (s *Service) Post(ctx context.Context, uid int64, message string) (Status, error) {
	return s.Reply(ctx, uid, 0, message)
}

// Reply posts a status by uid that answers status replyTo (0: none, a post),
// as Post does. The status answered must exist (ErrStatusNotFound); a
// repost is answered as its original. The reply reaches the home timelines
// of its author's followers who follow the person answered too, and that
// person's (see answeredOnly); it notifies that person (replied) and those
// it @mentions (mentioned).
func (s *Service) Reply(ctx context.Context, uid, replyTo int64, message string) (Status, error) {
	return s.post(ctx, postInput{uid: uid, replyTo: replyTo, message: message})
}

// writePost writes a status where its author owns it: the status hash
// (a reply's with its place, at: childPlace), the author's profile and
// home timelines and post count, and the global timeline, which it
// publishes on the global channel for the streams that watch it (a reply
// on its thread's channel too); and its conversation (queueConversation):
// a reply's place among its parent's replies, and the notifications. Each
// write is idempotent, so the post job of an instance that died part way
// redoes them all (see postPass and redoPost); the global frame goes again
// then, and clients drop it by id.
func (s *Service) writePost(ctx context.Context, st Status, at place, payload []byte) error {
	pipe := s.rdb.Pipeline()
	if err := s.queueWritePost(ctx, pipe, st, at, payload); err != nil {
		return err
	}
	_, err := pipe.Exec(ctx)
	return err
}

// queueWritePost queues writePost's writes on pipe.
func (s *Service) queueWritePost(ctx context.Context, pipe redis.Pipeliner, st Status, at place, payload []byte) error {
	k := s.keys
	z := redis.Z{Score: float64(st.ID), Member: st.ID}
	global, err := json.Marshal(protocol.GlobalStatus{Type: protocol.TypeGlobalStatus, Status: st})
	if err != nil {
		return err
	}
	fields := []any{"id", st.ID, "uid", st.UID, "login", st.Login,
		"name", st.Name, "message", st.Message, "posted", st.Posted.UnixMilli()}
	if r := st.ReplyTo; r != nil {
		fields = append(fields, "reply_to", r.ID, "reply_uid", r.UID, "reply_login", r.Login, "path", at.path, "thread", at.thread)
	}
	if len(st.Mentions) > 0 {
		fields = append(fields, "mentions", formatMentions(st.Mentions))
	}
	pipe.HSet(ctx, k.status(st.ID), fields...)
	s.queueConversation(ctx, pipe, st)
	postAuthorScript.Eval(ctx, pipe, []string{k.user(st.UID), k.profile(st.UID), k.home(st.UID)},
		st.ID, s.opts.HomeSize, s.bus.Command(), s.bus.UserChannel(st.UID), payload)
	pipe.ZAdd(ctx, k.global(), z)
	pipe.ZRemRangeByRank(ctx, k.global(), 0, int64(-s.opts.GlobalSize-1))
	if st.RepostOf == nil { // a repost is not in the global timeline
		s.bus.Queue(ctx, pipe, s.bus.GlobalChannel(), global)
	}
	if st.ReplyTo != nil && st.RepostOf == nil {
		told, err := json.Marshal(protocol.ThreadStatus{Type: protocol.TypeThreadStatus, Thread: at.thread, Status: st})
		if err != nil {
			return err
		}
		s.bus.Queue(ctx, pipe, s.bus.ThreadChannel(at.thread), told)
	}
	return nil
}

// redoPost does a post's writePost again, for a job whose maker died: a
// reply's place is read again (replyPlace).
func (s *Service) redoPost(ctx context.Context, st Status, payload []byte) error {
	at, err := s.replyPlace(ctx, st)
	if err != nil {
		return err
	}
	return s.writePost(ctx, st, at, payload)
}

// errDeletedMeanwhile is rewriteUnlessDeleted's answer for a status
// deleted before its post job wrote it again: the job is finished.
var errDeletedMeanwhile = errors.New("status deleted before its post was finished")

// rewriteUnlessDeleted is the redo of post job j (a post's or its lists'),
// whose maker was taken for dead (makerDone): status st written again from
// its frame, payload, unless DeleteStatus marked the job as it deleted st,
// which the maker wrote before it died. DeleteStatus marks the jobs before
// it deletes, and this looks at the mark again after it writes: either it
// sees the mark, or the deletion comes after its writes. A marked job's
// redo takes back, from st, whatever a redo may have written (this one, or
// one that failed after its writes), and ends the job: a status deleted
// meanwhile is never written back for good.
func (s *Service) rewriteUnlessDeleted(ctx context.Context, j job, st Status, payload []byte) error {
	if !j.deleted {
		if s.beforeRewrite != nil {
			s.beforeRewrite(j)
		}
		if err := s.rewritePost(ctx, st, payload); err != nil {
			return err
		}
		if s.afterRewrite != nil {
			if err := s.afterRewrite(); err != nil {
				return err
			}
		}
		pipe := s.rdb.Pipeline()
		marked := pipe.HExists(ctx, j.key, "deleted")
		look := s.queueAuthorLook(ctx, pipe, st.UID)
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		if !marked.Val() {
			// The author suspended, or their account deleted, since the
			// post checked them (settleAuthor): a deleted account's
			// status is taken back as a deleted status's is.
			err := s.settleAuthor(ctx, st.UID, st.ID, look.Val(), func() error { return nil })
			if !errors.Is(err, errAccountGone) {
				return err
			}
		}
	}
	if err := s.unwritePost(ctx, st); err != nil {
		return err
	}
	return errDeletedMeanwhile
}

// unwritePost takes back what rewritePost may have written of status st,
// from st, not from its hash, which the deletion that raced the rewrite
// may have taken already: writeDelete's writes, and for a repost entry
// its claim and notification, as its drop_reactions job takes them.
// Idempotent.
func (s *Service) unwritePost(ctx context.Context, st Status) error {
	reply := []any{itoa(st.UID), nil, nil, formatMentions(st.Mentions), nil, nil, nil}
	if r := st.ReplyTo; r != nil {
		// Its place, read again as the redo read it, names the thread
		// told.
		at, err := s.replyPlace(ctx, st)
		if err != nil {
			return err
		}
		reply[1], reply[2], reply[6] = itoa(r.ID), itoa(r.UID), itoa(at.thread)
	}
	if o := st.RepostOf; o != nil {
		reply[5] = itoa(o.ID)
	}
	payload, err := json.Marshal(deleted(st))
	if err != nil {
		return err
	}
	if err := s.unwriteStatus(ctx, st.UID, st.ID, payload, reply); err != nil {
		return err
	}
	if st.RepostOf != nil {
		return s.dropRepostClaim(ctx, st.UID, st.ID, st.RepostOf.ID)
	}
	return nil
}

// LastStatusID returns the id the last status posted was given (0 before
// the first). Every status posted from now on gets a greater one.
func (s *Service) LastStatusID(ctx context.Context) (int64, error) {
	id, err := s.rdb.Get(ctx, s.keys.statusSeq()).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last status id: %w", err)
	}
	return id, nil
}

// Status returns one status.
func (s *Service) Status(ctx context.Context, id int64) (Status, error) {
	sts, err := s.statusesByID(ctx, []int64{id})
	if err != nil {
		return Status{}, fmt.Errorf("status %d: %w", id, err)
	}
	if len(sts) == 0 {
		return Status{}, ErrStatusNotFound
	}
	return sts[0], nil
}

// DeleteStatus deletes status id, which uid must own. It is gone from every
// read when DeleteStatus returns; followers' home timelines and the
// timelines of lists that hold its author are cleaned by background jobs
// whose first passes run before it returns. As with Post, the jobs are
// queued first, and a worker finishes a deletion its instance left part way.
// A third job takes out the status's likes and reposts (every repost entry
// deleted in turn), or, for a repost entry, its claim (dropReactionsPass).
func (s *Service) DeleteStatus(ctx context.Context, uid, id int64) error {
	k := s.keys
	pipe := s.rdb.Pipeline()
	owner := pipe.HGet(ctx, k.status(id), "uid")
	repostOf := pipe.HGet(ctx, k.status(id), "repost_of")
	replyTo := pipe.HGet(ctx, k.status(id), "reply_to")
	inLists := pipe.ZCard(ctx, k.listsIn(uid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("delete status %d: %w", id, err)
	}
	switch o, err := owner.Int64(); {
	case errors.Is(err, redis.Nil):
		return ErrStatusNotFound
	case err != nil:
		return fmt.Errorf("delete status %d: %w", id, err)
	case o != uid:
		return ErrNotOwner
	}
	// A reply's deletion names the status it answered, whose replies
	// count went down: a client showing that status reads it again.
	parent, _ := replyTo.Int64()
	payload, err := json.Marshal(protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: id, ReplyTo: parent, UID: uid})
	if err != nil {
		return fmt.Errorf("delete status %d: %w", id, err)
	}
	cleanup := job{kind: jobDelete, uid: uid, sid: id, payload: string(payload)}
	list := cleanup
	list.kind = jobListDelete
	homeJob, listJob := k.job(cleanup.id()), ""
	// As in queuePost, the jobs wait for the deletion to be written: a list
	// pass that ran first could race a list_post pass that, seeing the
	// status still there, leaves it in a list for good.
	pipe = s.rdb.Pipeline()
	s.queueJob(ctx, pipe, cleanup, inputsPending)
	if inLists.Val() > 0 {
		listJob = k.job(list.id())
		s.queueJob(ctx, pipe, list, inputsPending)
	}
	of, _ := repostOf.Int64()
	reactionsJob := s.queueDropReactions(ctx, pipe, uid, id, of, string(payload))
	// After the jobs that finish the deletion, in their slot: a post job
	// marked here never writes the status again (rewriteUnlessDeleted).
	flagJobsScript.Eval(ctx, pipe, s.flagKeys(k.job(postJobID(id)), k.job(listPostJobID(id))), "deleted")
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("delete status %d: %w", id, err)
	}
	if s.afterQueue != nil {
		s.afterQueue()
	}
	if err := s.writeDelete(ctx, uid, id, payload); err != nil {
		return fmt.Errorf("delete status %d: %w", id, err)
	}
	// A list that took the author in since the read above may have copied
	// the status before it was deleted: list:in is read again, and the
	// list job queued then (markReadyForLists).
	if listJob, err = s.markReadyForLists(ctx, list, listJob, homeJob, reactionsJob); err != nil {
		return fmt.Errorf("delete status %d: %w", id, err)
	}
	s.inlinePass(ctx, homeJob)
	if listJob != "" {
		s.inlinePass(ctx, listJob)
	}
	s.inlinePass(ctx, reactionsJob)
	return nil
}

// writeDelete takes a status out of where its author owns it: its
// conversation (queueUnconversation), then the status hash (from then on every read leaves it out, and a copy or a
// fan-out pass that raced it takes it out again), then the author's
// timelines and post count, the global timeline (publishing the deletion
// on the global channel; on its thread's, threadOfDeleted, with the
// conversation) and the pulled statuses. Idempotent, as writePost.
func (s *Service) writeDelete(ctx context.Context, uid, id int64, payload []byte) error {
	// The conversation first, while the hash still says what it was: a
	// redo after the hash is gone finds it undone already.
	reply, err := s.rdb.HMGet(ctx, s.keys.status(id), replyFields...).Result()
	if err != nil {
		return err
	}
	return s.unwriteStatus(ctx, uid, id, payload, reply)
}

// unwriteStatus makes writeDelete's writes, for status id whose hash reads
// reply (replyFields: all nil for a hash that is gone).
func (s *Service) unwriteStatus(ctx context.Context, uid, id int64, payload []byte, reply []any) error {
	k := s.keys
	// The deletion's own frame names what a reply answered, as read when
	// it was made: a redo, after the hash is gone, reads it from the job.
	var gone protocol.StatusDeleted
	_ = json.Unmarshal(payload, &gone) // always one of ours; none names nothing
	global, err := json.Marshal(protocol.GlobalStatusDeleted{Type: protocol.TypeGlobalStatusDeleted, ID: id, ReplyTo: gone.ReplyTo})
	if err != nil {
		return err
	}
	var threadTold []byte
	thread := threadOfDeleted(id, reply)
	if thread != 0 {
		threadTold, err = json.Marshal(protocol.ThreadStatusDeleted{Type: protocol.TypeThreadStatusDeleted, Thread: thread, ID: id, ReplyTo: gone.ReplyTo})
		if err != nil {
			return err
		}
	}
	if r, _ := reply[0].(string); r != "" {
		pipe := s.rdb.Pipeline()
		s.queueUnconversation(ctx, pipe, id, reply)
		// Told while the hash that names the thread is there: a redo
		// after it is gone, which would not know the thread, finds the
		// deletion told already.
		if thread != 0 {
			s.bus.Queue(ctx, pipe, s.bus.ThreadChannel(thread), threadTold)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	if err := s.rdb.Del(ctx, k.status(id)).Err(); err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	deleteAuthorScript.Eval(ctx, pipe, []string{k.user(uid), k.profile(uid), k.home(uid)},
		id, s.bus.Command(), s.bus.UserChannel(uid), payload)
	pipe.ZRem(ctx, k.global(), id)
	s.bus.Queue(ctx, pipe, s.bus.GlobalChannel(), global)
	pipe.ZRem(ctx, k.pulledStatuses(), pulledMember(id, uid))
	_, err = pipe.Exec(ctx)
	return err
}

// statusesByID reads statuses in one round trip, in the order given, leaving
// out those deleted.
func (s *Service) statusesByID(ctx context.Context, ids []int64) ([]Status, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.status(id), statusFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(ids))
	for _, c := range cmds {
		if st, ok := parseStatus(c.Val()); ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// parseStatus reads a status hash's statusFields; ok is false for a status
// that is not there (deleted), or hidden (its author suspended). A repost's RepostOf holds only the
// original's id (see Decorate).
func parseStatus(v []any) (st Status, ok bool) {
	str := func(i int) string { s, _ := v[i].(string); return s }
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	if str(0) == "" || str(12) != "" {
		return Status{}, false
	}
	st = Status{ID: num(0), UID: num(1), Login: str(2), Message: str(3), Posted: unixMilli(str(4)), Name: str(5),
		Mentions: parseMentions(str(10))}
	if id := num(6); id != 0 {
		st.ReplyTo = &protocol.StatusRef{ID: id, UID: num(7), Login: str(8)}
	}
	if id := num(11); id != 0 {
		st.RepostOf = &Status{ID: id}
	}
	return st, true
}

// formatMentions is the status hash's "mentions" field for ms.
func formatMentions(ms []protocol.Mention) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(itoa(m.UID))
		b.WriteByte(':')
		b.WriteString(m.Login)
	}
	return b.String()
}

// parseMentions reads a "mentions" field; never nil.
func parseMentions(f string) []protocol.Mention {
	ms := []protocol.Mention{}
	for _, pair := range strings.Fields(f) {
		id, login, _ := strings.Cut(pair, ":")
		uid, err := strconv.ParseInt(id, 10, 64)
		if err == nil && login != "" {
			ms = append(ms, protocol.Mention{UID: uid, Login: login})
		}
	}
	return ms
}
