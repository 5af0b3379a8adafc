package social

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// notifyNow stores n, as a write's pipeline does.
func notifyNow(tb testing.TB, s *Service, n note) {
	tb.Helper()
	pipe := s.rdb.Pipeline()
	s.queueNotify(ctxT(tb), pipe, n)
	if _, err := pipe.Exec(ctxT(tb)); err != nil && !errors.Is(err, redis.Nil) {
		tb.Fatal(err)
	}
}

// unnotifyNow takes n back, as an undo's pipeline does.
func unnotifyNow(tb testing.TB, s *Service, n note) {
	tb.Helper()
	pipe := s.rdb.Pipeline()
	s.queueUnnotify(ctxT(tb), pipe, n)
	if _, err := pipe.Exec(ctxT(tb)); err != nil && !errors.Is(err, redis.Nil) {
		tb.Fatal(err)
	}
}

// likeNote is the note of from liking st.
func likeNote(from User, st Status) note {
	return note{to: st.UID, from: from.ID, kind: protocol.NotifyLiked, sid: st.ID, fromUser: from, status: &st}
}

// noteFrame is a frame about notifications, as published.
type noteFrame struct {
	Type         string                 `json:"type"`
	Notification *protocol.Notification `json:"notification"`
	ID           int64                  `json:"id"`
	IDs          []int64                `json:"ids"`
	LastRead     *int64                 `json:"last_read"`
	CountsOf     int64                  `json:"counts_of"`
}

// noteFramesSoFar returns the notification frames published on l's
// channels since the last read, by channel (see payloadsSoFar).
func noteFramesSoFar(tb testing.TB, l *listener) map[string][]noteFrame {
	tb.Helper()
	out := map[string][]noteFrame{}
	for channel, payloads := range payloadsSoFar(tb, l) {
		for _, p := range payloads {
			var f noteFrame
			if err := json.Unmarshal([]byte(p), &f); err != nil {
				tb.Fatalf("frame on %s: %v: %s", channel, err, p)
			}
			switch f.Type {
			case protocol.TypeNotification, protocol.TypeNotificationRemoved, protocol.TypeNotificationsRemoved, protocol.TypeNotificationsRead:
				out[channel] = append(out[channel], f)
			}
		}
	}
	return out
}

// noteSizes returns the sizes of uid's ids, records and causes.
func noteSizes(tb testing.TB, s *Service, uid int64) [3]int64 {
	tb.Helper()
	ctx := ctxT(tb)
	pipe := s.rdb.Pipeline()
	ids := pipe.ZCard(ctx, s.keys.notes(uid))
	data := pipe.HLen(ctx, s.keys.noteData(uid))
	causes := pipe.HLen(ctx, s.keys.noteCauses(uid))
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
	return [3]int64{ids.Val(), data.Val(), causes.Val()}
}

func notificationIDs(ns []Notification) []int64 {
	ids := make([]int64, len(ns))
	for i, n := range ns {
		ids[i] = n.ID
	}
	return ids
}

// A notification is stored once per cause however often it is stored (a
// job's redo), with one frame carrying the id the store gave; taking it
// back removes it, with one frame, however often; a user is never told of
// their own doing.
func TestNotifyOncePerCause(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	st := post(t, s, ann.ID, "hello")
	l := listen(t, s, rdb, s.UserChannel(ann.ID), s.UserChannel(bob.ID))

	n := likeNote(bob, st)
	notifyNow(t, s, n)
	notifyNow(t, s, n)
	notifyNow(t, s, likeNote(ann, st)) // her own like
	if got := noteSizes(t, s, ann.ID); got != [3]int64{1, 1, 1} {
		t.Fatalf("ann's ids, records, causes: %v after one cause stored twice; want 1 each", got)
	}
	page, err := s.Notifications(ctxT(t), ann.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Notifications) != 1 {
		t.Fatalf("ann's page holds %d notifications, want 1", len(page.Notifications))
	}
	got := page.Notifications[0]
	if got.Type != protocol.NotifyLiked || got.From.ID != bob.ID || got.From.Login != "bob" || got.Status == nil || got.Status.ID != st.ID {
		t.Fatalf("ann's notification %+v, want bob's like of %d", got, st.ID)
	}
	frames := noteFramesSoFar(t, l)
	if f := frames[s.UserChannel(ann.ID)]; len(f) != 1 || f[0].Type != protocol.TypeNotification ||
		f[0].Notification == nil || f[0].Notification.ID != got.ID || f[0].Notification.From.Login != "bob" ||
		f[0].Notification.Status == nil || f[0].Notification.Status.ID != st.ID {
		t.Fatalf("ann's channel got %+v, want one notification frame of id %d", f, got.ID)
	}
	if f := frames[s.UserChannel(bob.ID)]; len(f) != 0 {
		t.Fatalf("bob's channel got %+v, want nothing", f)
	}

	unnotifyNow(t, s, n)
	unnotifyNow(t, s, n)
	if got := noteSizes(t, s, ann.ID); got != [3]int64{} {
		t.Fatalf("ann's ids, records, causes: %v after the like was taken back; want none", got)
	}
	if f := noteFramesSoFar(t, l)[s.UserChannel(ann.ID)]; len(f) != 1 || f[0].Type != protocol.TypeNotificationRemoved || f[0].ID != got.ID {
		t.Fatalf("ann's channel got %+v, want one notification_removed of %d", f, got.ID)
	}
}

// A user keeps the newest MaxNotifications: storing 10 more takes the
// oldest 10 out of all three keys, their causes with them, so those causes
// could be stored again.
func TestNotificationsKeepNewest(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	const stored = MaxNotifications + 10
	for start := 0; start < stored; start += 500 {
		pipe := s.rdb.Pipeline()
		for sid := start + 1; sid <= min(stored, start+500); sid++ {
			s.queueNotify(ctx, pipe, note{to: ann.ID, from: bob.ID, kind: protocol.NotifyLiked, sid: int64(sid), fromUser: bob})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := noteSizes(t, s, ann.ID), [3]int64{MaxNotifications, MaxNotifications, MaxNotifications}; got != want {
		t.Fatalf("ann's ids, records, causes after %d stored: %v; want %v", stored, got, want)
	}
	causes, err := s.rdb.HKeys(ctx, s.keys.noteCauses(ann.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for sid := 1; sid <= 10; sid++ {
		if slices.Contains(causes, fmt.Sprintf("liked:%d:%d", bob.ID, sid)) {
			t.Errorf("the cause of trimmed notification %d is still kept", sid)
		}
	}
	if !slices.Contains(causes, fmt.Sprintf("liked:%d:%d", bob.ID, 11)) {
		t.Errorf("the cause of the oldest notification kept is gone")
	}
	oldest, err := s.rdb.ZRangeWithScores(ctx, s.keys.notes(ann.ID), 0, 0).Result()
	if err != nil || len(oldest) != 1 || oldest[0].Score != 11 {
		t.Fatalf("oldest id kept %v, %v; want 11", oldest, err)
	}
}

// A notification from someone the user mutes or blocks, or who blocks the
// user (a mention by them, say), is not stored (the mute and block writers
// come later; their keys are written here by hand).
func TestNotifyMutedAndBlocked(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob, cat, dan, eve := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat"), signUp(t, s, "dan"), signUp(t, s, "eve")
	st := post(t, s, ann.ID, "hello")
	if err := s.rdb.ZAdd(ctx, s.keys.mutes(ann.ID), redis.Z{Score: 1, Member: bob.ID}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.ZAdd(ctx, s.keys.blocks(ann.ID), redis.Z{Score: 1, Member: cat.ID}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.ZAdd(ctx, s.keys.blockedBy(ann.ID), redis.Z{Score: 1, Member: eve.ID}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, from := range []User{bob, cat, dan, eve} {
		notifyNow(t, s, likeNote(from, st))
	}
	page, err := s.Notifications(ctx, ann.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Notifications) != 1 || page.Notifications[0].From.ID != dan.ID {
		t.Fatalf("ann's notifications %+v, want dan's alone", page.Notifications)
	}
	if got := noteSizes(t, s, ann.ID); got != [3]int64{1, 1, 1} {
		t.Fatalf("ann's ids, records, causes: %v; want 1 each", got)
	}
}

// noteIDsFrom returns the ids of uid's newest notifications (a page of
// 100) that from sent, newest first.
func noteIDsFrom(tb testing.TB, s *Service, uid, from int64) []int64 {
	tb.Helper()
	page, err := s.Notifications(ctxT(tb), uid, 0, 100)
	if err != nil {
		tb.Fatal(err)
	}
	var ids []int64
	for _, n := range page.Notifications {
		if n.From.ID == from {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// A mute takes out the notifications from the muted one stored before it,
// so that the unread count holds none that the pages hide, and tells the
// muter's streams which went, in one frame; the others stay, and an unmute
// restores none. A mute that takes none out tells no one.
func TestMuteTakesTheMutedsNotificationsOut(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob, dan := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "dan")
	st := post(t, s, ann.ID, "hello")
	for _, from := range []User{bob, dan} {
		notifyNow(t, s, likeNote(from, st))
	}
	follow(t, s, bob.ID, "ann")
	if count, _, err := s.UnreadNotifications(ctx, ann.ID); err != nil || count != 3 {
		t.Fatalf("ann's unread before the mute: %d, %v; want 3", count, err)
	}
	bobs := noteIDsFrom(t, s, ann.ID, bob.ID)
	l := listen(t, s, rdb, s.UserChannel(ann.ID), s.UserChannel(bob.ID))
	if err := s.Mute(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	frames := noteFramesSoFar(t, l)
	if f := frames[s.UserChannel(ann.ID)]; len(f) != 1 || f[0].Type != protocol.TypeNotificationsRemoved ||
		!slices.Equal(slices.Sorted(slices.Values(f[0].IDs)), slices.Sorted(slices.Values(bobs))) {
		t.Fatalf("ann's channel got %+v, want one notifications_removed of %v", f, bobs)
	}
	if f := frames[s.UserChannel(bob.ID)]; len(f) != 0 {
		t.Fatalf("bob's channel got %+v, want nothing", f)
	}
	if err := s.Unmute(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if count, _, err := s.UnreadNotifications(ctx, ann.ID); err != nil || count != 1 {
		t.Fatalf("ann's unread after the mute: %d, %v; want dan's alone", count, err)
	}
	if got := noteSizes(t, s, ann.ID); got != [3]int64{1, 1, 1} {
		t.Fatalf("ann's ids, records, causes: %v; want dan's alone", got)
	}
	if err := s.Mute(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if f := noteFramesSoFar(t, l); len(f) != 0 {
		t.Fatalf("a mute that took nothing out sent %+v, want nothing", f)
	}
}

// A block takes out each one's notifications from the other, and tells
// the blocker's streams which of theirs went, not the blocked one's (nobody
// is told they are blocked); the notifications from others stay. A block
// made again, with nothing to take out, tells no one.
func TestBlockTakesNotificationsOutBothWays(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob, dan := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "dan")
	annSt, bobSt := post(t, s, ann.ID, "ann's"), post(t, s, bob.ID, "bob's")
	notifyNow(t, s, likeNote(bob, annSt))
	notifyNow(t, s, likeNote(dan, annSt))
	notifyNow(t, s, likeNote(ann, bobSt))
	annFromBob, bobFromAnn := noteIDsFrom(t, s, ann.ID, bob.ID), noteIDsFrom(t, s, bob.ID, ann.ID)
	if len(annFromBob) != 1 || len(bobFromAnn) != 1 {
		t.Fatalf("before the block: ann's from bob %v, bob's from ann %v; want one each", annFromBob, bobFromAnn)
	}
	l := listen(t, s, rdb, s.UserChannel(ann.ID), s.UserChannel(bob.ID), s.UserChannel(dan.ID))
	if err := s.Block(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	frames := noteFramesSoFar(t, l)
	if f := frames[s.UserChannel(ann.ID)]; len(f) != 1 || f[0].Type != protocol.TypeNotificationsRemoved || !slices.Equal(f[0].IDs, annFromBob) {
		t.Fatalf("ann's channel got %+v, want one notifications_removed of %v", f, annFromBob)
	}
	for _, u := range []User{bob, dan} {
		if f := frames[s.UserChannel(u.ID)]; len(f) != 0 {
			t.Fatalf("%s's channel got %+v, want nothing", u.Login, f)
		}
	}
	if got := noteIDsFrom(t, s, bob.ID, ann.ID); len(got) != 0 {
		t.Fatalf("bob's notifications from ann after the block: %v, want none", got)
	}
	if got := noteIDsFrom(t, s, ann.ID, dan.ID); len(got) != 1 {
		t.Fatalf("ann's notifications from dan after the block: %v, want one", got)
	}
	if err := s.Block(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if f := noteFramesSoFar(t, l); len(f) != 0 {
		t.Fatalf("a block made again sent %+v, want nothing", f)
	}
}

// A page reads newest first with an exact cursor; a notification whose
// status was deleted is left out, and the page past it is not moved by it.
func TestNotificationsPage(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ann := signUp(t, s, "ann")
	var sts []Status
	var likers []User
	for i := range 5 {
		likers = append(likers, signUp(t, s, fmt.Sprintf("liker%d", i)))
		sts = append(sts, post(t, s, ann.ID, fmt.Sprintf("post %d", i)))
	}
	for i := range 5 {
		notifyNow(t, s, likeNote(likers[i], sts[i])) // ids 1..5
	}
	follow(t, s, likers[0].ID, "ann") // id 6, no status

	page, err := s.Notifications(ctx, ann.ID, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := notificationIDs(page.Notifications); !slices.Equal(got, []int64{6, 5}) || page.NextBefore == nil || *page.NextBefore != 5 {
		t.Fatalf("first page %v, next %v; want [6 5], 5", got, page.NextBefore)
	}
	if n := page.Notifications[0]; n.Type != protocol.NotifyFollowed || n.Status != nil || n.From.ID != likers[0].ID || n.From.Followers != 0 || n.From.Following != 1 {
		t.Fatalf("newest %+v, want liker0's follow, read as liker0 is now", n)
	}
	if n := page.Notifications[1]; n.Status == nil || n.Status.Message != "post 4" || n.Status.Likes != 0 || n.Status.Liked == nil {
		t.Fatalf("second %+v, want the like of post 4, decorated for ann", n)
	}

	// Post 3 goes: the next page skips its like, and ends at the cursor
	// past what it read.
	if err := s.DeleteStatus(ctx, ann.ID, sts[3].ID); err != nil {
		t.Fatal(err)
	}
	page, err = s.Notifications(ctx, ann.ID, *page.NextBefore, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := notificationIDs(page.Notifications); !slices.Equal(got, []int64{3}) || page.NextBefore == nil || *page.NextBefore != 3 {
		t.Fatalf("second page %v, next %v; want [3] (4 left out), 3", got, page.NextBefore)
	}
	page, err = s.Notifications(ctx, ann.ID, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := notificationIDs(page.Notifications); !slices.Equal(got, []int64{2, 1}) || page.NextBefore != nil {
		t.Fatalf("last page %v, next %v; want [2 1], none", got, page.NextBefore)
	}

	for _, bad := range []struct {
		before int64
		limit  int
	}{{0, 0}, {0, MaxNotificationsPage + 1}, {-1, 10}} {
		var inv *InvalidError
		if _, err := s.Notifications(ctx, ann.ID, bad.before, bad.limit); !errors.As(err, &inv) {
			t.Errorf("Notifications(before %d, limit %d): %v; want an InvalidError", bad.before, bad.limit, err)
		}
	}
	empty, err := s.Notifications(ctx, likers[1].ID, 0, 10)
	if err != nil || empty.Notifications == nil || len(empty.Notifications) != 0 || empty.NextBefore != nil {
		t.Fatalf("a user with none: %+v, %v; want an empty page", empty, err)
	}
}

// The read marker: the unread count is of the ids past it; it moves
// forward only, refuses an id under 1 or past the newest given, and tells
// the user's streams each time it moves.
func TestNotificationsReadMarker(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	for i := range 4 {
		notifyNow(t, s, likeNote(bob, post(t, s, ann.ID, fmt.Sprintf("post %d", i))))
	}
	unread := func(wantCount, wantLast int64) {
		t.Helper()
		count, last, err := s.UnreadNotifications(ctx, ann.ID)
		if err != nil || count != wantCount || last != wantLast {
			t.Fatalf("unread %d, last read %d, %v; want %d, %d", count, last, err, wantCount, wantLast)
		}
		if o := openingOf(t, s, ann.ID, "none"); o.Unread != wantCount || o.User.Login != "ann" {
			t.Fatalf("stream opening: %+v; want ann, %d unread", o, wantCount)
		}
	}
	unread(4, 0)
	l := listen(t, s, rdb, s.UserChannel(ann.ID))

	for _, step := range []struct {
		upTo, wantLast int64
		refused        bool
	}{{2, 2, false}, {1, 2, false}, {2, 2, false}, {5, 2, true}, {0, 2, true}, {-3, 2, true}, {4, 4, false}} {
		last, err := s.MarkNotificationsRead(ctx, ann.ID, step.upTo)
		var inv *InvalidError
		if refused := errors.As(err, &inv) && inv.Field == "up_to"; refused != step.refused || (!refused && err != nil) {
			t.Fatalf("read up to %d: %v; want refused %v", step.upTo, err, step.refused)
		}
		if !step.refused && last != step.wantLast {
			t.Fatalf("read up to %d: marker %d, want %d", step.upTo, last, step.wantLast)
		}
	}
	unread(0, 4)
	var moved []int64
	for _, f := range noteFramesSoFar(t, l)[s.UserChannel(ann.ID)] {
		if f.Type == protocol.TypeNotificationsRead && f.LastRead != nil {
			moved = append(moved, *f.LastRead)
		}
	}
	if !slices.Equal(moved, []int64{2, 4}) {
		t.Fatalf("notifications_read frames told %v, want [2 4] (one per move)", moved)
	}

	// A notification taken back is no longer unread; a new one is.
	notifyNow(t, s, likeNote(bob, post(t, s, ann.ID, "post 4")))
	unread(1, 4)
	if _, err := s.MarkNotificationsRead(ctx, bob.ID, 1); err == nil {
		t.Fatal("bob, who has no notifications, read up to 1")
	}
}

// Following and unfollowing, again and again, leaves at most one followed
// notification: a follow stores it, an unfollow takes it back; a follow
// and an unfollow racing end with the notification agreeing with the
// follow.
func TestFollowNotification(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	l := listen(t, s, rdb, s.UserChannel(bob.ID))
	for range 5 {
		follow(t, s, ann.ID, "bob")
		if _, err := s.Unfollow(ctx, ann.ID, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if got := noteSizes(t, s, bob.ID); got != [3]int64{} {
		t.Fatalf("bob's ids, records, causes after ann's last unfollow: %v; want none", got)
	}
	follow(t, s, ann.ID, "bob")
	follow(t, s, ann.ID, "bob") // again: no second one
	if got := noteSizes(t, s, bob.ID); got != [3]int64{1, 1, 1} {
		t.Fatalf("bob's ids, records, causes after ann followed: %v; want 1 each", got)
	}
	page, err := s.Notifications(ctx, bob.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Notifications) != 1 || page.Notifications[0].Type != protocol.NotifyFollowed || page.Notifications[0].From.Login != "ann" {
		t.Fatalf("bob's notifications %+v, want ann's follow", page.Notifications)
	}
	var added, removed int
	for _, f := range noteFramesSoFar(t, l)[s.UserChannel(bob.ID)] {
		switch f.Type {
		case protocol.TypeNotification:
			added++
			if n := f.Notification; n.From.Login != "ann" || n.From.Name != "Name of ann" || n.Status != nil || n.Type != protocol.NotifyFollowed {
				t.Errorf("notification frame %+v, want ann's follow", n)
			}
		case protocol.TypeNotificationRemoved:
			removed++
		}
	}
	if added != 6 || removed != 5 {
		t.Fatalf("bob's streams were told of %d notifications and %d taken back; want 6 and 5", added, removed)
	}

	// Follows and unfollows of one pair at once: whatever wins, the
	// notification is there exactly when the follow is.
	cat := signUp(t, s, "cat")
	for round := range 10 {
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				var err error
				if (i+round)%2 == 0 {
					_, _, err = s.Follow(ctx, cat.ID, "bob")
				} else {
					_, err = s.Unfollow(ctx, cat.ID, "bob")
				}
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		follows, err := rdb.ZScore(ctx, s.keys.followers(bob.ID), itoa(cat.ID)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		stored, err := rdb.HExists(ctx, s.keys.noteCauses(bob.ID), fmt.Sprintf("followed:%d:0", cat.ID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if (follows != 0) != stored {
			t.Fatalf("round %d: cat follows bob: %v, notification stored: %v", round, follows != 0, stored)
		}
	}
}

// Deleting a status takes the notifications of its likes and reposts
// back, so the unread count has none that no page shows; quietly, as the
// author's streams have the status_deleted frame, and one frame per like
// would be a burst.
func TestDeletedStatusTakesItsReactionsBack(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	startWorker(t, s, "w")
	ctx := ctxT(t)
	ann, bob, cat := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat")
	gone, kept := post(t, s, ann.ID, "to be deleted"), post(t, s, ann.ID, "to be kept")
	for _, st := range []Status{gone, kept} {
		for _, u := range []User{bob, cat} {
			if _, err := s.Like(ctx, u.ID, st.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Repost(ctx, u.ID, st.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if count, _, err := s.UnreadNotifications(ctx, ann.ID); err != nil || count != 8 {
		t.Fatalf("ann's unread %d, %v; want 8", count, err)
	}
	l := listen(t, s, rdb, s.UserChannel(ann.ID))
	if err := s.DeleteStatus(ctx, ann.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	testio.Eventually(t, time.Minute, func() string {
		if got := noteSizes(t, s, ann.ID); got != [3]int64{4, 4, 4} {
			return fmt.Sprintf("ann's ids, records, causes %v, want 4 each (the kept status's likes and reposts)", got)
		}
		return ""
	})
	if count, _, err := s.UnreadNotifications(ctx, ann.ID); err != nil || count != 4 {
		t.Fatalf("ann's unread %d, %v; want 4", count, err)
	}
	page, err := s.Notifications(ctx, ann.ID, 0, 10)
	if err != nil || len(page.Notifications) != 4 {
		t.Fatalf("ann's page %+v, %v; want the two likes and two reposts of the kept status", page.Notifications, err)
	}
	for _, n := range page.Notifications {
		if n.Status == nil || n.Status.ID != kept.ID {
			t.Fatalf("ann's page holds %+v, want only notifications of the kept status", n)
		}
	}
	if f := noteFramesSoFar(t, l)[s.UserChannel(ann.ID)]; len(f) != 0 {
		t.Fatalf("ann's streams were told %+v, want nothing (the status_deleted frame tells)", f)
	}
}

// The live frame of a like or a repost carries the status as a read of it
// by its author shows it: the counts of the moment, this like or repost
// included, and the author's own liked and reposted (docs/API.md,
// "Notifications").
func TestReactionFramesCarryCounts(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ann, bob, cat := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat")
	st := post(t, s, ann.ID, "counted")
	if _, err := s.Like(ctxT(t), ann.ID, st.ID); err != nil { // her own: no notification
		t.Fatal(err)
	}
	if _, err := s.Reply(ctxT(t), cat.ID, st.ID, "a reply"); err != nil {
		t.Fatal(err)
	}
	l := listen(t, s, rdb, s.UserChannel(ann.ID))
	if _, err := s.Like(ctxT(t), bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Repost(ctxT(t), bob.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	var got []protocol.Status
	for _, f := range noteFramesSoFar(t, l)[s.UserChannel(ann.ID)] {
		if f.Type == protocol.TypeNotification && f.Notification.Status != nil {
			got = append(got, *f.Notification.Status)
		}
	}
	if len(got) != 2 {
		t.Fatalf("ann's channel told %d notifications with a status, want 2 (bob's like and repost)", len(got))
	}
	like, repost := got[0], got[1]
	if like.ID != st.ID || like.Likes != 2 || like.Replies != 1 || like.Reposts != 0 || like.Liked == nil || !*like.Liked || like.Reposted == nil || *like.Reposted {
		t.Errorf("the like's frame shows %+v: want %d with 2 likes (hers among them), 1 reply, no repost", like, st.ID)
	}
	if repost.ID != st.ID || repost.Likes != 2 || repost.Reposts != 1 || repost.Liked == nil || !*repost.Liked {
		t.Errorf("the repost's frame shows %+v: want %d with 2 likes and 1 repost", repost, st.ID)
	}
}

// The frame of a notification taken back names the status whose counts
// the undoing changed, for a client showing it to read it again though
// it never saw the notification come: the status unliked or unreposted,
// the post a deleted reply answered (to the one answered and to the one
// it mentioned); nothing for an unfollow.
func TestNotificationRemovedNamesTheCountsItChanged(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob, cat := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat")
	startWorker(t, s, "w")
	st := post(t, s, ann.ID, "worth a like")
	l := listen(t, s, rdb, s.UserChannel(ann.ID), s.UserChannel(cat.ID))
	for _, step := range []func() error{
		func() error { _, err := s.Like(ctx, bob.ID, st.ID); return err },
		func() error { _, err := s.Unlike(ctx, bob.ID, st.ID); return err },
		func() error { _, err := s.Repost(ctx, bob.ID, st.ID); return err },
		func() error { _, err := s.Unrepost(ctx, bob.ID, st.ID); return err },
		func() error { return s.DeleteStatus(ctx, bob.ID, reply(t, s, bob.ID, st.ID, "agreed, @cat?").ID) },
		func() error { follow(t, s, bob.ID, "ann"); return nil },
		func() error { _, err := s.Unfollow(ctx, bob.ID, "ann"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	waitJobsDone(t, s)
	frames := noteFramesSoFar(t, l)
	removed := func(uid int64) []int64 {
		var out []int64
		for _, f := range frames[s.UserChannel(uid)] {
			if f.Type == protocol.TypeNotificationRemoved {
				out = append(out, f.CountsOf)
			}
		}
		return out
	}
	// ann: the unlike, the unrepost, the reply deleted, the unfollow.
	if got, want := removed(ann.ID), []int64{st.ID, st.ID, st.ID, 0}; !slices.Equal(got, want) {
		t.Errorf("ann's notification_removed frames name %v, want %v", got, want)
	}
	// cat: the mention in the reply deleted.
	if got, want := removed(cat.ID), []int64{st.ID}; !slices.Equal(got, want) {
		t.Errorf("cat's notification_removed frames name %v, want %v", got, want)
	}
}
