package social

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// A post notes its author's activity: on a session the instance has not
// seen (read first, one round trip more), in its first round trip; on one
// it has, checked in that round trip, once it is known to be there, one
// round trip more when the instance has not noted the author lately. A
// session ended since is refused, posting nothing and noting nothing; a
// user back after InactiveAfter away has their home timeline rebuilt as
// their post goes on.
func TestPostNotesActivityInItsFirstRoundTrip(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected" // presence kept: the away are skipped
	author, token := signUpToken(t, s, "author")
	authenticate(t, s, token) // the instance knows the session
	postAs := func(message string) (Status, error) {
		return s.PostAs(ctx, PostRequest{Token: token, Message: message})
	}
	if _, err := postAs("loads the scripts"); err != nil {
		t.Fatal(err)
	}
	seenAt := func() float64 { return rdb.ZScore(ctx, s.keys.seen(), itoa(author.ID)).Val() }
	forget := func() { s.touches = newTouches(s.touchEvery()) }
	counter := &commandCounter{}
	rdb.AddHook(counter)
	counted := func(message string) int64 {
		t.Helper()
		before := counter.roundTrips.Load()
		if _, err := postAs(message); err != nil {
			t.Fatal(err)
		}
		return counter.roundTrips.Load() - before
	}

	noted := counted("noted lately")
	lastSeenAgo(t, s, author.ID, 2*s.touchEvery())
	forget()
	before := seenAt()
	if trips := counted("not noted lately"); trips != noted+1 {
		t.Errorf("a post noting its author's activity made %d round trips, want %d", trips, noted+1)
	}
	if at := seenAt(); at <= before {
		t.Errorf("the author's activity = %v after the post, %v before: not noted", at, before)
	}
	if !s.touches.recent(author.ID) {
		t.Error("the instance does not remember noting the author")
	}
	// A session the instance has not seen is read first, alone: one round
	// trip more, the activity noted with the reads all the same.
	lastSeenAgo(t, s, author.ID, 2*s.touchEvery())
	forget()
	s.sessionUsers.Remove(hashToken(token))
	before = seenAt()
	if trips := counted("session not seen"); trips != noted+1 {
		t.Errorf("a post on a session the instance had not seen made %d round trips, want %d", trips, noted+1)
	}
	if at := seenAt(); at <= before || !s.touches.recent(author.ID) {
		t.Errorf("the author's activity = %v after the post, %v before, remembered: %v", at, before, s.touches.recent(author.ID))
	}

	// Back after InactiveAfter away: what a followee posted meanwhile
	// skipped their home, and is there again once their post answered
	// (or, should the rebuild take longer than its wait, moments later).
	followee := signUp(t, s, "followee")
	follow(t, s, author.ID, "followee")
	lastSeenAgo(t, s, author.ID, 8*24*time.Hour)
	forget()
	missed := post(t, s, followee.ID, "while you were away")
	if slices.Contains(homeIDs(t, s, author.ID), missed.ID) {
		t.Fatalf("a status reached the home of a follower away for 8 days")
	}
	own, err := postAs("back")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for home := homeIDs(t, s, author.ID); !slices.Contains(home, missed.ID) || !slices.Contains(home, own.ID); home = homeIDs(t, s, author.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("home after the return = %v, want %d and %d", home, missed.ID, own.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if at := seenAt(); time.Since(time.UnixMilli(int64(at))) > time.Hour {
		t.Errorf("the author's activity = %v after their return: not noted", time.UnixMilli(int64(at)))
	}

	// A session ended since the instance saw it: refused, nothing posted,
	// the author not remembered as noted.
	lastSeenAgo(t, s, author.ID, 2*s.touchEvery())
	forget()
	before = seenAt()
	if err := rdb.Del(ctx, s.keys.session(hashToken(token))).Err(); err != nil {
		t.Fatal(err)
	}
	profileBefore := zsetIDs(t, s, s.keys.profile(author.ID))
	if _, err := postAs("after the end"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a post on an ended session: %v, want ErrUnauthenticated", err)
	}
	if got := zsetIDs(t, s, s.keys.profile(author.ID)); !slices.Equal(got, profileBefore) {
		t.Errorf("profile after a refused post = %v, before %v", got, profileBefore)
	}
	if s.touches.recent(author.ID) {
		t.Error("the instance remembers noting a user whose session had ended")
	}
	if at := seenAt(); at != before {
		t.Errorf("a post on an ended session noted its user: activity %v, %v before", at, before)
	}

	// The same, the user away past InactiveAfter, on the session as the
	// instance still knows it: their home is not rebuilt, no rebuild
	// queued, and they stay away.
	lastSeenAgo(t, s, author.ID, 8*24*time.Hour)
	forget()
	s.sessionUsers.Add(hashToken(token), author.ID)
	before = seenAt()
	missed = post(t, s, followee.ID, "while the session had ended")
	if _, err := postAs("after the end, away"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a post on an ended session, its user away: %v, want ErrUnauthenticated", err)
	}
	if n := rdb.Exists(ctx, s.keys.job(refillJobID(author.ID))).Val(); n != 0 {
		t.Error("a post on an ended session queued its away user's rebuild")
	}
	if slices.Contains(homeIDs(t, s, author.ID), missed.ID) {
		t.Error("a post on an ended session rebuilt its away user's home")
	}
	if at := seenAt(); at != before {
		t.Errorf("a post on an ended session noted its away user: activity %v, %v before", at, before)
	}
}
