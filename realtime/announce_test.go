package realtime

import (
	"context"
	"errors"
	"testing"

	"chorus/social"
)

// failingUsers is a feed whose reads of users fail with err.
type failingUsers struct {
	Feed
	err error
}

func (f failingUsers) Users(ctx context.Context, ids []int64) ([]social.User, error) {
	return nil, f.err
}

// Announcing to a pair fails with what failed: a read of the users that
// failed is not a user missing (which web answers 404), and a user missing
// is.
func TestAnnounceFailures(t *testing.T) {
	t.Parallel()
	down := errors.New("redis down")
	failing := newEnv(t, envOptions{feed: func(s *social.Service) Feed { return failingUsers{s, down} }})
	plain := newEnv(t, envOptions{})
	ada := plain.signUp("ada")
	for _, c := range []struct {
		name     string
		e        *env
		a, b     int64
		want     error
		notFound bool
	}{
		{"read failed", failing, 1, 2, down, false},
		{"user missing", plain, ada.id, ada.id + 1000, social.ErrUserNotFound, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, announce := range []func(context.Context, int64, int64) error{c.e.hub.AnnounceFriendship, c.e.hub.AnnounceFriendshipEnded} {
				err := announce(t.Context(), c.a, c.b)
				if !errors.Is(err, c.want) || errors.Is(err, social.ErrUserNotFound) != c.notFound {
					t.Errorf("announce: %v, want %v (not found: %v)", err, c.want, c.notFound)
				}
			}
		})
	}
}
