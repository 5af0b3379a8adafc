package social

import (
	"errors"
	"testing"
)

// The deletion job walks every part of an account: run pass by pass, it
// ends with no key of the user left but what others hold of them.
func TestDeleteAccountJob(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ada, _, err := s.SignUp(ctx, "ada", "Ada", "kettle-drum-41")
	if err != nil {
		t.Fatal(err)
	}
	bob := signUp(t, s, "bob")
	follow(t, s, ada.ID, "bob")
	follow(t, s, bob.ID, "ada")
	st, err := s.Post(ctx, ada.ID, "soon gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAccount(ctx, ada.ID, "wrong-password-1", ""); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("a wrong password: %v", err)
	}
	if err := s.DeleteAccount(ctx, ada.ID, "kettle-drum-41", ""); err != nil {
		t.Fatal(err)
	}
	runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(ada.ID)))
	if _, err := s.UserByID(ctx, ada.ID); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("the deleted user reads as %v", err)
	}
	for _, key := range []string{s.keys.user(ada.ID), s.keys.followers(ada.ID), s.keys.following(ada.ID), s.keys.friends(ada.ID), s.keys.profile(ada.ID), s.keys.sessions(ada.ID)} {
		if n, err := s.rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("%s is left (%v)", key, err)
		}
	}
	if _, err := s.Status(ctx, st.ID); !errors.Is(err, ErrStatusNotFound) {
		t.Errorf("ada's status reads as %v", err)
	}
	u, err := s.UserByID(ctx, bob.ID)
	if err != nil || u.Followers != 0 || u.Following != 0 {
		t.Errorf("bob after the deletion: %+v, %v", u, err)
	}
	if _, err := s.UID(ctx, "ADA"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("the deleted account's login leads to %v", err)
	}
	if _, _, err := s.SignUp(ctx, "Ada", "Another", "kettle-drum-42"); !errors.Is(err, ErrLoginTaken) {
		t.Errorf("the deleted account's login taken again: %v", err)
	}
}
