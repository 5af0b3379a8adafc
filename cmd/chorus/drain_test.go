package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/protocol"
	"chorus/social"

	"github.com/coder/websocket"
	"golang.org/x/crypto/bcrypt"
)

// Drain test sizes: movers hold two streams each on the instance that is
// stopped, stayers two each on the other. The clients send a heartbeat
// every drainHeartbeat, the servers' heartbeat interval: long enough that
// 2,000 streams' pings, pongs and heartbeats leave a loaded machine room,
// with 15 s before a stream is closed for silence.
const (
	drainMovers      = 750
	drainStayers     = 250
	streamsPerDrainU = 2
	drainHeartbeat   = 5 * time.Second
	// drainDialTimeout bounds a client's dial, so that one the server
	// never answers does not hold a place of the dials at once for good.
	drainDialTimeout = 30 * time.Second
)

// SIGTERM of one of two instances holding 2,000 streams: every stream is
// told to reconnect and closed with 1001, every client is back on the
// other instance, no friend is ever told anyone went offline (nor is
// anyone taken out of presence once the stopped instance's lease has run
// out and it was swept), and every status posted before, during and after
// the drain reaches every client, live or by resume.
func TestSigtermDrainsStreamsToTheOtherInstance(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	env := map[string]string{"REDIS_URL": url, "CHORUS_KEY_PREFIX": prefix}
	// The online window is each instance's lease: long enough that b, busy
	// with 2,000 streams on a loaded test machine, never misses renewing
	// it (its own sweep would then take its users out of presence); a's
	// runs out that long after it stops. The drain window leaves a loaded
	// machine time for 1,500 closing handshakes; the clients send
	// heartbeats meanwhile, as the web client does, so that no stream
	// waiting for its turn is closed for silence (a pong later than one
	// interval is not counted). Should a still exit with streams open
	// (reset, not drained), the checks below allow it.
	args := []string{
		"-drain-window", "10s", "-online-window", "30s", "-heartbeat-interval", drainHeartbeat.String(),
		"-stream-open-limit", "off", "-stream-open-address-limit", "off", "-max-connections-per-address", "0",
		"-post-limit", "off", "-resume-limit", "off", "-read-limit", "off",
	}
	a, logsA, stopA := startStoppable(t, env, args...)
	b, logsB := start(t, env, args...)
	rdb := redistest.ClientOf(t, url)
	ctx := t.Context()

	// The users, made through the social core itself with cheap password
	// hashes: friends in a ring, and each mover with a stayer too; all
	// follow the herald, who posts.
	// A busy machine may keep the hashers' turns waiting long: the test
	// waits for its turn rather than be told the server is busy.
	soc := social.New(rdb, social.Options{Prefix: prefix, BcryptCost: bcrypt.MinCost, HashWait: time.Minute})
	const users = drainMovers + drainStayers
	type account struct {
		id           int64
		login, token string
	}
	accounts := make([]account, users)
	parallel(t, users, func(i int) error {
		login := fmt.Sprintf("drain%d", i)
		u, token, err := soc.SignUp(ctx, login, login, "kettle-drum-41")
		accounts[i] = account{u.ID, login, token}
		return err
	})
	herald, heraldToken, err := soc.SignUp(ctx, "herald", "Herald", "kettle-drum-41")
	if err != nil {
		t.Fatal(err)
	}
	friend := func(i int) []int {
		out := []int{(i + 1) % users}
		if i < drainMovers {
			out = append(out, drainMovers+i%drainStayers)
		}
		return out
	}
	parallel(t, users, func(i int) error {
		if _, _, err := soc.Follow(ctx, accounts[i].id, herald.Login); err != nil {
			return err
		}
		for _, j := range friend(i) {
			for _, f := range [][2]int{{i, j}, {j, i}} {
				if _, _, err := soc.Follow(ctx, accounts[f[0]].id, accounts[f[1]].login); err != nil {
					return err
				}
			}
		}
		return nil
	})

	t.Logf("%d users and their follows made", users)

	// The clients: the movers' streams on a, the stayers' on b; a stream
	// closed with 1001 reconnects to b at once, and resumes.
	streamA, streamB := "ws"+strings.TrimPrefix(a, "http")+"/api/v1/stream", "ws"+strings.TrimPrefix(b, "http")+"/api/v1/stream"
	clientCtx, stopClients := context.WithCancel(context.WithoutCancel(ctx))
	var clients []*drainClient
	var running sync.WaitGroup
	t.Cleanup(func() { stopClients(); running.Wait() })
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var dialErrors []string
		for _, c := range clients {
			c.mu.Lock()
			dialErrors = append(dialErrors, c.dialErrors...)
			c.mu.Unlock()
		}
		t.Logf("failed dials: %s", tally(dialErrors))
		t.Logf("a's log, by message:\n%s\nb's log, by message:\n%s", logSummary(logsA.String()), logSummary(logsB.String()))
	})
	for i, acc := range accounts {
		home := streamB
		if i < drainMovers {
			home = streamA
		}
		for range streamsPerDrainU {
			c := &drainClient{token: acc.token, url: home, away: streamB, seen: map[int64]bool{}}
			clients = append(clients, c)
		}
	}
	dials := make(chan struct{}, 32) // dials at once
	for _, c := range clients {
		running.Go(func() { c.run(clientCtx, dials) })
	}
	testio.Eventually(t, 3*time.Minute, func() string {
		return countClients(clients, "not ready", func(c *drainClient) bool { return c.readies == 0 })
	})

	t.Logf("%d streams ready", len(clients))
	var posted []int64
	postOne := func() {
		posted = append(posted, postStatus(t, b, heraldToken, fmt.Sprintf("status %d", len(posted))))
	}
	for range 3 {
		postOne()
	}
	allSeen := func() string {
		return countClients(clients, "missing a status", func(c *drainClient) bool { return !c.hasAll(posted) })
	}
	testio.Eventually(t, 2*time.Minute, allSeen)

	t.Log("statuses delivered; SIGTERM to a")
	// SIGTERM to a while the herald keeps posting through b.
	stopped := make(chan error, 1)
	go func() { stopped <- stopA() }()
	for drained := false; !drained; {
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("a's run returned %v", err)
			}
			drained = true
		case <-time.After(50 * time.Millisecond):
			postOne()
		}
	}
	t.Log("a stopped")
	postOne()
	testio.Eventually(t, 3*time.Minute, func() string {
		return countClients(clients, "not back on b", func(c *drainClient) bool { return c.backReadies == 0 })
	})
	testio.Eventually(t, 3*time.Minute, allSeen)

	// a's lease runs out and the sweep takes its connections: nobody moved
	// leaves presence's connected users.
	testio.Eventually(t, 3*time.Minute, func() string {
		left := rdb.ZRangeWithScores(ctx, prefix+"instances", 0, -1).Val()
		if len(left) != 1 {
			return fmt.Sprintf("%d instances in presence, want b alone", len(left))
		}
		// b's: a lease still running (its expiry, unix ms), which a,
		// stopped, no longer renews.
		if now := rdb.Time(ctx).Val(); int64(left[0].Score) <= now.UnixMilli() {
			return fmt.Sprintf("the instance left in presence, %v, holds a lease that ran out: b's was swept", left[0].Member)
		}
		return ""
	})
	if n := rdb.ZCard(ctx, prefix+"connected").Val(); n != users {
		t.Errorf("%d users connected after a was swept, want %d", n, users)
	}
	postOne()
	testio.Eventually(t, 2*time.Minute, allSeen)

	drained, toldAtOnce, offline := 0, 0, 0
	var others []string
	for _, c := range clients {
		c.mu.Lock()
		drained += c.drainCloses
		toldAtOnce += c.reconnectsNow
		offline += len(c.offline)
		others = append(others, c.otherCloses...)
		c.mu.Unlock()
	}
	want := drainMovers * streamsPerDrainU
	switch {
	case len(others) == 0:
		if drained != want || toldAtOnce != want {
			t.Errorf("%d streams closed with 1001, %d told to reconnect at once, want %d each", drained, toldAtOnce, want)
		}
		if offline != 0 {
			t.Errorf("friends were told %d times that someone went offline, want never", offline)
		}
	default:
		// Streams closed otherwise too (a machine so loaded that the
		// server found a client too slow, say): those moved early, and
		// their users may have gone offline for a moment. What is left
		// to check is that no stream is told twice.
		t.Logf("%d streams closed otherwise (%s); %d offline frames", len(others), tally(others), offline)
		if drained > want || toldAtOnce > want || toldAtOnce < drained {
			t.Errorf("%d streams closed with 1001, %d told to reconnect at once, want at most %d each, and each closed stream told", drained, toldAtOnce, want)
		}
	}
	t.Logf("%d streams drained; %d statuses posted, %d of them during the drain", drained, len(posted), len(posted)-5)
}

// drainClient is one stream of TestSigtermDrainsStreamsToTheOtherInstance,
// reconnecting as the browser client does.
type drainClient struct {
	token, url, away string

	mu            sync.Mutex
	readies       int // ready frames, on either instance
	backReadies   int // ready frames on away
	seen          map[int64]bool
	newest        int64
	offline       []int64  // the users presence frames said went offline
	reconnectsNow int      // reconnect frames saying at once
	drainCloses   int      // closes with 1001
	otherCloses   []string // closes of a stream that was ready, with any other code, as read
	dialErrors    []string // dials that failed, as they did
}

// run holds the client's stream until ctx ends; once it closes, the client
// dials away: at once after 1001, after a pause otherwise.
func (c *drainClient) run(ctx context.Context, dials chan struct{}) {
	for ctx.Err() == nil {
		dials <- struct{}{}
		dialCtx, cancel := context.WithTimeout(ctx, drainDialTimeout)
		ws, _, err := websocket.Dial(dialCtx, c.url, &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}},
		})
		cancel()
		<-dials
		if err != nil {
			c.mu.Lock()
			c.dialErrors = append(c.dialErrors, err.Error())
			c.mu.Unlock()
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		ready, err := c.read(ctx, ws)
		ws.CloseNow()
		// As behind a load balancer, the next dial reaches the instance
		// still up.
		c.url = c.away
		if ce := (websocket.CloseError{}); errors.As(err, &ce) && ce.Code == protocol.CloseGoingAway && ce.Reason == protocol.ReasonDraining {
			c.mu.Lock()
			c.drainCloses++
			c.mu.Unlock()
			continue
		}
		if ready && ctx.Err() == nil {
			c.mu.Lock()
			c.otherCloses = append(c.otherCloses, err.Error())
			c.mu.Unlock()
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// read reads ws's frames until it ends, resuming after each ready (from
// the newest status seen, or from none: a stream that closed before any
// status came, on a machine loaded enough, is caught up on them all), and
// reports whether the stream was ready. It sends a heartbeat every
// drainHeartbeat meanwhile.
func (c *drainClient) read(ctx context.Context, ws *websocket.Conn) (ready bool, _ error) {
	readCtx, stopBeats := context.WithCancel(ctx)
	defer stopBeats()
	go func() {
		beat := []byte(`{"type":"` + protocol.TypeHeartbeat + `"}`)
		tick := time.NewTicker(drainHeartbeat)
		defer tick.Stop()
		for {
			select {
			case <-readCtx.Done():
				return
			case <-tick.C:
				if ws.Write(readCtx, websocket.MessageText, beat) != nil {
					return
				}
			}
		}
	}()
	for {
		_, raw, err := ws.Read(ctx)
		if err != nil {
			return ready, err
		}
		var f struct {
			Type     string
			Online   bool
			WithinMS int64 `json:"within_ms"`
			User     struct{ ID int64 }
			Status   struct{ ID int64 }
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return ready, err
		}
		c.mu.Lock()
		switch f.Type {
		case protocol.TypeReady:
			ready = true
			c.readies++
			if c.url == c.away {
				c.backReadies++
			}
		case protocol.TypeStatus:
			c.seen[f.Status.ID] = true
			c.newest = max(c.newest, f.Status.ID)
		case protocol.TypePresence:
			if !f.Online {
				c.offline = append(c.offline, f.User.ID)
			}
		case protocol.TypeReconnect:
			if f.WithinMS == 0 {
				c.reconnectsNow++
			}
		}
		after, again := c.newest, c.readies > 1
		c.mu.Unlock()
		if f.Type == protocol.TypeReady && again {
			resume, _ := json.Marshal(map[string]any{"type": protocol.TypeResume, "after": after})
			if err := ws.Write(ctx, websocket.MessageText, resume); err != nil {
				return ready, err
			}
		}
	}
}

// hasAll reports whether the client was sent every status of ids. Called
// with c.mu held.
func (c *drainClient) hasAll(ids []int64) bool {
	for _, id := range ids {
		if !c.seen[id] {
			return false
		}
	}
	return true
}

// countClients says how many clients are in state (in is called with each
// one's mu held), or "" when none is.
func countClients(clients []*drainClient, state string, in func(*drainClient) bool) string {
	n := 0
	for _, c := range clients {
		c.mu.Lock()
		if in(c) {
			n++
		}
		c.mu.Unlock()
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d clients %s", n, len(clients), state)
}

// tally counts each distinct string of all, most frequent first:
// "3 × a, 1 × b".
func tally(all []string) string {
	counts := map[string]int{}
	for _, s := range all {
		counts[s]++
	}
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(x, y string) int { return cmp.Or(counts[y]-counts[x], strings.Compare(x, y)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d × %s", counts[k], k)
	}
	return strings.Join(parts, ", ")
}

// logSummary tallies a server log's lines by their message and level, for
// a failure's report: a drain's story in a few lines rather than
// thousands.
func logSummary(log string) string {
	var kinds []string
	for line := range strings.Lines(log) {
		kind := logField(line, "level=") + " " + logField(line, "msg=")
		if code := logField(line, "code="); code != "" { // a stream's close
			kind += " " + code + " " + logField(line, "reason=")
		}
		kinds = append(kinds, kind)
	}
	return tally(kinds)
}

// logField is the value of a text-format slog line's field named by key
// ("msg="), quoted or not; "" when the line has none.
func logField(line, key string) string {
	_, v, ok := strings.Cut(line, " "+key)
	if !ok {
		return ""
	}
	if strings.HasPrefix(v, `"`) {
		if q, err := strconv.QuotedPrefix(v); err == nil {
			return q
		}
	}
	v, _, _ = strings.Cut(v, " ")
	return strings.TrimSpace(v)
}

// parallel runs do(0..n-1) on a few goroutines, failing the test on the
// first error.
func parallel(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- fmt.Errorf("%d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// postStatus posts message as the token's user and returns its id.
func postStatus(t *testing.T, base, token, message string) int64 {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": message})
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/statuses", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Status struct{ ID int64 } }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("post: %d %v", res.StatusCode, err)
	}
	return out.Status.ID
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// TestAPIAnswersWhileDraining: after SIGTERM, while the streams drain and
// /readyz says so, the API still answers: a request in the drain is served
// with Redis, not cut short by the signal.
func TestAPIAnswersWhileDraining(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	env := map[string]string{"REDIS_URL": url, "CHORUS_KEY_PREFIX": prefix}
	a, _, stop := startStoppable(t, env, "-drain-window", "10s", "-max-streams-per-user", "100",
		"-stream-open-limit", "off", "-stream-open-address-limit", "off", "-max-connections-per-address", "0")
	_, token := signUp(t, a, "stayer")
	// Streams enough that the drain lasts its 10 s: one closed every 100 ms.
	for range 100 {
		dialStream(t, a, token)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	testio.Eventually(t, time.Minute, func() string {
		if code := do(t, "GET", a+"/readyz"); code != http.StatusServiceUnavailable {
			return fmt.Sprintf("/readyz answered %d, want 503 (draining)", code)
		}
		return ""
	})
	var me struct{ User struct{ Login string } }
	getJSON(t, a+"/api/v1/me", token, &me)
	if me.User.Login != "stayer" {
		t.Errorf("GET /api/v1/me in the drain: %+v; want the user", me)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
