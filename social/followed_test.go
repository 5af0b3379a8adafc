package social

import (
	"testing"

	"chorus/protocol"
)

// Following, unfollowing and following again tells the followee once: one
// followed frame per follower a day, counted on the followee's channel.
func TestFollowChurnNotifiesOnce(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob, cat := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat")
	l := listen(t, s, rdb, s.UserChannel(bob.ID))
	followed := func() int {
		t.Helper()
		return len(ofType(eventsSoFar(t, l)[s.UserChannel(bob.ID)], protocol.TypeFollowed))
	}

	for range 3 {
		follow(t, s, ann.ID, "bob")
		if _, err := s.Unfollow(ctx, ann.ID, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	follow(t, s, ann.ID, "bob")
	if got := followed(); got != 1 {
		t.Fatalf("bob got %d followed frames after ann followed 4 times; want 1", got)
	}
	// Another follower is told of apart.
	follow(t, s, cat.ID, "bob")
	if got := followed(); got != 1 {
		t.Fatalf("bob got %d followed frames for cat; want 1", got)
	}

	// The notice lasts a day; once it is gone (as after a day), a follow
	// again tells bob again.
	key := s.keys.followedNotice(bob.ID, ann.ID)
	if ttl, err := rdb.TTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > followedNoticeTTL {
		t.Fatalf("notice TTL %v, %v; want up to %v", ttl, err, followedNoticeTTL)
	}
	if _, err := s.Unfollow(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, key)
	follow(t, s, ann.ID, "bob")
	if got := followed(); got != 1 {
		t.Fatalf("bob got %d followed frames for a follow a day later; want 1", got)
	}
}
