package realtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/protocol"
	"chorus/social"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

func TestSentRange(t *testing.T) {
	r := sentRange{lo: 10, hi: 20}
	for _, tc := range []struct{ after, want int64 }{
		{0, 0}, {9, 9}, {10, 20}, {15, 20}, {19, 20}, {20, 20}, {25, 25},
	} {
		if got := r.skip(tc.after); got != tc.want {
			t.Errorf("(10, 20].skip(%d) = %d, want %d", tc.after, got, tc.want)
		}
	}
	cases := []struct {
		name    string
		r, o    sentRange
		touches bool
		union   sentRange
	}{
		{"empty takes any", sentRange{}, sentRange{5, 9}, true, sentRange{5, 9}},
		{"overlap", sentRange{10, 20}, sentRange{15, 30}, true, sentRange{10, 30}},
		{"meet above", sentRange{10, 20}, sentRange{20, 30}, true, sentRange{10, 30}},
		{"meet below", sentRange{10, 20}, sentRange{0, 10}, true, sentRange{0, 20}},
		{"inside", sentRange{10, 20}, sentRange{12, 14}, true, sentRange{10, 20}},
		{"apart", sentRange{10, 20}, sentRange{21, 30}, false, sentRange{}},
		{"empty other", sentRange{10, 20}, sentRange{25, 25}, false, sentRange{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.touches(tc.o); got != tc.touches {
				t.Fatalf("touches = %v, want %v", got, tc.touches)
			}
			if tc.touches {
				if got := tc.r.union(tc.o); got != tc.union {
					t.Fatalf("union = %v, want %v", got, tc.union)
				}
			}
		})
	}
}

// Resuming from 0 twice over a long home timeline sends each status once,
// and the second resume reads no more than one page.
func TestResumeTwiceSendsEachStatusOnce(t *testing.T) {
	t.Parallel()
	var feed *countingFeed
	e := newEnv(t, envOptions{feed: func(s *social.Service) Feed {
		feed = &countingFeed{Service: s}
		return feed
	}})
	u := e.signUp("reader")
	var posted []int64
	for i := range 600 {
		posted = append(posted, e.post(u, fmt.Sprintf("status %d", i)).ID)
	}
	s := e.connect(u)

	s.send(map[string]any{"type": "resume", "after": 0})
	s.ping()
	if got := statusIDs(s.until("unknown_type", 10*time.Second)); !slices.Equal(got, posted) {
		t.Fatalf("first resume sent %d statuses, want the %d posted, oldest first", len(got), len(posted))
	}
	pages := feed.pages.Load()

	s.send(map[string]any{"type": "resume", "after": 0})
	s.ping()
	if got := statusIDs(s.until("unknown_type", 10*time.Second)); len(got) != 0 {
		t.Fatalf("second resume sent %d statuses again, want none", len(got))
	}
	if n := feed.pages.Load() - pages; n > 1 {
		t.Fatalf("second resume read %d pages, want at most 1", n)
	}

	// A resume from inside what was sent goes on after it.
	newer := e.post(u, "newer")
	if f := s.next(5 * time.Second); f.Type != "status" || f.Status.ID != newer.ID {
		t.Fatalf("live frame %+v, want status %d", f, newer.ID)
	}
	s.send(map[string]any{"type": "resume", "after": posted[300]})
	s.ping()
	if got := statusIDs(s.until("unknown_type", 10*time.Second)); len(got) != 0 {
		t.Fatalf("third resume sent %v again, want none", got)
	}
}

// A user's resumes share one budget, whichever of their streams sends them
// and on whichever instance: past it a resume is answered rate_limited and
// the stream stays open.
func TestResumeBudgetPerUser(t *testing.T) {
	t.Parallel()
	const burst = 3
	// No refill: the budget is the burst, however slow the machine.
	limit := redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: burst}
	e := newEnv(t, envOptions{hub: Options{ResumeLimit: limit}})
	peer := e.peer(envOptions{hub: Options{ResumeLimit: limit}})
	u := e.signUp("resumer")
	a, b := e.connect(u), peer.connect(u)
	// resume sends one resume on s and returns the frames it brought,
	// up to the answer to a ping sent after it.
	resume := func(s *stream) []frame {
		s.send(map[string]any{"type": "resume", "after": 0})
		s.ping()
		return s.until("unknown_type", 10*time.Second)
	}
	for i, s := range []*stream{a, b, a} {
		if got := resume(s); len(got) != 0 {
			t.Fatalf("resume %d of the budget's %d got %v, want nothing (an empty timeline)", i+1, burst, describe(got))
		}
	}
	for i, s := range []*stream{b, a} {
		got := resume(s)
		if len(got) != 1 || got[0].Type != "error" || got[0].Code != "rate_limited" || got[0].Message == "" {
			t.Fatalf("resume %d past the budget got %v, want a rate_limited error", i+1, describe(got))
		}
	}
	if n := e.hub.Stats.ResumesLimited.Load() + peer.hub.Stats.ResumesLimited.Load(); n != 2 {
		t.Fatalf("ResumesLimited = %d, want 2", n)
	}
	st := e.post(u, "still here")
	for _, s := range []*stream{a, b} {
		if f := s.next(5 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
			t.Fatalf("after a limited resume got %+v, want status %d", f, st.ID)
		}
	}
}

// A resume and a catch-up leave out, as the live frames and a read of the
// home timeline do, the statuses of an author the user mutes (their home
// holds them) and reposts of the statuses of one the user blocks.
func TestResumeAndCatchUpLeaveOutHidden(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL) // its own: the catch-up test kills its pub/sub
	e := newEnv(t, envOptions{rdb: rdb})
	ctx := t.Context()
	ann, bob, cat, dan := e.signUp("ann"), e.signUp("bob"), e.signUp("cat"), e.signUp("dan")
	e.follow(ann, bob)
	e.follow(ann, cat)
	if err := e.social.Mute(ctx, ann.id, bob.login); err != nil {
		t.Fatal(err)
	}
	if err := e.social.Block(ctx, ann.id, dan.login); err != nil {
		t.Fatal(err)
	}
	// posts bob's status (muted), cat's repost of dan's (blocked) and
	// cat's own, and returns the id of cat's own.
	posts := func(round string) int64 {
		e.post(bob, "bob, muted "+round)
		blocked := e.post(dan, "dan, blocked "+round)
		if _, err := e.social.Repost(ctx, cat.id, blocked.ID); err != nil {
			t.Fatal(err)
		}
		return e.post(cat, "cat "+round).ID
	}
	shown := posts("before")
	if page, err := e.social.HomeTimeline(ctx, ann.id, social.Cursor{Limit: 30}); err != nil || len(page.Statuses) != 3 {
		t.Fatalf("ann's home holds %v (%v), want the muted status and the repost with cat's own", page.Statuses, err)
	}

	s := e.connect(ann)
	s.send(map[string]any{"type": "resume", "after": 0})
	s.ping()
	if got := statusIDs(s.until("unknown_type", 10*time.Second)); !slices.Equal(got, []int64{shown}) {
		t.Fatalf("the resume sent %v, want cat's own %d alone", got, shown)
	}

	if err := rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	shown = posts("missed")
	if got := nextStatuses(s, 1, time.Minute); !slices.Equal(got, []int64{shown}) {
		t.Fatalf("the catch-up sent %v first, want cat's own %d", got, shown)
	}
	s.ping()
	if got := statusIDs(s.until("unknown_type", 10*time.Second)); len(got) != 0 {
		t.Errorf("the catch-up sent %v after cat's own status, want nothing", got)
	}
}

// A block or mute told while the stream's channel was lost (its
// hidden_changed reached no instance) is read as the channel is confirmed
// again: the catch-up and the frames after it leave the author out.
func TestHiddenReadAgainAfterPubSubLoss(t *testing.T) {
	t.Parallel()
	rdb := redistest.ClientOf(t, redistest.Start(t).URL) // its own: the test kills its pub/sub
	e := newEnv(t, envOptions{rdb: rdb})
	ctx := t.Context()
	ann, bob, cat := e.signUp("ann"), e.signUp("bob"), e.signUp("cat")
	e.follow(ann, bob)
	e.follow(ann, cat)
	s := e.connect(ann)
	// The mute's hidden_changed is lost.
	rdb.AddHook(&eachCommand{do: func(c redis.Cmder) error {
		if slices.ContainsFunc(c.Args(), func(a any) bool {
			b, _ := a.([]byte)
			return strings.Contains(string(b), protocol.TypeHiddenChanged)
		}) {
			return errors.New("refused by the test")
		}
		return nil
	}})
	if err := e.social.Mute(ctx, ann.id, bob.login); err != nil {
		t.Fatal(err)
	}
	if want, got := e.post(bob, "bob, muted, told to no one").ID, nextStatuses(s, 1, time.Minute); !slices.Equal(got, []int64{want}) {
		t.Fatalf("the stream got %v, want bob's %d: its user's mute was not told", got, want)
	}

	if err := rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	e.post(bob, "bob, muted, while the channel was lost")
	shown := e.post(cat, "cat").ID
	if got := nextStatuses(s, 1, time.Minute); !slices.Equal(got, []int64{shown}) {
		t.Fatalf("after the reconnect the stream got %v first, want cat's %d", got, shown)
	}
	// bob's first: the stream's next status is cat's only if bob's was
	// left out. (A ping's answer may pass frames held while the channel's
	// sessions are checked, which the catch-up above need not have ended.)
	e.post(bob, "bob, muted, live")
	last := e.post(cat, "cat again").ID
	if got := nextStatuses(s, 1, time.Minute); !slices.Equal(got, []int64{last}) {
		t.Errorf("the stream got %v live after the reconnect, want cat's %d alone", got, last)
	}
}
