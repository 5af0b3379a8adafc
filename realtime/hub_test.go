package realtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"

	"github.com/coder/websocket"
)

// Each event reaches the streams of the users it is for, and no other,
// whichever instance they are connected to: a status its author's and
// followers', its deletion the same, a follow (its followed frame and its
// notification) the followed user's, and a user's coming and going their
// friends'.
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
				author: {posted, deleted, fmt.Sprintf("followed by %d you_follow=false", stranger.id),
					fmt.Sprintf("notification followed from %d", stranger.id)},
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

// After the pub/sub connection is lost and made again, every open stream
// gets the statuses posted meanwhile, each once and in order, and none
// older than what it was sent or resumed after, or than itself, then
// carries on live. (That a stream whose
// session Redis lost is closed instead is TestPubSubReconnectChecksSessions.)
func TestCatchUpAfterPubSubLoss(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	e := newEnv(t, envOptions{rdb: rdb})
	author, reader := e.signUp("author"), e.signUp("reader")
	e.follow(reader, author)
	e.post(author, "before any stream")
	streams := map[string]*stream{"author's": e.connect(author), "reader's first": e.connect(reader)}
	seen := e.post(author, "seen live")
	for name, s := range streams {
		if f := s.next(5 * time.Second); f.Type != "status" || f.Status.ID != seen.ID {
			t.Fatalf("%s stream got %v, want status %d", name, f, seen.ID)
		}
	}
	// A stream opened since, resuming as clients do after ready, is sent
	// nothing: it holds the timeline up to the status it names.
	resumed := e.connect(reader)
	resumed.send(map[string]any{"type": "resume", "after": seen.ID})
	resumed.ping()
	if got := resumed.until("unknown_type", 5*time.Second); len(got) != 0 {
		t.Fatalf("a resume after the newest status sent %v, want nothing", describe(got))
	}
	streams["reader's resumed"] = resumed
	// A stream opened since that resumes nothing and is sent nothing
	// catches up on what was posted after it opened, not on the whole
	// timeline.
	streams["reader's idle"] = e.connect(reader)

	if err := rdb.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	var missed []int64
	for i := range 5 {
		missed = append(missed, e.post(author, fmt.Sprintf("missed %d", i)).ID)
	}
	for name, s := range streams {
		if got := nextStatuses(s, len(missed), time.Minute); !slices.Equal(got, missed) {
			t.Errorf("%s stream caught up on %v, want %v", name, got, missed)
		}
	}
	if e.hub.Stats.PubSubRestarts.Load() == 0 {
		t.Fatal("no pub/sub restart counted")
	}

	var live []int64
	for i := range 3 {
		live = append(live, e.post(author, fmt.Sprintf("live %d", i)).ID)
	}
	for name, s := range streams {
		got := nextStatuses(s, len(live), 10*time.Second)
		s.ping()
		got = append(got, statusIDs(s.until("unknown_type", 10*time.Second))...)
		if !slices.Equal(got, live) {
			t.Errorf("%s stream got %v after catching up, want %v", name, got, live)
		}
	}
}

// A frame that comes while a user's frames are held back (their channel
// confirmed again, the sessions being checked) is sent once the streams
// have caught up, once, not dropped: its status may reach the home
// timeline only after the catch-up read it (a post publishes its frames a
// round trip ahead of its pushes), or, as here, never.
func TestFrameHeldWhileCheckingIsSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	author, reader, stranger := e.signUp("author"), e.signUp("reader"), e.signUp("stranger")
	e.follow(reader, author)
	s := e.connect(reader)
	first := e.post(author, "live")
	if f := s.next(5 * time.Second); f.Type != "status" || f.Status.ID != first.ID {
		t.Fatalf("got %v, want status %d", f, first.ID)
	}
	// The reader's channel is confirmed again, and a frame comes, as the
	// router would hand it over, before the check is done.
	held := e.post(stranger, "not in the reader's home timeline")
	payload := statusFrameJSON(held)
	ev, err := parseEvent(payload)
	if err != nil {
		t.Fatal(err)
	}
	e.hub.mu.Lock()
	u := e.hub.users[e.social.UserChannel(reader.id)]
	e.hub.restart(u)
	e.hub.deliver(u, ev, payload)
	e.hub.mu.Unlock()
	if got := nextStatuses(s, 1, 30*time.Second); got[0] != held.ID {
		t.Fatalf("after the check the stream got status %d, want the held one, %d", got[0], held.ID)
	}
	s.ping()
	if got := s.until("unknown_type", 10*time.Second); len(got) != 0 {
		t.Errorf("then %v, want nothing more", describe(got))
	}
	if n := e.hub.Stats.FramesDropped.Load(); n != 0 {
		t.Errorf("%d frames dropped", n)
	}
}

// Shutting a hub down closes each of its streams with 1001 and returns once
// they are gone, their channels unsubscribed. Their users stay online
// for their friends, who are told nothing: they reconnect elsewhere. The
// hub refuses new streams; another instance carries on.
func TestShutdownClosesStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	other := e.peer(envOptions{})
	mover, solo, friend := e.signUp("mover"), e.signUp("solo"), e.signUp("friend")
	e.follow(mover, friend)
	e.follow(friend, mover)
	fs := other.connect(friend)
	streams := []*stream{e.connect(mover), e.connect(mover), e.connect(solo)}
	want := fmt.Sprintf("presence of %d online=true", mover.id)
	if got := describe(other.routed(friend, fs)); !slices.Equal(got, []string{want}) {
		t.Fatalf("friend's stream got %q, want %q", got, want)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.hub.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if n := e.hub.Stats.Open.Load(); n != 0 {
		t.Fatalf("%d streams open once Shutdown returned, want 0", n)
	}
	// Reading nothing more, it is marked done with the frames channel for
	// long past its lease, which lingers until swept: fan-outs need not send
	// frames one by one for it (markFramesDone).
	until, err := e.rdb.ZScore(t.Context(), e.hub.bus.FramesReadersKey(), e.hub.opts.Instance).Result()
	if min := time.Now().Add(framesMarkDone - time.Hour).UnixMilli(); err != nil || until < float64(min) {
		t.Fatalf("the mark of a hub shut down: %.0f (%v), want at least %d", until, err, min)
	}
	for i, s := range streams {
		if code, _ := s.closed(5 * time.Second); code != websocket.StatusGoingAway {
			t.Errorf("stream %d closed with %v, want 1001", i, code)
		}
	}
	testio.Eventually(t, 10*time.Second, func() string {
		for _, u := range []user{mover, solo} {
			if n := e.subscribers(u); n != 0 {
				return fmt.Sprintf("%s's channel has %d subscribers after shutdown, want 0", u.login, n)
			}
		}
		return ""
	})

	if online, _, err := other.presence.UserPresence(t.Context(), mover.id); err != nil || !online {
		t.Fatalf("a user whose instance shut down: online %v (%v), want true", online, err)
	}
	if got := other.routed(friend, fs); len(got) != 0 {
		t.Fatalf("friend's stream got %q after the shutdown, want nothing", describe(got))
	}
	if _, _, err := e.dial(solo, nil); err == nil {
		t.Fatal("a stream opened after the shutdown")
	}
	if err := e.refusal(); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("dial after shutdown refused with %v, want ErrShuttingDown", err)
	}
	moved := other.connect(mover)
	st := other.post(friend, "welcome back")
	if f := moved.next(5 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
		t.Fatalf("the stream reopened on the other instance got %v, want status %d", f, st.ID)
	}
}

// nextStatuses returns the ids of the next n status frames of s, failing
// the test after within; other frames are skipped.
func nextStatuses(s *stream, n int, within time.Duration) []int64 {
	s.tb.Helper()
	deadline := time.Now().Add(within)
	var ids []int64
	for len(ids) < n {
		if f := s.next(time.Until(deadline)); f.Type == "status" {
			ids = append(ids, f.Status.ID)
		}
	}
	return ids
}
