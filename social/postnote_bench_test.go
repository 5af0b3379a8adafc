package social

import (
	"fmt"
	"testing"
)

// BenchmarkPostAsFirst measures a post by the holder of a session, to 100
// followers, whose author the instance has not noted active lately: its
// first post through the instance in an hour, on a session the instance
// has seen ("seen") or not ("unseen": a session read first). Round trips
// a post: see TestPostNotesActivityInItsFirstRoundTrip.
func BenchmarkPostAsFirst(b *testing.B) {
	for _, seen := range []bool{true, false} {
		b.Run(map[bool]string{true: "seen", false: "unseen"}[seen], func(b *testing.B) {
			s, _ := newService(b, Options{})
			ctx := ctxT(b)
			author, token := signUpToken(b, s, "author")
			seedFollowers(b, s, author.ID, 100)
			authenticate(b, s, token)
			for b.Loop() {
				s.touches = newTouches(s.touchEvery())
				if !seen {
					s.sessionUsers.Remove(hashToken(token))
				}
				if _, err := s.PostAs(ctx, PostRequest{Token: token, Message: fmt.Sprint("first ", b.N)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAuthenticateFirst measures a signed-in request's session check
// for a user the instance has not noted active lately, on a session the
// instance has seen ("seen": on one Redis, one round trip for the check and
// the note) or not ("unseen": the note after the check). Round trips: see
// TestAuthenticateNotesInTheSessionsRoundTrip.
func BenchmarkAuthenticateFirst(b *testing.B) {
	for _, seen := range []bool{true, false} {
		b.Run(map[bool]string{true: "seen", false: "unseen"}[seen], func(b *testing.B) {
			s, _ := newService(b, Options{})
			ctx := ctxT(b)
			_, token := signUpToken(b, s, "user")
			authenticate(b, s, token)
			for b.Loop() {
				s.touches = newTouches(s.touchEvery())
				if !seen {
					s.sessionUsers.Remove(hashToken(token))
				}
				if _, err := s.Authenticate(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
