package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// The read side of notifications (notify.go stores and takes them back): a
// page of them, resolved when read; the unread count; the read marker.

// Notification is something that happened to a user (protocol.Notification).
type Notification = protocol.Notification

// MaxNotificationsPage is the most notifications one page holds.
const MaxNotificationsPage = 100

var (
	//go:embed notes_unread.lua
	notesUnreadSource string
	notesUnreadScript = newScript(notesUnreadSource)

	//go:embed notes_read.lua
	notesReadSource string
	notesReadScript = newScript(notesReadSource)
)

// NotificationPage is one page of a user's notifications, newest first.
// NextBefore is the cursor of the next page, nil at the end.
type NotificationPage struct {
	Notifications []Notification
	NextBefore    *int64
	// UpTo is the newest notification the page read, shown or left out
	// (a suspended sender's): a reader shown the page has read up to it.
	// Nil for a page that read none.
	UpTo *int64
}

// record is a stored notification as notify.lua writes it: the cause
// ("kind:from:sid") and when, "cause created-ms".
type record struct {
	id, from, sid, created int64
	kind                   string
}

// parseRecord reads the record of notification id; ok is false for one
// that is gone (taken back, or trimmed, since its id was read).
func parseRecord(id int64, v any) (r record, ok bool) {
	s, _ := v.(string)
	cause, created, ok := strings.Cut(s, " ")
	if !ok {
		return record{}, false
	}
	parts := strings.Split(cause, ":")
	if len(parts) != 3 {
		return record{}, false
	}
	r = record{id: id, kind: parts[0]}
	var errs [3]error
	r.from, errs[0] = strconv.ParseInt(parts[1], 10, 64)
	r.sid, errs[1] = strconv.ParseInt(parts[2], 10, 64)
	r.created, errs[2] = strconv.ParseInt(created, 10, 64)
	return r, errors.Join(errs[:]...) == nil
}

// Notifications returns a page of uid's notifications, newest first: up to
// limit (1 to MaxNotificationsPage) of those older than before (0: from the
// newest). Who sent each and the status it concerns are read now, so a
// page shows them as they are: one whose sender or status is gone is left
// out, and the page may hold fewer than limit though more follow
// (NextBefore stays the exact cursor past what was read). A page costs four
// round trips whatever the number of notifications kept: the ids, their
// records, their senders and statuses, the statuses' counts (Decorate).
func (s *Service) Notifications(ctx context.Context, uid, before int64, limit int) (NotificationPage, error) {
	switch {
	case limit < 1 || limit > MaxNotificationsPage:
		return NotificationPage{}, invalid("limit", "must be from 1 to %d", MaxNotificationsPage)
	case before < 0:
		return NotificationPage{}, invalid("before", "must not be negative")
	}
	k := s.keys
	top := "+inf"
	if before > 0 {
		top = "(" + itoa(before)
	}
	members, err := s.rdb.ZRevRangeByScore(ctx, k.notes(uid), &redis.ZRangeBy{Max: top, Min: "-inf", Count: int64(limit) + 1}).Result()
	if err != nil {
		return NotificationPage{}, fmt.Errorf("notifications of %d: %w", uid, err)
	}
	page := NotificationPage{Notifications: []Notification{}}
	ids := parseIDs(members)
	if len(ids) > limit {
		ids = ids[:limit]
		page.NextBefore = &ids[limit-1]
	}
	if len(ids) == 0 {
		return page, nil
	}
	page.UpTo = &ids[0]
	recs, err := s.records(ctx, uid, ids)
	if err != nil {
		return NotificationPage{}, fmt.Errorf("notifications of %d: %w", uid, err)
	}
	users, statuses, err := s.resolve(ctx, uid, recs)
	if err != nil {
		return NotificationPage{}, fmt.Errorf("notifications of %d: %w", uid, err)
	}
	for _, r := range recs {
		from, ok := users[r.from]
		if !ok {
			continue
		}
		n := Notification{ID: r.id, Type: r.kind, From: from, Created: time.UnixMilli(r.created).UTC()}
		if r.sid != 0 {
			st, ok := statuses[r.sid]
			if !ok {
				continue
			}
			n.Status = &st
		}
		page.Notifications = append(page.Notifications, n)
	}
	return page, nil
}

// records reads the records of uid's notifications ids, in order, leaving
// out those gone since.
func (s *Service) records(ctx context.Context, uid int64, ids []int64) ([]record, error) {
	fields := make([]string, len(ids))
	for i, id := range ids {
		fields[i] = itoa(id)
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.noteData(uid), fields...).Result()
	if err != nil {
		return nil, err
	}
	recs := make([]record, 0, len(ids))
	for i, v := range vals {
		if r, ok := parseRecord(ids[i], v); ok {
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// resolve reads the senders and the statuses of recs in one round trip,
// then decorates the statuses for viewer (their counts, and whether the
// viewer liked or reposted them) in another. Those that do not exist, and
// senders (and their statuses) the viewer may not see (visibility.go), are
// not in the maps.
func (s *Service) resolve(ctx context.Context, viewer int64, recs []record) (map[int64]User, map[int64]Status, error) {
	k := s.keys
	pipe := s.rdb.Pipeline()
	userCmds := map[int64]*redis.SliceCmd{}
	statusCmds := map[int64]*redis.SliceCmd{}
	var order []int64 // the statuses in the order first met, so that Decorate's pipeline is built the same way each time
	var senders []int64
	for _, r := range recs {
		if _, ok := userCmds[r.from]; !ok {
			userCmds[r.from] = pipe.HMGet(ctx, k.user(r.from), userFields...)
			senders = append(senders, r.from)
		}
		if _, ok := statusCmds[r.sid]; !ok && r.sid != 0 {
			statusCmds[r.sid] = pipe.HMGet(ctx, k.status(r.sid), statusFields...)
			order = append(order, r.sid)
		}
	}
	hid := s.queueHidden(ctx, pipe, viewer, senders)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, err
	}
	hidden := hid.set()
	users := make(map[int64]User, len(userCmds))
	for id, c := range userCmds {
		if u, ok := parseUser(c.Val()); ok && !u.Suspended && !hidden[id] {
			users[id] = u
		}
	}
	sts := make([]Status, 0, len(order))
	for _, id := range order {
		if st, ok := parseStatus(statusCmds[id].Val()); ok {
			sts = append(sts, st)
		}
	}
	sts, err := s.Decorate(ctx, viewer, sts)
	if err != nil {
		return nil, nil, err
	}
	statuses := make(map[int64]Status, len(sts))
	for _, st := range sts {
		statuses[st.ID] = st
	}
	return users, statuses, nil
}

// UnreadNotifications returns how many of uid's notifications are newer
// than uid's read marker, and the marker (0: none read yet). It costs one
// ZCOUNT, logarithmic in the notifications kept, and writes the count to
// uid's hash, kept for stream openings (notes_unread.lua).
func (s *Service) UnreadNotifications(ctx context.Context, uid int64) (count, lastRead int64, err error) {
	res, err := s.queueUnread(ctx, s.rdb, uid).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("unread count answered %v", res)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("unread notifications of %d: %w", uid, err)
	}
	return res[0], res[1], nil
}

// queueUnread queues on c the count of uid's unread notifications (and the
// read marker), {count, marker}.
func (s *Service) queueUnread(ctx context.Context, c redis.Scripter, uid int64) *redis.Cmd {
	k := s.keys
	return notesUnreadScript.Eval(ctx, c, []string{k.notes(uid), k.notesRead(uid), k.user(uid)})
}

// MarkNotificationsRead moves uid's read marker up to upTo, never back,
// and returns where it stands. A move is told to every stream of uid's, on
// every instance (notifications_read), so every session and device clears
// its unread marks. An upTo under 1, or past the newest notification uid
// was ever given, is refused (an InvalidError of "up_to").
func (s *Service) MarkNotificationsRead(ctx context.Context, uid, upTo int64) (lastRead int64, err error) {
	if upTo < 1 {
		return 0, invalid("up_to", "must be a positive whole number")
	}
	frame, err := json.Marshal(protocol.NotificationsRead{Type: protocol.TypeNotificationsRead, LastRead: upTo})
	if err != nil {
		return 0, err
	}
	k := s.keys
	res, err := notesReadScript.Run(ctx, s.rdb, []string{k.notesRead(uid), k.noteSeq(uid), k.user(uid)},
		upTo, s.bus.Command(), s.bus.UserChannel(uid), frame).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("read marker answered %v", res)
	}
	if err != nil {
		return 0, fmt.Errorf("mark notifications of %d read: %w", uid, err)
	}
	if res[0] == -1 {
		return res[1], invalid("up_to", "is past your newest notification")
	}
	return res[1], nil
}
