package social

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"chorus/protocol"
)

// The service that changes the data publishes what follows from it: a
// follow that makes two users friends tells Options.Befriended once, an
// unfollow that ends the friendship tells each ex-friend's streams about the
// other (friend_removed), and a sign-out tells its session's streams
// (session_ended), once however many times it is signed out.
func TestChangesPublishTheirFrames(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var befriended [][2]int64
	s, rdb := newService(t, Options{Befriended: func(_ context.Context, a, b int64) error {
		mu.Lock()
		defer mu.Unlock()
		befriended = append(befriended, [2]int64{a, b})
		return nil
	}})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	_, token, err := s.SignIn(ctx, "ada", "password-ada", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	l := listen(t, s, rdb, s.UserChannel(ada.ID), s.UserChannel(bob.ID))

	follow(t, s, ada.ID, "bob")
	follow(t, s, bob.ID, "ada") // friends now
	follow(t, s, bob.ID, "ada") // again: friends already
	mu.Lock()
	if want := [][2]int64{{bob.ID, ada.ID}}; !slices.Equal(befriended, want) {
		t.Errorf("Befriended told %v, want %v", befriended, want)
	}
	mu.Unlock()

	if _, err := s.Unfollow(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unfollow(ctx, ada.ID, "bob"); err != nil { // no friendship left to end
		t.Fatal(err)
	}
	for _, err := range []error{s.SignOut(ctx, token), s.SignOut(ctx, token)} {
		if err != nil {
			t.Fatal(err)
		}
	}

	events := eventsSoFar(t, l)
	for _, tc := range []struct {
		to, about User
	}{{ada, bob}, {bob, ada}} {
		got := ofType(events[s.UserChannel(tc.to.ID)], protocol.TypeFriendRemoved)
		if len(got) != 1 || got[0].User == nil || *got[0].User != tc.about.Ref() {
			t.Errorf("%s's channel got friend_removed %+v, want one about %s", tc.to.Login, got, tc.about.Login)
		}
	}
	ended := ofType(events[s.UserChannel(ada.ID)], protocol.TypeSessionEnded)
	if len(ended) != 1 || ended[0].Session != SessionID(token) {
		t.Errorf("ada's channel got session_ended %+v, want one for the session signed out", ended)
	}
	if got := ofType(events[s.UserChannel(bob.ID)], protocol.TypeSessionEnded); len(got) != 0 {
		t.Errorf("bob's channel got session_ended %+v, want none", got)
	}
}

// Announcing the end of a friendship fails with what failed: a read of the
// users that failed is not a user missing (which web answers 404), and a
// user missing is.
func TestAnnounceFriendshipEndedFailures(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ada := signUp(t, s, "ada")
	down, cancel := context.WithCancel(ctxT(t))
	cancel()
	for _, c := range []struct {
		name     string
		ctx      context.Context
		a, b     int64
		want     error
		notFound bool
	}{
		{"read failed", down, ada.ID, ada.ID + 1000, context.Canceled, false},
		{"user missing", ctxT(t), ada.ID, ada.ID + 1000, ErrUserNotFound, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := s.announceFriendshipEnded(c.ctx, c.a, c.b)
			if !errors.Is(err, c.want) || errors.Is(err, ErrUserNotFound) != c.notFound {
				t.Errorf("announce: %v, want %v (not found: %v)", err, c.want, c.notFound)
			}
		})
	}
}
