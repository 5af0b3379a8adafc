package realtime

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"
)

// A stream that watches a thread gets each reply posted in it, at any
// depth, and each of its statuses deleted, through any instance, once each
// and naming the thread; a stream that watches another thread, or none,
// gets nothing of it; a new watch replaces the last, an unwatch of a
// thread the stream does not watch changes nothing, and an instance is
// subscribed to a thread's channel only while one of its streams watches
// it.
func TestThreadWatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	other := e.peer(envOptions{})
	ann, bob := e.signUp("tann"), e.signUp("tbob")
	watcher, second, bystander := e.signUp("twatcher"), e.signUp("tsecond"), e.signUp("tbystander")
	ws, ss, bs := other.connect(watcher), other.connect(second), other.connect(bystander)
	root := e.post(ann, "a thread")
	elsewhere := e.post(bob, "another thread")
	first := e.reply(bob, root.ID, "first")
	numsub := func(thread int64) int64 {
		t.Helper()
		ch := e.hub.bus.ThreadChannel(thread)
		n, err := e.rdb.PubSubNumSub(t.Context(), ch).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n[ch]
	}
	watch := func(s *stream, thread int64) {
		t.Helper()
		s.send(map[string]any{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": thread})
		if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching || f.Timeline != protocol.TimelineThread || f.Thread != thread {
			t.Fatalf("the answer to a watch of thread %d is %+v, want watching it", thread, f)
		}
	}
	watch(ws, root.ID)
	watch(ss, root.ID)
	watch(bs, elsewhere.ID)
	if n := numsub(root.ID); n != 1 {
		t.Fatalf("with two watchers on one instance, the thread's channel has %d subscribers, want 1", n)
	}

	deep := e.reply(ann, first.ID, "deeper")
	e.post(ann, "not in any thread")
	if err := e.social.DeleteStatus(t.Context(), bob.id, first.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("thread_status %d", deep.ID),
		fmt.Sprintf("thread_status_deleted %d in %d", first.ID, root.ID),
	}
	for name, c := range map[string]struct {
		u    user
		s    *stream
		want []string
	}{"watcher": {watcher, ws, want}, "second": {second, ss, want}, "bystander": {bystander, bs, nil}} {
		got := e.routed(c.u, c.s)
		if d := describe(got); !slices.Equal(d, c.want) {
			t.Errorf("the %s's stream got %q, want %q", name, d, c.want)
			continue
		}
		if len(got) == 2 && (got[0].Thread != root.ID || got[1].ReplyTo != root.ID) {
			t.Errorf("the %s's frames name thread %d and %d, and the deleted reply answering %d, want %d, %d and %d",
				name, got[0].Thread, got[1].Thread, got[1].ReplyTo, root.ID, root.ID, root.ID)
		}
	}

	// A watch of another thread replaces the first: the other watcher
	// keeps the channel; a stale unwatch of the first changes nothing.
	watch(ws, elsewhere.ID)
	ws.send(map[string]any{"type": protocol.TypeUnwatch, "timeline": protocol.TimelineThread, "thread": root.ID})
	again := e.reply(ann, root.ID, "again")
	there := e.reply(ann, elsewhere.ID, "over there")
	if got, want := describe(e.routed(watcher, ws)), []string{fmt.Sprintf("thread_status %d", there.ID)}; !slices.Equal(got, want) {
		t.Errorf("after watching another thread, the stream got %q, want %q", got, want)
	}
	if got, want := describe(e.routed(second, ss)), []string{fmt.Sprintf("thread_status %d", again.ID)}; !slices.Equal(got, want) {
		t.Errorf("the first thread's other watcher got %q, want %q", got, want)
	}
	if n := numsub(root.ID); n != 1 {
		t.Errorf("with one watcher left, the thread's channel has %d subscribers, want 1", n)
	}

	// The thread's first status deleted is told too; then its last
	// watcher unwatches (naming no thread) and the instance unsubscribes.
	if err := e.social.DeleteStatus(t.Context(), ann.id, root.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(e.routed(second, ss)), []string{fmt.Sprintf("thread_status_deleted %d in %d", root.ID, root.ID)}; !slices.Equal(got, want) {
		t.Errorf("after the thread's first status was deleted, its watcher got %q, want %q", got, want)
	}
	ss.send(map[string]any{"type": protocol.TypeUnwatch, "timeline": protocol.TimelineThread})
	testio.Eventually(t, 10*time.Second, func() string {
		if n := numsub(root.ID); n != 0 {
			return fmt.Sprintf("after its last watcher unwatched, the thread's channel has %d subscribers, want 0", n)
		}
		return ""
	})
	// The streams that watch the other thread close: no watch is left.
	ws.ws.Close(1000, "")
	bs.ws.Close(1000, "")
	testio.Eventually(t, 10*time.Second, func() string {
		if n := numsub(elsewhere.ID); n != 0 {
			return fmt.Sprintf("after its watchers closed, the other thread's channel has %d subscribers, want 0", n)
		}
		return threadWatchesLeft(other.hub)
	})
}

// A reply by someone the watcher blocked is left out of a thread's frames;
// its deletion, naming no author, still comes.
func TestThreadWatchLeavesOutTheHidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ann, bob, cy := e.signUp("hann"), e.signUp("hbob"), e.signUp("hcy")
	s := e.connect(ann)
	root := e.post(cy, "a thread")
	if err := e.social.Block(t.Context(), ann.id, bob.login); err != nil {
		t.Fatal(err)
	}
	e.routed(ann, s) // the block's hidden set is read
	s.send(map[string]any{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": root.ID})
	if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching {
		t.Fatalf("the answer to a watch is %+v, want watching", f)
	}
	hidden := e.reply(bob, root.ID, "from the blocked")
	shown := e.reply(cy, root.ID, "from the author")
	got := describe(e.routed(ann, s))
	if want := []string{fmt.Sprintf("thread_status %d", shown.ID)}; !slices.Equal(got, want) {
		t.Errorf("the watcher got %q, want %q (not %d, by whom she blocked)", got, want, hidden.ID)
	}
}

// A watch of a thread that names none, or not by a status id, is refused
// with an error frame, and the stream stays open and watches nothing; an
// unwatch may name no thread.
func TestThreadWatchRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	u := e.signUp("trefused")
	s := e.connect(u)
	for _, f := range []map[string]any{
		{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread},
		{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": 0},
		{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": -4},
		{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": "12"},
		{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": 1.5},
		{"type": protocol.TypeUnwatch, "timeline": protocol.TimelineThread, "thread": "x"},
		{"type": protocol.TypeUnwatch, "timeline": protocol.TimelineThread},
	} {
		s.send(f)
	}
	for range 6 {
		if f := s.next(10 * time.Second); f.Type != protocol.TypeError || f.Code != protocol.CodeInvalidWatch {
			t.Fatalf("got %v, want error invalid_watch", f)
		}
	}
	// Each error came as its frame was handled: the unwatch that names no
	// thread too, and none of them watches.
	if left := threadWatchesLeft(e.hub); left != "" {
		t.Errorf("after refused watches, %s", left)
	}
	// The stream still serves: a watch then is answered by watching alone.
	s.send(map[string]any{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": 9})
	if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching || f.Thread != 9 {
		t.Fatalf("after the refused frames, a watch was answered %v, want watching thread 9", f)
	}
	s.send(map[string]any{"type": protocol.TypeUnwatch, "timeline": protocol.TimelineThread, "thread": 9})
	testio.Eventually(t, 10*time.Second, func() string { return threadWatchesLeft(e.hub) })
}

// When the pub/sub connection is lost and made again, a thread's watcher
// may have missed frames: it is told its watch is live again, the cue to
// read the thread again.
func TestThreadWatchAfterPubSubReconnect(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL)
	e := newEnv(t, envOptions{rdb: rdb})
	u := e.signUp("trewatcher")
	s := e.connect(u)
	s.send(map[string]any{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": 41})
	if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching || f.Thread != 41 {
		t.Fatalf("the answer to a watch is %+v, want watching thread 41", f)
	}
	if err := rdb.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if f := s.next(15 * time.Second); f.Type != protocol.TypeWatching || f.Thread != 41 {
		t.Fatalf("after the pub/sub connection came back the stream got %+v, want watching thread 41", f)
	}
}

// threadWatchesLeft says what thread watches h holds, "" for none.
func threadWatchesLeft(h *Hub) string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.threads) != 0 || len(h.threadOf) != 0 {
		return fmt.Sprintf("the hub holds %d watched threads and %d watches, want none", len(h.threads), len(h.threadOf))
	}
	return ""
}
