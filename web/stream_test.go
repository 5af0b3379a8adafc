package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"
	"chorus/social"

	"github.com/coder/websocket"
)

func TestStreamAuthAndOrigin(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	if _, res, err := in.anon(t).dial(nil); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial without auth: %v %v, want 401", err, res)
	}
	bad := &client{tb: t, base: in.srv.URL, token: "not-a-token"}
	if _, res, err := bad.dial(nil); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial with a bad token: %v %v, want 401", err, res)
	}
	a, friend := in.signUp(t, "streamer"), in.signUp(t, "watcher")
	befriend(a, friend)
	watch := friend.connect()
	if _, res, err := a.dial(http.Header{"Origin": {"https://evil.example"}}); err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("dial from a foreign origin: %v %v, want 403", err, res)
	}
	if res := a.do("GET", "/api/v1/stream", nil); res.Status != http.StatusUpgradeRequired || res.errorCode(t) != "upgrade_required" {
		t.Fatalf("GET without an upgrade: %d %s, want 426", res.Status, res.Body)
	}
	// Refused attempts never made the user online for a moment.
	watch.quiet("presence", 300*time.Millisecond)
	ws, _, err := a.dial(http.Header{"Origin": {in.srv.URL}})
	if err != nil {
		t.Fatalf("dial from our own origin: %v", err)
	}
	ws.CloseNow()

	// By cookie, as a browser does.
	cookieClient := &client{tb: t, base: in.srv.URL}
	ws, _, err = cookieClient.dial(http.Header{"Cookie": {"chorus_session=" + a.token}, "Origin": {in.srv.URL}})
	if err != nil {
		t.Fatalf("dial by cookie: %v", err)
	}
	ws.CloseNow()
}

func TestStreamReadyAndLiveAcrossInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	alice, bob := one.signUp(t, "alice"), two.signUp(t, "bob")
	befriend(alice, bob)

	bs := two.as(bob).connect()
	if got := bs.ready.login(t); got != "bob" || bs.ready.HeartbeatIntervalMS != 10000 || len(bs.ready.OnlineFriends) != 0 {
		t.Fatalf("bob's ready = %+v", bs.ready)
	}

	// Alice comes online on instance one: bob, on two, is told.
	as := one.as(alice).connect()
	p := bs.nextOf("presence", 2*time.Second)
	if p.login(t) != "alice" || !p.Online {
		t.Fatalf("presence frame %+v, want alice online", p)
	}
	if len(as.ready.OnlineFriends) != 1 || as.ready.OnlineFriends[0].User.Login != "bob" {
		t.Fatalf("alice's ready lists %+v online, want bob", as.ready.OnlineFriends)
	}

	st := alice.post("hello bob")
	got := bs.nextOf("status", 2*time.Second)
	if got.Status == nil || got.Status.ID != st.ID || got.Status.Message != "hello bob" {
		t.Fatalf("bob got %+v, want status %d", got, st.ID)
	}
	if own := as.nextOf("status", 2*time.Second); own.Status.ID != st.ID {
		t.Fatalf("alice's own stream got %+v", own)
	}

	alice.deleteStatus(st.ID)
	if del := bs.nextOf("status_deleted", 2*time.Second); del.ID != st.ID {
		t.Fatalf("bob got deletion of %d, want %d", del.ID, st.ID)
	}

	// Alice leaves cleanly: bob sees her offline within 5 s.
	start := time.Now()
	as.close()
	p = bs.nextOf("presence", 5*time.Second)
	if p.login(t) != "alice" || p.Online {
		t.Fatalf("presence frame %+v, want alice offline", p)
	}
	t.Logf("offline seen after %s", time.Since(start))
}

func TestStreamNewFriendship(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	alice, bob := one.signUp(t, "alice"), two.signUp(t, "bob")
	alice.follow("bob")
	as := one.as(alice).connect()
	bs := two.as(bob).connect()
	as.quiet("presence", 200*time.Millisecond) // not friends yet
	bob.follow("alice")
	p := as.nextOf("presence", 2*time.Second)
	if p.login(t) != "bob" || !p.Online {
		t.Fatalf("alice got %+v, want bob online", p)
	}
	if p := bs.nextOf("presence", 2*time.Second); p.login(t) != "alice" || !p.Online {
		t.Fatalf("bob got %+v, want alice online", p)
	}

	// An unfollow ends it: each leaves the other's friends list.
	alice.unfollow("bob")
	if f := as.nextOf("friend_removed", 2*time.Second); f.login(t) != "bob" {
		t.Fatalf("alice got %+v, want bob removed", f)
	}
	if f := bs.nextOf("friend_removed", 2*time.Second); f.login(t) != "alice" {
		t.Fatalf("bob got %+v, want alice removed", f)
	}
	alice.unfollow("bob") // no friendship left to end: no frame
	as.quiet("friend_removed", 300*time.Millisecond)
}

func TestStreamSameUserOnTwoInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	alice, bob := one.signUp(t, "alice"), one.signUp(t, "bob")
	befriend(alice, bob)
	bs := one.as(bob).connect()
	a1 := one.as(alice).connect()
	bs.nextOf("presence", 2*time.Second)
	a2 := two.as(alice).connect()
	bs.quiet("presence", 300*time.Millisecond) // a second tab is no news

	st := bob.post("to both tabs")
	for i, s := range []*stream{a1, a2} {
		if f := s.nextOf("status", 2*time.Second); f.Status.ID != st.ID {
			t.Fatalf("tab %d got %+v", i+1, f)
		}
	}
	a1.close()
	bs.quiet("presence", time.Second) // still online in the other tab
	var online struct {
		Friends []struct{ User struct{ Login string } }
	}
	bob.must(http.StatusOK, "GET", "/api/v1/friends/online", nil, &online)
	if len(online.Friends) != 1 || online.Friends[0].User.Login != "alice" {
		t.Fatalf("bob's online friends = %+v, want alice", online.Friends)
	}
	a2.close()
	if p := bs.nextOf("presence", 5*time.Second); p.Online {
		t.Fatalf("presence %+v, want offline after both tabs closed", p)
	}
}

// Statuses keep coming while the client reconnects and resumes: it gets
// each exactly once, in order up to the switch, with no gap.
func TestStreamResumeWhilePostsRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	author, reader := one.signUp(t, "author"), two.signUp(t, "reader")
	reader.follow("author")

	first := reader.connect()
	var posted []int64
	for i := range 5 {
		posted = append(posted, author.post(fmt.Sprintf("before %d", i)).ID)
	}
	for range 5 {
		first.nextOf("status", 2*time.Second)
	}
	first.close()
	lastSeen := posted[len(posted)-1]

	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // posts race the reconnect and the resume
		defer wg.Done()
		for i := range 40 {
			st := author.post(fmt.Sprintf("during %d", i))
			mu.Lock()
			posted = append(posted, st.ID)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	time.Sleep(10 * time.Millisecond)
	again := reader.connect()
	again.send(map[string]any{"type": "resume", "after": lastSeen})
	wg.Wait()

	mu.Lock()
	want := slices.Clone(posted[5:])
	mu.Unlock()
	seen := map[int64]int{}
	var got []int64
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < len(want) && time.Now().Before(deadline) {
		f := again.next(time.Until(deadline))
		if f.Type != "status" {
			continue
		}
		seen[f.Status.ID]++
		got = append(got, f.Status.ID)
	}
	again.quiet("status", 300*time.Millisecond)
	for _, id := range want {
		if seen[id] != 1 {
			t.Fatalf("status %d delivered %d times; got %v, want each of %v once", id, seen[id], got, want)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d statuses, want %d: %v", len(got), len(want), got)
	}
}

func TestStreamSlowReaderDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.realtime.QueueSize = 8
	in := e.start()
	slow, fast := in.signUp(t, "slow"), in.signUp(t, "fast")

	// The slow client reads nothing after the upgrade: its socket buffers
	// fill, its writer blocks, its queue overflows.
	slowWS, _, err := slow.dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slowWS.CloseNow()
	fs := fast.connect()
	big := fmt.Sprintf(`{"type":"status","status":{"id":%%d,"uid":1,"login":"x","message":"%s","posted":"2026-01-01T00:00:00Z"}}`, strings.Repeat("x", 60<<10))
	small := `{"type":"status","status":{"id":%d,"uid":1,"login":"x","message":"m","posted":"2026-01-01T00:00:00Z"}}`
	ctx := t.Context()
	for i := 1; i <= 300; i++ {
		in.publish(t, in.social.UserChannel(slow.id), fmt.Sprintf(big, i))
		in.publish(t, in.social.UserChannel(fast.id), fmt.Sprintf(small, i))
		if f := fs.nextOf("status", 2*time.Second); f.Status.ID != int64(i) {
			t.Fatalf("fast reader got %d, want %d", f.Status.ID, i)
		}
		// The slow one is being closed: it reads at once, as the close
		// handshake waits for it only so long.
		if in.hub.Stats.SlowClosed.Load() > 0 {
			break
		}
	}
	testio.Eventually(t, 5*time.Second, func() string {
		if n := in.hub.Stats.SlowClosed.Load(); n != 1 {
			return fmt.Sprintf("slow closes = %d, want 1", n)
		}
		return ""
	})
	// Reading what it has, the slow one finds the close: 1013.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		_, _, err := slowWS.Read(rctx)
		if err != nil {
			if code := websocket.CloseStatus(err); code != websocket.StatusTryAgainLater {
				t.Fatalf("slow reader closed with %v (%v), want 1013", code, err)
			}
			break
		}
	}
}

func TestStreamLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.realtime.MaxStreams = 2
	in := e.start()
	a := in.signUp(t, "many_tabs")
	first := a.connect()
	a.connect()
	streamRefused(t, a, http.StatusServiceUnavailable, "too_many_streams", "5")
	a.must(http.StatusOK, "GET", "/api/v1/me", nil, nil) // the API still answers
	first.close()
	testio.Eventually(t, 5*time.Second, func() string {
		ws, _, err := a.dial(nil)
		if err != nil {
			return "no stream after one closed: " + err.Error()
		}
		ws.CloseNow()
		return ""
	})
}

// A user holding all the streams one user may, on every instance together,
// is refused one more before its upgrade.
func TestStreamUserLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.presence.MaxConnsPerUser = 1
	one, two := e.start(), e.start()
	a := one.signUp(t, "one_tab")
	first := a.connect()
	streamRefused(t, two.as(a), http.StatusTooManyRequests, "too_many_user_streams", "30")
	first.close()
	testio.Eventually(t, 5*time.Second, func() string {
		ws, _, err := two.as(a).dial(nil)
		if err != nil {
			return "no stream after the one held closed: " + err.Error()
		}
		ws.CloseNow()
		return ""
	})
}

func TestStreamBadFrames(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	a := in.signUp(t, "framer")
	s := a.connect()
	cases := []struct {
		name string
		typ  websocket.MessageType
		raw  string
		code string
	}{
		{"not json", websocket.MessageText, "hello", "invalid_json"},
		{"array", websocket.MessageText, "[1]", "invalid_json"},
		{"null", websocket.MessageText, " null ", "invalid_json"},
		{"unknown type", websocket.MessageText, `{"type":"dance"}`, "unknown_type"},
		{"no type", websocket.MessageText, `{}`, "unknown_type"},
		{"binary", websocket.MessageBinary, `{"type":"heartbeat"}`, "invalid_frame"},
		{"resume without after", websocket.MessageText, `{"type":"resume"}`, "invalid_resume"},
		{"resume negative", websocket.MessageText, `{"type":"resume","after":-1}`, "invalid_resume"},
		{"resume text", websocket.MessageText, `{"type":"resume","after":"12"}`, "invalid_resume"},
		{"resume fraction", websocket.MessageText, `{"type":"resume","after":1.5}`, "invalid_resume"},
	}
	for _, tc := range cases {
		s.sendRaw(tc.typ, []byte(tc.raw))
		f := s.next(2 * time.Second)
		if f.Type != "error" || f.Code != tc.code || f.Message == "" {
			t.Fatalf("%s: got %+v, want error %s", tc.name, f, tc.code)
		}
	}
	// Still open and working.
	s.send(map[string]string{"type": "heartbeat"})
	st := a.post("still here")
	if f := s.nextOf("status", 2*time.Second); f.Status.ID != st.ID {
		t.Fatalf("after bad frames got %+v", f)
	}
}

func TestStreamOversizedFrame(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	s := in.signUp(t, "big").connect()
	s.sendRaw(websocket.MessageText, []byte(`{"type":"heartbeat","pad":"`+strings.Repeat("x", 65<<10)+`"}`))
	if code := s.closedWith(5 * time.Second); code != websocket.StatusMessageTooBig {
		t.Fatalf("closed with %v, want 1009", code)
	}
}

func TestStreamSignOutCloses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	a := one.signUp(t, "leaver")
	s := two.as(a).connect()
	a.must(http.StatusNoContent, "DELETE", "/api/v1/sessions/current", nil, nil)
	if code := s.closedWith(5 * time.Second); code != websocket.StatusPolicyViolation {
		t.Fatalf("closed with %v, want 1008", code)
	}
}

// A stream stays open on its pongs to the server's pings, heartbeat frames
// or not; one that answers nothing at all is closed with 4000 after three
// intervals.
func TestStreamHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	// An interval long enough that a busy machine's late pong (up to three
	// intervals) does not close the stream that answers.
	e.presence.Window, e.presence.HeartbeatInterval = 5*time.Second, 500*time.Millisecond
	in := e.start()
	a := in.signUp(t, "beater")
	alive := a.connect() // reads, so it answers pings, and sends no frame
	if alive.ready.HeartbeatIntervalMS != 500 {
		t.Fatalf("heartbeat_interval_ms = %d", alive.ready.HeartbeatIntervalMS)
	}
	silent, res, err := a.dial(nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, res)
	}
	defer silent.CloseNow()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := silent.Read(ctx); err != nil { // ready
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // reading nothing, it answers no ping
	for {
		_, _, err := silent.Read(ctx)
		if err == nil {
			continue
		}
		if code := websocket.CloseStatus(err); code != protocol.CloseHeartbeatTimeout {
			t.Fatalf("silent stream ended with %v, want %d", err, protocol.CloseHeartbeatTimeout)
		}
		break
	}
	select {
	case <-alive.done:
		t.Fatalf("the stream answering pings was closed: %v", alive.closeErr)
	default:
	}
}

func TestStreamShutdownClosesWithGoingAway(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	stayer := in.signUp(t, "stayer")
	s := stayer.connect()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := in.hub.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if code := s.closedWith(time.Second); code != websocket.StatusGoingAway {
		t.Fatalf("closed with %v, want 1001", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %s", d)
	}
	streamRefused(t, stayer, http.StatusServiceUnavailable, "shutting_down", "")
}

func TestStreamOfALostSessionClosesAfterRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := newEnv(t, social.Options{})
	in := e.startOn(redistest.ClientOf(t, srv.URL))
	author, reader := in.signUp(t, "author"), in.signUp(t, "reader")
	reader.follow("author")
	s := reader.connect()
	author.post("before the restart")
	s.nextOf("status", 2*time.Second)

	srv.Stop()
	testio.Eventually(t, 5*time.Second, func() string {
		if res := in.anon(t).do("GET", "/readyz", nil); res.Status != http.StatusServiceUnavailable {
			return fmt.Sprintf("readyz with Redis down: %d", res.Status)
		}
		return ""
	})
	// An empty Redis comes back where the old one was (as after a crash
	// without persistence): the data is gone, so sign up again.
	redistest.StartOnPort(t, srv.Port)
	testio.Eventually(t, 15*time.Second, func() string {
		if res := in.anon(t).do("GET", "/readyz", nil); res.Status != http.StatusOK {
			return fmt.Sprintf("readyz after Redis came back: %d", res.Status)
		}
		return ""
	})

	// Redis lost the reader's session with the rest: once the pub/sub
	// connection is back, the hub checks the stream's session, finds it
	// gone and closes the stream, having sent it nothing more.
	in.publish(t, in.social.UserChannel(reader.id),
		`{"type":"status","status":{"id":1000000,"uid":1,"login":"author","message":"after","posted":"2026-01-01T00:00:00Z"}}`)
	if code := s.closedWith(20 * time.Second); code != websocket.StatusPolicyViolation {
		t.Fatalf("stream of a lost session closed with %v, want 1008", code)
	}
	for len(s.frames) > 0 {
		if f := <-s.frames; f.Type == "status" {
			t.Fatalf("stream of a lost session was sent %+v", f)
		}
	}
	// Signed up again, the reader streams live as before.
	author, reader = in.signUp(t, "author"), in.signUp(t, "reader")
	reader.follow("author")
	s = reader.connect()
	posted := author.post("after the restart")
	if f := s.nextOf("status", 5*time.Second); f.Status.ID != posted.ID {
		t.Fatalf("after the restart got %+v, want status %d", f, posted.ID)
	}
	if n := in.hub.Stats.PubSubRestarts.Load(); n < 1 {
		t.Fatalf("pub/sub restarts = %d, want at least 1", n)
	}
}

func TestStreamLeavesNoGoroutines(t *testing.T) {
	e := newEnv(t, social.Options{})
	in := e.start()
	users := make([]*client, 10)
	for i := range users {
		users[i] = in.signUp(t, fmt.Sprintf("churn%d", i))
	}
	befriend(users[0], users[1])
	settle := func() int {
		var n int
		for range 50 {
			runtime.GC()
			n = goroutinesBesidePool()
			time.Sleep(20 * time.Millisecond)
		}
		return n
	}
	// Warm the connection pools first.
	for _, u := range users {
		u.connect().close()
	}
	before := settle()
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				ws, _, err := users[w].dial(nil)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				ws.Read(context.Background()) // the ready frame
				ws.Close(websocket.StatusNormalClosure, "")
			}
		}()
	}
	wg.Wait()
	testio.Eventually(t, 10*time.Second, func() string {
		if n := in.hub.Stats.Open.Load(); n != 0 {
			return fmt.Sprintf("%d streams still open", n)
		}
		return ""
	})
	after := settle()
	if after > before+5 {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("goroutines: %d before 1000 connects, %d after\n%s", before, after, buf[:n])
	}

}

// goroutinesBesidePool counts the process's goroutines but those of
// realtime's pool of stream readers, which keeps some waiting for the next
// reads by design (at most 64 a process).
func goroutinesBesidePool() int {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if len(bytes.TrimSpace(g)) > 0 && !bytes.Contains(g, []byte("chorus/realtime.(*pool).serve")) {
			n++
		}
	}
	return n
}
