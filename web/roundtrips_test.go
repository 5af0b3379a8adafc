package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/bus"
	"chorus/internal/redistest"
	"chorus/internal/slots"
	"chorus/presence"
	"chorus/social"
	"chorus/web"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// counted marks the context of the requests whose round trips a
// roundTrips hook counts.
type counted struct{}

// roundTrips is a go-redis hook that counts the round trips to Redis made
// for the requests marked counted, one per command or pipeline sent (a
// pipeline split over a cluster's nodes goes to them at once: one), and
// notes at which of them a live frame was first sent on a watched channel
// (by a command that did not fail). Each is noted once it is answered.
type roundTrips struct {
	mu       sync.Mutex
	watch    map[string]bool // channels whose frames are looked for
	sent     []string        // the round trips made, their commands' names
	frameAt  int             // the round trip (from 1) that first carried a frame, 0: none yet
	counting bool
	// atFrame, when set, is called as the round trip that first carried a
	// frame is answered, before the request goes on.
	atFrame func()
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.note(ctx, []redis.Cmder{cmd})
		return err
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.note(ctx, cmds)
		return err
	}
}

func (h *roundTrips) note(ctx context.Context, cmds []redis.Cmder) {
	// A connection the pool dials says hello first: its own set-up, once
	// a connection, not the request's.
	if ctx.Value(counted{}) == nil || web.ConnSetup[cmds[0].Name()] {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.counting {
		return
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name()
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && h.watch[s] && h.frameAt == 0 && c.Err() == nil {
				h.frameAt = len(h.sent) + 1
				if h.atFrame != nil {
					h.atFrame()
				}
			}
		}
	}
	h.sent = append(h.sent, strings.Join(names, " "))
}

// start counts from zero.
func (h *roundTrips) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent, h.frameAt, h.counting = nil, 0, true
}

// stop ends the count and returns it.
func (h *roundTrips) stop() (sent []string, frameAt int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counting = false
	return h.sent, h.frameAt
}

// TestPostRoundTrips counts the Redis round trips of a post's request, its
// session and rate limit included, by an author of 1,000 followers: the
// connected followers' frames leave after at most three, one after
// another, and the answer after at most four; on one Redis after two and
// three, the frames ahead of the pushes to the page's home timelines,
// which come in the next round trip.
func TestPostRoundTrips(t *testing.T) {
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{PostsPerUser: redis_rate.PerMinute(600)}
	e.connContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, counted{}, true)
	}
	hook := &roundTrips{watch: map[string]bool{}}
	in := e.startOn(redistest.WithHook(t, e.rdb, hook))
	e.connContext = nil
	other := e.start()

	author := in.signUp(t, "author")
	b := bus.New(e.rdb, e.prefix)
	if frames := b.FramesChannel(); frames != "" {
		// On one Redis the push names its followers' frames by their ids,
		// and the channel that many go on at once.
		hook.watch[frames] = true
	}
	var streams []*stream
	// An author of a full first page of followers (social's default
	// FanoutPassSize), some of them connected.
	const followers, connected, pageOfFollowers = 40, 4, 1000
	for i := range followers {
		f := other.signUp(t, fmt.Sprintf("reader%02d", i))
		f.must(http.StatusOK, "PUT", "/api/v1/following/author", nil, nil)
		if i < connected {
			streams = append(streams, f.connect())
			hook.watch[b.UserChannel(f.id)] = true
		}
	}
	// The rest of a first page of followers, made straight through the
	// social core (faster than through the API).
	var quiet int64 // one of them
	for i := followers; i < pageOfFollowers; i++ {
		u, _, err := other.social.SignUp(t.Context(), fmt.Sprintf("quiet%03d", i), "Quiet", "kettle-drum-41")
		if err != nil {
			t.Fatal(err)
		}
		quiet = u.ID
		if _, _, err := other.social.Follow(t.Context(), u.ID, "author"); err != nil {
			t.Fatal(err)
		}
	}
	// A browser reads before it posts: the session is known to the
	// instance. And the first post loads the scripts into Redis (as after
	// a restart of Redis): one more round trip for each that was missing.
	author.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
	author.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": "first"}, nil)
	for _, s := range streams {
		s.nextOf("status", 10*time.Second)
	}

	// The instance's metrics say as much (its /metrics reads Redis on a
	// context of its own, not counted).
	const posts = `method="POST",route="/api/v1/statuses"`
	postMetrics := func() (trips, wait, took float64) {
		return in.metric(t, "chorus_http_request_redis_round_trips_sum", posts),
			in.metric(t, "chorus_http_request_redis_seconds_sum", posts),
			in.metric(t, "chorus_http_request_duration_seconds_sum", posts)
	}
	// The statuses in quiet's home timeline (social's key, by hand).
	quietKey := e.prefix + "home:" + slots.Tag(redistest.OnCluster(), strconv.FormatInt(quiet, 10))
	quietHome := func() int64 { return e.rdb.ZCard(context.Background(), quietKey).Val() }
	maxFrameAt := 3
	if b.FramesChannel() != "" { // one Redis
		maxFrameAt = 2
	}
	for round := range 3 {
		trips0, wait0, took0 := postMetrics()
		home0, homeAtFrame := quietHome(), int64(-1)
		// As the round trip that carried the frames is answered, before
		// the post goes on: the frames left Redis with it, so each stream
		// gets its own.
		early := make([]int64, len(streams))
		hook.atFrame = func() {
			homeAtFrame = quietHome()
			for i, s := range streams {
				early[i] = s.statusWithin(10 * time.Second)
			}
		}
		hook.start()
		var out struct{ Status statusJSON }
		author.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": fmt.Sprintf("hello %d", round)}, &out)
		sent, frameAt := hook.stop()
		if home := quietHome(); home != home0+1 {
			t.Errorf("round %d: a quiet follower's home holds %d statuses once the post answered, want %d", round, home, home0+1)
		}
		// On a cluster the frames go with their pushes.
		if want := map[bool]int64{true: home0, false: home0 + 1}[b.FramesChannel() != ""]; homeAtFrame != want {
			t.Errorf("round %d: a quiet follower's home held %d statuses as the frames left, want %d", round, homeAtFrame, want)
		}
		t.Logf("round %d: %d round trips, frame at %d: %q", round, len(sent), frameAt, sent)
		trips, wait, took := postMetrics()
		if trips-trips0 != float64(len(sent)) {
			t.Errorf("round %d: the post's round trips by its metric = %v, want %d", round, trips-trips0, len(sent))
		}
		if wait, took := wait-wait0, took-took0; wait <= 0 || wait > took {
			t.Errorf("round %d: the post waited %v s on Redis by its metric, answered in %v s", round, wait, took)
		}
		if frameAt == 0 || frameAt > maxFrameAt {
			t.Errorf("round %d: the frames left at round trip %d, want 1 to %d: %q", round, frameAt, maxFrameAt, sent)
		}
		if len(sent) > maxFrameAt+1 {
			t.Errorf("round %d: the post answered after %d round trips, want at most %d: %q", round, len(sent), maxFrameAt+1, sent)
		}
		for i, id := range early {
			if id != out.Status.ID {
				t.Errorf("round %d: stream %d got status %d as the frames' round trip was answered, want %d", round, i, id, out.Status.ID)
			}
		}
	}
	for _, s := range streams {
		s.quiet("status", 200*time.Millisecond) // each status came once
	}
	// On one Redis each instance holding streams is marked as a reader of
	// the frames channel under presence's id for it (as the app wires
	// them), so that a push may send its frames in one message.
	if marks := b.FramesReadersKey(); marks != "" {
		ids, err := e.rdb.ZRange(t.Context(), presence.InstancesKey(e.prefix, false), 0, -1).Result()
		if err != nil || len(ids) == 0 {
			t.Fatalf("instances holding streams: %v, %v", ids, err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, id := range ids {
			for e.rdb.ZScore(t.Context(), marks, id).Err() != nil {
				if time.Now().After(deadline) {
					t.Fatalf("instance %s holds streams, unmarked as a reader of the frames channel", id)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// A post checks its session in Redis whatever the instance remembers of
// it: a session ended since it was last seen is refused, and one the
// instance never saw is read first.
func TestPostChecksItsSession(t *testing.T) {
	e := newEnv(t, social.Options{})
	a, b := e.start(), e.start()
	ada := a.signUp(t, "ada")
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
	a.as(ada).must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": "one"}, nil)
	b.as(ada).must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": "two"}, nil)
	b.as(ada).must(http.StatusNoContent, "DELETE", "/api/v1/sessions/current", nil, nil)
	res := a.as(ada).do("POST", "/api/v1/statuses", map[string]string{"message": "three"})
	if res.Status != http.StatusUnauthorized {
		t.Fatalf("a post with an ended session answered %d %s, want 401", res.Status, res.Body)
	}
	// A bad body with an ended session is a 401 too, not a 400.
	res = a.as(ada).do("POST", "/api/v1/statuses", "{")
	if res.Status != http.StatusUnauthorized {
		t.Fatalf("a bad post with an ended session answered %d %s, want 401", res.Status, res.Body)
	}
	var page pageJSON
	a.anon(t).must(http.StatusOK, "GET", "/api/v1/users/ada/statuses", nil, &page)
	if len(page.Statuses) != 2 {
		t.Fatalf("ada's profile holds %d statuses, want 2", len(page.Statuses))
	}
}

// statusWithin returns the id of the next status frame s gets within d, 0
// when none comes; unlike nextOf, it may run outside the test's goroutine.
func (s *stream) statusWithin(d time.Duration) int64 {
	deadline := time.After(d)
	for {
		select {
		case f := <-s.frames:
			if f.Type == "status" {
				return f.Status.ID
			}
		case <-deadline:
			return 0
		}
	}
}
