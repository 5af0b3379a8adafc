package realtime

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// Each event reaches the streams of the users it is for, and no other,
// whichever instance they are connected to: a status its author's and
// followers', its deletion the same, a follow the followed user's, and a
// user's coming and going their friends'.
func TestRouting(t *testing.T) {
	t.Parallel()
	for _, layout := range []struct {
		name string
		// peer is the instance the others connect to, beside the author's.
		peer func(*env) *env
	}{
		{"one instance", func(e *env) *env { return e }},
		{"two instances", func(e *env) *env { return e.peer(envOptions{}) }},
	} {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{})
			other := layout.peer(e)
			author, friend, fan, stranger := e.signUp("author"), e.signUp("friend"), e.signUp("fan"), e.signUp("stranger")
			e.follow(friend, author)
			e.follow(author, friend)
			e.follow(fan, author)
			streams := map[user]*stream{friend: other.connect(friend), fan: other.connect(fan), stranger: other.connect(stranger)}
			streams[author] = e.connect(author) // comes online: the friend is told

			st := e.post(author, "to my followers")
			if err := e.social.DeleteStatus(t.Context(), author.id, st.ID); err != nil {
				t.Fatal(err)
			}
			e.follow(stranger, author)

			online := fmt.Sprintf("presence of %d online=true", author.id)
			posted, deleted := fmt.Sprintf("status %d", st.ID), fmt.Sprintf("status_deleted %d", st.ID)
			want := map[user][]string{
				author:   {posted, deleted, fmt.Sprintf("followed by %d you_follow=false", stranger.id)},
				friend:   {online, posted, deleted},
				fan:      {posted, deleted},
				stranger: nil,
			}
			for u, s := range streams {
				if got := describe(e.routed(u, s)); !slices.Equal(got, want[u]) {
					t.Errorf("%s's stream got %q, want %q", u.login, got, want[u])
				}
			}

			// Going offline reaches the friend alone, and may be held back
			// a second after the online frame.
			streams[author].ws.Close(1000, "")
			offline := fmt.Sprintf("presence of %d online=false", author.id)
			if got := streams[friend].next(10 * time.Second).String(); got != offline {
				t.Fatalf("friend's stream got %q after the author left, want %q", got, offline)
			}
			for _, u := range []user{fan, stranger} {
				if got := describe(e.routed(u, streams[u])); len(got) != 0 {
					t.Errorf("%s's stream got %q after the author left, want nothing", u.login, got)
				}
			}
		})
	}
}
