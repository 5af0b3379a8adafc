package realtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"chorus/internal/testio"
)

// A pulled author's statuses and deletions reach their followers' streams
// on both instances, through the author's channel, once each; a follow made
// while connected starts that at once, and an unfollow stops it.
func TestPulledAuthorLive(t *testing.T) {
	t.Parallel()
	opts := envOptions{}
	opts.social.PullThreshold = 2
	e := newEnv(t, opts)
	other := e.peer(opts)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go e.social.NewWorker("pull-test", slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)

	author, near, far, late, stranger := e.signUp("author"), e.signUp("near"), e.signUp("far"), e.signUp("late"), e.signUp("stranger")
	e.follow(near, author)
	e.follow(far, author) // the second follower: the author is made pulled
	testio.Eventually(t, 10*time.Second, func() string {
		if pulls, err := e.social.PulledAuthors(t.Context(), far.id); err != nil || len(pulls) != 1 {
			return fmt.Sprintf("far's pulled authors: %v, %v", pulls, err)
		}
		return ""
	})
	streams := map[user]*stream{
		near: e.connect(near), far: other.connect(far), late: other.connect(late), stranger: other.connect(stranger),
	}
	e.follow(late, author) // while connected
	other.settle()

	st := e.post(author, "to everyone")
	if err := e.social.DeleteStatus(t.Context(), author.id, st.ID); err != nil {
		t.Fatal(err)
	}
	posted, deleted := fmt.Sprintf("status %d", st.ID), fmt.Sprintf("status_deleted %d", st.ID)
	for u, s := range streams {
		want := []string{posted, deleted}
		if u == stranger {
			want = nil
		}
		if got := describe(e.routed(u, s)); !slices.Equal(got, want) {
			t.Errorf("%s's stream got %q, want %q", u.login, got, want)
		}
	}

	if _, err := e.social.Unfollow(t.Context(), late.id, author.login); err != nil {
		t.Fatal(err)
	}
	other.settle()
	st = e.post(author, "after the unfollow")
	for u, s := range streams {
		want := []string{fmt.Sprintf("status %d", st.ID)}
		if u == stranger || u == late {
			want = nil
		}
		if got := describe(e.routed(u, s)); !slices.Equal(got, want) {
			t.Errorf("after the unfollow, %s's stream got %q, want %q", u.login, got, want)
		}
	}
	// far's instance still routes the author's channel to far.
	if n := e.rdb.PubSubNumSub(t.Context(), e.social.AuthorChannel(author.id)).Val()[e.social.AuthorChannel(author.id)]; n != 2 {
		t.Errorf("the author's channel has %d subscribers, want 2 (one per instance)", n)
	}
	streams[far].ws.Close(1000, "")
	streams[late].ws.Close(1000, "")
	streams[stranger].ws.Close(1000, "")
	testio.Eventually(t, 10*time.Second, func() string {
		if n := e.rdb.PubSubNumSub(t.Context(), e.social.AuthorChannel(author.id)).Val()[e.social.AuthorChannel(author.id)]; n != 1 {
			return fmt.Sprintf("the author's channel has %d subscribers after the peer's readers left, want 1", n)
		}
		return ""
	})
}
