package social

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// MaxMentions is how many distinct users one status may @mention to effect:
// the first ones in the message that exist; later ones, and unknown logins,
// stay plain text.
const MaxMentions = 10

// MaxAncestors is how many of a reply's nearest ancestors it keeps (its
// "path"), and so how far up a thread's context reaches.
const MaxAncestors = 50

// parent is what a reply keeps of the status it answers.
type parent struct {
	ref protocol.StatusRef
	at  place // the reply's own place: its path, the parent's then the parent
}

// place is where a status stands in its conversation: its path (the ids
// of its nearest MaxAncestors ancestors, oldest first: "" for none), and
// its thread, the id of the conversation's first status, which a reply
// keeps however deep it is (0 for a status that answers none: its own).
type place struct {
	path   string
	thread int64
}

// childPlace is the place of a reply to id, whose hash reads path and
// thread ("thread", as keptThread reads it).
func childPlace(path, thread string, id int64) place {
	return place{path: childPath(path, id), thread: keptThread(id, path, thread)}
}

// keptThread is the thread of status id, whose hash reads path and thread:
// the thread it keeps, or, for one that keeps none (it answers none, or
// was written before threads were kept), the thread its path tells
// (ThreadOf).
func keptThread(id int64, path, thread string) int64 {
	if t, err := strconv.ParseInt(thread, 10, 64); err == nil && t > 0 {
		return t
	}
	return ThreadOf(id, path)
}

// mentionCandidates returns the logins @mentioned in message, in order,
// without repeats (ignoring case): an @ not preceded by a letter, digit (of
// any script), underscore or @ (so not an e-mail address), followed by a
// valid login that no letter, digit or underscore continues. They are not
// cut at MaxMentions: unknown ones do not count (mentionedUsers), and a
// message's length bounds them (MaxMessageRunes, four bytes or more a
// mention: about a hundred at most).
func mentionCandidates(message string) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(message); i++ {
		if message[i] != '@' {
			continue
		}
		if before, _ := utf8.DecodeLastRuneInString(message[:i]); i > 0 && (inWord(before) || before == '@') {
			continue
		}
		j := i + 1
		for j < len(message) && isLoginByte(message[j]) {
			j++
		}
		login := message[i+1 : j]
		if after, _ := utf8.DecodeRuneInString(message[j:]); j < len(message) && inWord(after) {
			i = j - 1
			continue
		}
		if lower := strings.ToLower(login); ValidLogin(login) && !seen[lower] {
			seen[lower] = true
			out = append(out, login)
		}
		i = j - 1
	}
	return out
}

// inWord reports whether r is a letter, digit or underscore, of any
// script (Unicode L, N): what a mention's @ may not follow, nor its login
// run on into, as the web client reads them (status.js).
func inWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

func isLoginByte(b byte) bool {
	return b == '_' || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}

// mentionedUsers returns the users of uids, the login index's answer for
// the logins a status mentions, with their logins as they signed up: the
// first MaxMentions users that exist (and may be shown), in one round trip
// (none when no login was known).
func (s *Service) mentionedUsers(ctx context.Context, uids []any) ([]protocol.Mention, error) {
	ms := []protocol.Mention{}
	var ids []int64
	for _, v := range uids {
		str, _ := v.(string)
		if id, err := strconv.ParseInt(str, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return ms, nil
	}
	users, err := s.usersByID(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("look up mentions: %w", err)
	}
	for _, u := range users[:min(len(users), MaxMentions)] {
		ms = append(ms, protocol.Mention{UID: u.ID, Login: u.Login})
	}
	return ms, nil
}

// parentFields are the fields of a status hash parentOf reads.
var parentFields = []string{"id", "uid", "login", "path", "repost_of", "hidden", "thread"}

// parentOf returns the status replyTo answers, for a reply, from v, the
// parentFields of replyTo's hash: a repost answers as its original, read
// in one more round trip. A status that is not there (or was deleted) is
// ErrStatusNotFound.
func (s *Service) parentOf(ctx context.Context, replyTo int64, v []any) (parent, error) {
	for hop := 0; ; hop++ {
		str := func(i int) string { s, _ := v[i].(string); return s }
		if str(0) == "" || str(5) != "" {
			return parent{}, ErrStatusNotFound
		}
		if orig, err := strconv.ParseInt(str(4), 10, 64); err == nil && orig != 0 {
			if hop > 0 { // a repost of a repost is none Chorus makes
				return parent{}, ErrStatusNotFound
			}
			replyTo = orig
			var err error
			if v, err = s.rdb.HMGet(ctx, s.keys.status(replyTo), parentFields...).Result(); err != nil {
				return parent{}, fmt.Errorf("read status %d: %w", replyTo, err)
			}
			continue
		}
		uid, _ := strconv.ParseInt(str(1), 10, 64)
		return parent{
			ref: protocol.StatusRef{ID: replyTo, UID: uid, Login: str(2)},
			at:  childPlace(str(3), str(6), replyTo),
		}, nil
	}
}

// childPath is the path of a reply to id, whose own path is path: id's
// ancestors and id, the nearest MaxAncestors.
func childPath(path string, id int64) string {
	ids := strings.Split(path, ",")
	if path == "" {
		ids = nil
	}
	ids = append(ids, itoa(id))
	if len(ids) > MaxAncestors {
		ids = ids[len(ids)-MaxAncestors:]
	}
	return strings.Join(ids, ",")
}

// replyPlace reads again the place of reply st, for a job that redoes its
// write: as written before, if it was, else from its parent. A parent
// deleted since, before the reply was written, leaves the parent alone in
// its path, and its thread.
func (s *Service) replyPlace(ctx context.Context, st Status) (place, error) {
	if st.ReplyTo == nil {
		return place{}, nil
	}
	pipe := s.rdb.Pipeline()
	own := pipe.HMGet(ctx, s.keys.status(st.ID), "path", "thread")
	parent := pipe.HMGet(ctx, s.keys.status(st.ReplyTo.ID), "path", "thread")
	if _, err := pipe.Exec(ctx); err != nil {
		return place{}, err
	}
	str := func(v []any, i int) string { s, _ := v[i].(string); return s }
	if path := str(own.Val(), 0); path != "" {
		return place{path: path, thread: keptThread(st.ID, path, str(own.Val(), 1))}, nil
	}
	return childPlace(str(parent.Val(), 0), str(parent.Val(), 1), st.ReplyTo.ID), nil
}

// queueConversation queues on pipe what a new status st adds to its
// conversation: its place among its parent's replies, and the
// notifications of the person it answers (replied) and of those it
// mentions (mentioned; the person answered only once, as replied).
func (s *Service) queueConversation(ctx context.Context, pipe redis.Pipeliner, st Status) {
	from := protocol.User{ID: st.UID, Login: st.Login, Name: st.Name}
	var answered int64
	if st.ReplyTo != nil {
		answered = st.ReplyTo.UID
		pipe.ZAdd(ctx, s.keys.replies(st.ReplyTo.ID), redis.Z{Score: float64(st.ID), Member: st.ID})
		s.queueNotify(ctx, pipe, note{to: answered, from: st.UID, kind: protocol.NotifyReplied, sid: st.ID,
			at: st.Posted, fromUser: from, status: &st})
	}
	for _, m := range st.Mentions {
		if m.UID != answered {
			s.queueNotify(ctx, pipe, note{to: m.UID, from: st.UID, kind: protocol.NotifyMentioned, sid: st.ID,
				at: st.Posted, fromUser: from, status: &st})
		}
	}
}

// queueUnconversation queues on pipe the undoing of queueConversation for
// a status being deleted, whose hash reads v (replyFields).
func (s *Service) queueUnconversation(ctx context.Context, pipe redis.Pipeliner, sid int64, v []any) {
	str := func(i int) string { s, _ := v[i].(string); return s }
	uid, _ := strconv.ParseInt(str(0), 10, 64)
	parentID, _ := strconv.ParseInt(str(1), 10, 64)
	answered, _ := strconv.ParseInt(str(2), 10, 64)
	if parentID != 0 {
		pipe.ZRem(ctx, s.keys.replies(parentID), sid)
		s.queueUnnotify(ctx, pipe, note{to: answered, from: uid, kind: protocol.NotifyReplied, sid: sid, replyTo: parentID})
	}
	for _, m := range parseMentions(str(3)) {
		if m.UID != answered {
			s.queueUnnotify(ctx, pipe, note{to: m.UID, from: uid, kind: protocol.NotifyMentioned, sid: sid, replyTo: parentID})
		}
	}
	// UNLINK: a status's replies may be many, and DEL frees them in
	// Redis's one thread, holding up every client meanwhile.
	pipe.Unlink(ctx, s.keys.replies(sid))
}

// replyFields are the fields of a status hash queueUnconversation reads,
// and threadOfDeleted after them.
var replyFields = []string{"uid", "reply_to", "reply_uid", "mentions", "path", "repost_of", "thread"}

// ThreadOf is the thread of status id whose path (its nearest ancestors'
// ids, oldest first) is path, for a status that keeps no thread of its
// own (one that answers none, or was written before threads were kept):
// the id of its conversation's first status, or, more than MaxAncestors
// levels down, of the farthest ancestor it keeps. A thread's channel
// carries its replies and their deletions (bus.Bus.ThreadChannel).
func ThreadOf(id int64, path string) int64 {
	if path == "" {
		return id
	}
	first, _, _ := strings.Cut(path, ",")
	if t, err := strconv.ParseInt(first, 10, 64); err == nil && t > 0 {
		return t
	}
	return id
}

// threadOfDeleted is the thread on whose channel the deletion of status id
// is told, its hash read as v (replyFields), or 0 for none: a repost entry
// is in no thread, and a status whose hash is gone (before a redo) is not
// told.
func threadOfDeleted(id int64, v []any) int64 {
	str := func(i int) string { s, _ := v[i].(string); return s }
	if str(0) == "" || str(5) != "" {
		return 0
	}
	return keptThread(id, str(4), str(6))
}

// answeredOnly is, for a reply to someone else, whose followers alone (and
// that person) get it among its author's followers: Mastodon's rule, so
// that a conversation reaches those who follow both sides. 0 for a status
// every follower gets (not a reply, or a reply to oneself: a thread).
func answeredOnly(st Status) int64 {
	if st.ReplyTo == nil || st.ReplyTo.UID == st.UID {
		return 0
	}
	return st.ReplyTo.UID
}
