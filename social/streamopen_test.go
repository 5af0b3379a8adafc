package social

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// openingOf reads uid's stream opening alone, with session.
func openingOf(tb testing.TB, s *Service, uid int64, session string) StreamOpening {
	tb.Helper()
	os, err := s.StreamOpenings(ctxT(tb), []StreamKey{{UID: uid, Session: session}})
	if err != nil || len(os) != 1 {
		tb.Fatalf("StreamOpenings of %d: %v, %v", uid, os, err)
	}
	return os[0]
}

// The streams opening at once read their sessions' owners, pulled authors,
// users, unread counts and whom they may not see in one round trip, each
// its own, once their users' counts are kept; counting them takes one script call more, each
// user once, and writes no hash for a user who is not there.
func TestStreamOpeningsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	s, rdb := newPrivateService(t, Options{PullThreshold: 3})
	ctx := ctxT(t)
	w := newPullWorld(t, s)
	reader := w.followers[0] // follows big (pulled) and small (pushed)
	_, token := signUpToken(t, s, "ann")
	ann, err := s.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	notifyNow(t, s, likeNote(reader, post(t, s, ann, "liked")))
	// The reader: three notifications, the first read, so that each
	// opening's count is its own.
	for _, text := range []string{"one", "two", "three"} {
		notifyNow(t, s, likeNote(User{ID: ann, Login: "ann"}, post(t, s, reader.ID, text)))
	}
	if _, err := s.MarkNotificationsRead(ctx, reader.ID, 1); err != nil {
		t.Fatal(err)
	}
	if n, read, err := s.UnreadNotifications(ctx, reader.ID); err != nil || n != 2 || read != 1 {
		t.Fatalf("the reader's unread count: %d past %d, %v; want 2 past 1", n, read, err)
	}
	// ann mutes big: she may not see them.
	if err := s.Mute(ctx, ann, w.big.Login); err != nil {
		t.Fatal(err)
	}
	_, gone := signUpToken(t, s, "gone")
	if err := s.SignOut(ctx, gone); err != nil {
		t.Fatal(err)
	}

	keys := []StreamKey{
		{UID: ann, Session: SessionID(token)},
		{UID: reader.ID, Session: SessionID(token)}, // ann's session, not the reader's
		{UID: ann, Session: SessionID(gone)},        // signed out
		{UID: 999_999, Session: SessionID(token)},   // no such user
		{UID: reader.ID, Session: SessionID(gone)},  // the reader twice in one batch
	}
	if err := rdb.HDel(ctx, s.keys.user(reader.ID), "unread").Err(); err != nil {
		t.Fatal(err)
	}
	// The first batch counts the unread notifications (a second round trip,
	// each user once) and reads whom ann hides, in the same round trip;
	// the next reads the counts kept with the users, and still whom ann
	// hides; without ann's own opening, no opening's user hides anyone.
	counter := &commandCounter{}
	rdb.AddHook(counter)
	for _, want := range []struct {
		keys                 []StreamKey
		roundTrips, commands int64
	}{{keys, 2, 4*5 + 1 + 3}, {keys, 2, 4*5 + 3}, {keys[1:], 1, 4 * 4}} {
		trips, commands := counter.roundTrips.Load(), counter.commands.Load()
		os, err := s.StreamOpenings(ctx, want.keys)
		if err != nil {
			t.Fatal(err)
		}
		trips, commands = counter.roundTrips.Load()-trips, counter.commands.Load()-commands
		if trips != want.roundTrips || commands != want.commands {
			t.Errorf("%d round trips, %d commands for %d openings; want %d, %d", trips, commands, len(want.keys), want.roundTrips, want.commands)
		}
		if len(want.keys) == len(keys) {
			checkOpenings(t, os, ann, reader.ID, w.big.ID)
		}
	}
	// Counted for a user who is not there (gone since the HMGET): no hash.
	if n, _, err := s.UnreadNotifications(ctx, 999_999); err != nil || n != 0 {
		t.Errorf("no user's unread count: %d, %v", n, err)
	}
	if n := rdb.Exists(ctx, s.keys.user(999_999)).Val(); n != 0 {
		t.Errorf("a hash for a user who is not there")
	}
}

// A count kept for stream openings is the count now, whatever changed the
// notifications or the marker since it was kept: a notification stored,
// taken back, read, or dropped with its sender's block.
func TestUnreadCountKeptExact(t *testing.T) {
	t.Parallel()
	s, rdb := newPrivateService(t, Options{})
	ctx := ctxT(t)
	ann, bob, carl, dave := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "carl"), signUp(t, s, "dave")
	st := post(t, s, ann.ID, "to like")
	like := func(u User) func() error {
		return func() error { _, err := s.Like(ctx, u.ID, st.ID); return err }
	}
	steps := []struct {
		what   string
		do     func() error
		unread int64
	}{
		{"bob likes", like(bob), 1},
		{"carl likes", like(carl), 2},
		{"bob takes his like back", func() error { _, err := s.Unlike(ctx, bob.ID, st.ID); return err }, 1},
		{"ann reads them", func() error {
			newest, err := rdb.Get(ctx, s.keys.noteSeq(ann.ID)).Int64()
			if err == nil {
				_, err = s.MarkNotificationsRead(ctx, ann.ID, newest)
			}
			return err
		}, 0},
		{"dave likes", like(dave), 1},
		{"ann blocks dave", func() error { return s.Block(ctx, ann.ID, "dave") }, 0},
	}
	if o := openingOf(t, s, ann.ID, "none"); o.Unread != 0 {
		t.Fatalf("before any notification: %d unread", o.Unread)
	}
	for _, step := range steps {
		if kept, err := rdb.HGet(ctx, s.keys.user(ann.ID), "unread").Result(); err != nil {
			t.Fatalf("before %q: the count kept: %q, %v", step.what, kept, err)
		}
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if o := openingOf(t, s, ann.ID, "none"); o.Unread != step.unread {
			t.Errorf("after %s: an opening counts %d unread; want %d", step.what, o.Unread, step.unread)
		}
	}
}

// checkOpenings checks the openings of TestStreamOpeningsInOneRoundTrip.
func checkOpenings(t *testing.T, os []StreamOpening, ann, reader, big int64) {
	t.Helper()
	if o := os[0]; o.Owner != ann || o.User.Login != "ann" || o.Unread != 1 || len(o.Pulled) != 0 ||
		!slices.Equal(o.Hidden, []int64{big}) {
		t.Errorf("ann's opening: %+v; want her session, herself, 1 unread, no pulled author, big hidden", o)
	}
	if o := os[1]; o.Owner != ann || o.User.ID != reader || o.Unread != 2 || !slices.Equal(o.Pulled, []int64{big}) ||
		len(o.Hidden) != 0 {
		t.Errorf("the reader's opening: %+v; want the session's owner ann, the reader, 2 unread, big pulled, none hidden", o)
	}
	if o := os[2]; o.Owner != 0 {
		t.Errorf("an opening with an ended session: owner %d; want 0", o.Owner)
	}
	if o := os[3]; o.User.ID != 0 || o.Owner != ann {
		t.Errorf("an opening of no user: %+v; want the zero user", o)
	}
	if o := os[4]; o.Owner != 0 || o.User.ID != reader || o.Unread != 2 {
		t.Errorf("the reader's second opening: %+v; want the reader, 2 unread", o)
	}
}

// The unread count goes by the script's hash; a Redis that lost its
// scripts is given it again, and answers the same.
func TestStreamOpeningsAfterScriptFlush(t *testing.T) {
	t.Parallel()
	s, rdb := newPrivateService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	notifyNow(t, s, likeNote(bob, post(t, s, ann.ID, "liked")))
	for range 2 {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HDel(ctx, s.keys.user(ann.ID), "unread").Err(); err != nil {
			t.Fatal(err) // so that it is counted again
		}
		if o := openingOf(t, s, ann.ID, "none"); o.User.Login != "ann" || o.Unread != 1 {
			t.Fatalf("opening after SCRIPT FLUSH: %+v; want ann, 1 unread", o)
		}
	}
}

// AuthenticateMany checks many sessions in two round trips, each as
// Authenticate would: renewed, its user's activity noted, refused when
// gone (whatever Before answered), and refused by Before without Admit
// being asked. Before and Admit are each asked once for the batch.
func TestAuthenticateMany(t *testing.T) {
	t.Parallel()
	s, rdb := newPrivateService(t, Options{SessionTTL: time.Hour})
	ctx := ctxT(t)
	ann, annToken := signUpToken(t, s, "ann")
	bob, bobToken := signUpToken(t, s, "bob")
	_, goneToken := signUpToken(t, s, "gone")
	if err := s.SignOut(ctx, goneToken); err != nil {
		t.Fatal(err)
	}
	if err := rdb.PExpire(ctx, s.keys.session(SessionID(annToken)), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZRem(ctx, s.keys.seen(), itoa(ann.ID), itoa(bob.ID)).Err(); err != nil {
		t.Fatal(err)
	}

	refused := errors.New("refused")
	as := []*Authentication{
		{Token: ""}, // never sent: sent and batch indices differ
		{Token: annToken},
		{Token: bobToken},                 // refused by Before
		{Token: bobToken},                 // refused by Admit
		{Token: goneToken},                // refused by Before too, but gone first
		{Token: ""},                       // never sent
		{Token: strings.Repeat("x", 129)}, // never sent
		{Token: "not-a-token"},
	}
	var asked []string
	checks := AuthChecks{
		Before: func(ctx context.Context, pipe redis.Pipeliner, sent []int) []func() error {
			asked = append(asked, fmt.Sprint("before ", sent))
			out := make([]func() error, len(sent))
			for j, i := range sent {
				pipe.Ping(ctx)
				out[j] = func() error {
					if i == 2 || i == 4 {
						return refused
					}
					return nil
				}
			}
			return out
		},
		Admit: func(ctx context.Context, pipe redis.Pipeliner, uids []int64) []func() error {
			asked = append(asked, fmt.Sprint("admit ", uids))
			out := make([]func() error, len(uids))
			for j := range uids {
				pipe.Ping(ctx)
				out[j] = func() error {
					if j == 1 {
						return refused
					}
					return nil
				}
			}
			return out
		},
	}
	counter := &commandCounter{}
	rdb.AddHook(counter)
	s.AuthenticateMany(ctx, as, checks)
	if n := counter.roundTrips.Load(); n != 2 {
		t.Errorf("%d round trips for %d sessions; want 2", n, len(as))
	}
	if as[1].Err != nil || as[1].UID != ann.ID {
		t.Errorf("ann: %d, %v; want her uid", as[1].UID, as[1].Err)
	}
	if !errors.Is(as[2].Err, refused) || as[2].UID != 0 {
		t.Errorf("bob refused by Before: %d, %v; want the refusal", as[2].UID, as[2].Err)
	}
	if !errors.Is(as[3].Err, refused) || as[3].UID != 0 {
		t.Errorf("bob refused by Admit: %d, %v; want the refusal", as[3].UID, as[3].Err)
	}
	for i, a := range as {
		if i >= 1 && i <= 3 {
			continue
		}
		if !errors.Is(a.Err, ErrUnauthenticated) || a.UID != 0 {
			t.Errorf("session %d (empty, gone, too long, unknown): %d, %v; want ErrUnauthenticated", i, a.UID, a.Err)
		}
	}
	want := []string{"before [1 2 3 4 7]", fmt.Sprint("admit ", []int64{ann.ID, bob.ID})}
	if !slices.Equal(asked, want) {
		t.Errorf("asked %q; want %q (once each; no Before of a token never sent, no Admit after a refusal or of a session gone)", asked, want)
	}
	if ttl := rdb.PTTL(ctx, s.keys.session(SessionID(annToken))).Val(); ttl < 59*time.Minute {
		t.Errorf("ann's session expires in %v; want it renewed to an hour", ttl)
	}
	for _, u := range []User{ann, bob} {
		if err := rdb.ZScore(ctx, s.keys.seen(), itoa(u.ID)).Err(); err != nil {
			t.Errorf("%s's activity: %v; want it noted", u.Login, err)
		}
	}
	if uid, ok := s.sessionUsers.Get(SessionID(annToken)); !ok || uid != ann.ID {
		t.Errorf("the instance remembers ann's session as %d, %v", uid, ok)
	}
	if n := rdb.Exists(ctx, s.keys.session(SessionID(goneToken))).Val(); n != 0 {
		t.Errorf("a session gone is there again after its check")
	}
}

// A check that answers fewer requests than it was given refuses the rest
// with an error: none is let through unchecked, and nothing panics.
func TestAuthenticateManyShortCheck(t *testing.T) {
	t.Parallel()
	s, _ := newPrivateService(t, Options{})
	_, annToken := signUpToken(t, s, "ann")
	_, bobToken := signUpToken(t, s, "bob")
	as := []*Authentication{{Token: annToken}, {Token: bobToken}}
	s.AuthenticateMany(ctxT(t), as, AuthChecks{
		Admit: func(ctx context.Context, pipe redis.Pipeliner, uids []int64) []func() error {
			return []func() error{func() error { return nil }}
		},
	})
	if as[0].Err != nil || as[0].UID == 0 {
		t.Errorf("the request answered: %d, %v; want it admitted", as[0].UID, as[0].Err)
	}
	if as[1].Err == nil || as[1].UID != 0 {
		t.Errorf("the request left unanswered: %d, %v; want it refused", as[1].UID, as[1].Err)
	}
}
