package social

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// MaxNotifications is how many notifications a user keeps: the newest.
const MaxNotifications = 1000

var (
	//go:embed notify.lua
	notifySource string
	notifyScript = newScript(notifySource)

	//go:embed unnotify.lua
	unnotifySource string
	unnotifyScript = newScript(unnotifySource)
)

// note is a notification to store, or to take back: to is told that from
// did kind (a protocol.Notify* constant) about status sid (0 for a follow).
// Its cause, kind, from and sid together, names it: one notification per
// cause, which an undo takes back.
type note struct {
	to, from int64
	kind     string
	sid      int64
	at       time.Time // when it happened; zero: now, by this instance's clock

	// For the live frame: the sender and the status concerned (nil for a
	// follow).
	fromUser protocol.User
	status   *protocol.Status

	// replyTo is, for a reply's notifications, the status it answers:
	// the frame of their undoing names it, its replies count changed.
	replyTo int64

	// quiet takes it back without a notification_removed frame: for the
	// cleanup of a deleted status, whose status_deleted frame tells the
	// recipient (its author) already, and whose likes would otherwise send
	// a burst of frames, one per like, to the author's streams.
	quiet bool
}

// cause is the name of what n tells of.
func (n note) cause() string { return n.kind + ":" + itoa(n.from) + ":" + itoa(n.sid) }

// queueNotify queues on pipe the storing of n, and its live frame to n.to's
// streams; nothing when n.to is n.from, or n.to mutes or blocks n.from.
// Storing it again, as a job's redo does, changes nothing.
func (s *Service) queueNotify(ctx context.Context, pipe redis.Pipeliner, n note) {
	if keys, args, ok := s.notifyCall(n); ok {
		notifyScript.Eval(ctx, pipe, keys, args...)
	}
}

// notifyCall returns the keys and arguments of notify.lua storing n, and
// false when nothing is to be stored (n.to is n.from, or no one).
func (s *Service) notifyCall(n note) (keys []string, args []any, ok bool) {
	if n.to == n.from || n.to == 0 {
		return nil, nil, false
	}
	at := n.at
	if at.IsZero() {
		at = time.Now()
	}
	at = at.UTC().Truncate(time.Millisecond)
	frame, err := json.Marshal(protocol.NotificationFrame{Type: protocol.TypeNotification, Notification: protocol.Notification{
		Type: n.kind, From: n.fromUser, Status: n.status, Created: at,
	}})
	if err != nil {
		return nil, nil, false // a Status and a User always marshal
	}
	prefix, suffix := splitID(frame)
	k := s.keys
	return []string{k.notes(n.to), k.noteData(n.to), k.noteCauses(n.to), k.noteSeq(n.to), k.mutes(n.to), k.blocks(n.to), k.user(n.to), k.blockedBy(n.to)},
		[]any{n.cause(), at.UnixMilli(), n.from, MaxNotifications, s.bus.Command(), s.bus.UserChannel(n.to), prefix, suffix}, true
}

// queueUnnotify queues on pipe the taking back of the notification of n's
// cause (to, from, kind, sid, replyTo and quiet are read), telling n.to's
// streams unless n is quiet.
func (s *Service) queueUnnotify(ctx context.Context, pipe redis.Pipeliner, n note) {
	if n.to == n.from || n.to == 0 {
		return
	}
	removed := protocol.NotificationRemoved{Type: protocol.TypeNotificationRemoved}
	switch n.kind {
	case protocol.NotifyLiked, protocol.NotifyReposted:
		removed.CountsOf = n.sid
	case protocol.NotifyReplied, protocol.NotifyMentioned:
		removed.CountsOf = n.replyTo
	}
	frame, _ := json.Marshal(removed)
	prefix, suffix := splitID(frame)
	command, channel := s.bus.Command(), s.bus.UserChannel(n.to)
	if n.quiet {
		command, channel = "", ""
	}
	k := s.keys
	unnotifyScript.Eval(ctx, pipe, []string{k.notes(n.to), k.noteData(n.to), k.noteCauses(n.to), k.user(n.to)},
		n.cause(), command, channel, prefix, suffix)
}

// splitID cuts a frame whose object carries "id":0 around that 0, so that a
// script can splice the id it gives.
func splitID(frame []byte) (prefix, suffix string) {
	const field = `"id":0`
	i := bytes.Index(frame, []byte(field))
	if i < 0 {
		return string(frame), ""
	}
	i += len(field) - 1
	return string(frame[:i]), string(frame[i+1:])
}
