package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"
	"chorus/presence"
	"chorus/protocol"
	"chorus/social"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
)

// memFeed is a Feed held in memory, naming its channels as on a cluster,
// so that a hub can run on a Redis Cluster with the social core out of the
// way: statuses go to the home timelines the test names, and are published
// as social publishes them.
type memFeed struct {
	prefix string
	rdb    *redis.ClusterClient

	mu       sync.Mutex
	lastID   int64
	home     map[int64][]social.Status // by reader, oldest first
	pulls    map[int64][]int64         // the pulled authors each user follows
	sessions map[string]int64          // session id → uid

	// shortPages is how many of the next newest-first reads end early,
	// empty, with an exact cursor under the statuses they looked at (as a
	// home read past its pulled statuses' scan does): one status each.
	shortPages int
}

var _ Feed = (*memFeed)(nil)

func (f *memFeed) UserChannel(uid int64) string {
	return f.prefix + "events:user:{" + strconv.FormatInt(uid, 10) + "}"
}

func (f *memFeed) AuthorChannel(uid int64) string {
	return f.prefix + "events:author:{" + strconv.FormatInt(uid, 10) + "}"
}

func (f *memFeed) UserByID(_ context.Context, uid int64) (social.User, error) {
	return social.User{ID: uid, Login: "user" + strconv.FormatInt(uid, 10)}, nil
}

func (f *memFeed) StreamOpenings(ctx context.Context, keys []social.StreamKey) ([]social.StreamOpening, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]social.StreamOpening, len(keys))
	for i, k := range keys {
		u, _ := f.UserByID(ctx, k.UID)
		out[i] = social.StreamOpening{Owner: f.sessions[k.Session], Pulled: slices.Clone(f.pulls[k.UID]), User: u}
	}
	return out, nil
}

func (f *memFeed) Users(ctx context.Context, ids []int64) ([]social.User, error) {
	users := make([]social.User, len(ids))
	for i, id := range ids {
		users[i], _ = f.UserByID(ctx, id)
	}
	return users, nil
}

func (f *memFeed) SessionOwners(_ context.Context, ids []string) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	owners := make([]int64, len(ids))
	for i, id := range ids {
		owners[i] = f.sessions[id]
	}
	return owners, nil
}

// HomeTimeline reads either way, as resumes and catch-ups do.
func (f *memFeed) PulledAuthorsOf(_ context.Context, uids []int64) ([][]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]int64, len(uids))
	for i, uid := range uids {
		out[i] = slices.Clone(f.pulls[uid])
	}
	return out, nil
}

func (f *memFeed) HomeTimeline(_ context.Context, uid int64, c social.Cursor) (social.TimelinePage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	statuses := slices.Clone(f.home[uid]) // oldest first
	keep := func(st social.Status) bool { return st.ID > c.After }
	if !c.Forward { // newest first, under c.Before (0: from the newest)
		slices.Reverse(statuses)
		keep = func(st social.Status) bool { return c.Before == 0 || st.ID < c.Before }
	}
	var page social.TimelinePage
	for _, st := range statuses {
		if !keep(st) {
			continue
		}
		if !c.Forward && f.shortPages > 0 {
			f.shortPages--
			next := st.ID + 1 // nothing above st was left unread: st comes next
			page.NextBefore = &next
			return page, nil
		}
		if len(page.Statuses) == c.Limit {
			next := page.Statuses[len(page.Statuses)-1].ID
			if c.Forward {
				page.NextAfter = &next
			} else {
				page.NextBefore = &next
			}
			break
		}
		page.Statuses = append(page.Statuses, st)
	}
	return page, nil
}

// post adds a status by author to the home timelines of readers, then
// publishes it on channel, trying again for up to 20 s while its master
// cannot be reached: every status a timeline holds is published once. It
// returns how many subscribers the status reached.
func (f *memFeed) post(ctx context.Context, author int64, channel string, readers ...int64) (social.Status, int64, error) {
	st := f.write(author, readers...)
	n, err := f.publish(ctx, channel, st)
	return st, n, err
}

// write gives a status by author an id and adds it to the home timelines
// of readers, publishing nothing.
func (f *memFeed) write(author int64, readers ...int64) social.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastID++
	st := social.Status{ID: f.lastID, UID: author, Login: "user" + strconv.FormatInt(author, 10), Message: "hello", Posted: time.Now()}
	for _, r := range readers {
		f.home[r] = append(f.home[r], st)
	}
	return st
}

// publish publishes st on channel, trying again for up to 20 s while its
// master cannot be reached, and returns how many subscribers it reached.
func (f *memFeed) publish(ctx context.Context, channel string, st social.Status) (int64, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := f.rdb.SPublish(ctx, channel, statusFrameJSON(st)).Result()
		if err == nil || time.Now().After(deadline) {
			return n, err
		}
		// go-redis reads the slots again on a redirection, which a dead
		// master cannot answer, or once a minute.
		f.rdb.ReloadState(ctx)
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *memFeed) HiddenAuthors(context.Context, int64) ([]int64, error) { return nil, nil }

func (f *memFeed) HiddenAuthorsOf(_ context.Context, uids []int64) ([][]int64, error) {
	return make([][]int64, len(uids)), nil
}

func (f *memFeed) LastStatusID(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastID, nil
}

func (f *memFeed) Originals(_ context.Context, sts []social.Status) ([]social.Status, error) {
	return sts, nil // it holds no reposts
}

// homeIDs is the ids of uid's home timeline, oldest first.
func (f *memFeed) homeIDs(uid int64) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int64
	for _, st := range f.home[uid] {
		ids = append(ids, st.ID)
	}
	return ids
}

// memPresence is a Presence that tells everyone is online.
type memPresence struct{}

func (memPresence) Open(context.Context, int64, string) (presence.Opened, error) {
	return presence.Opened{First: true, Seen: time.Now()}, nil
}
func (memPresence) Heartbeats(context.Context, []presence.Beat) error       { return nil }
func (memPresence) Disconnect(context.Context, int64, string) (bool, error) { return true, nil }
func (memPresence) Release(context.Context, int64, string) error            { return nil }

// clusterEnv is a hub on a Redis Cluster over memFeed and memPresence,
// served by httptest.
type clusterEnv struct {
	tb   testing.TB
	rdb  *redis.ClusterClient
	feed *memFeed
	hub  *Hub
	url  string
}

// newClusterEnv is a hub on hubRDB whose feed publishes with rdb: two
// clients of one cluster, or the same one.
func newClusterEnv(tb testing.TB, rdb, hubRDB *redis.ClusterClient) *clusterEnv {
	tb.Helper()
	feed := &memFeed{prefix: redistest.Prefix(), rdb: rdb, home: map[int64][]social.Status{}, pulls: map[int64][]int64{}, sessions: map[string]int64{}}
	hub := New(hubRDB, feed, memPresence{}, Options{Prefix: feed.prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	url := serve(tb, hub, func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get(tokenHeader)
		owners, _ := feed.SessionOwners(r.Context(), []string{session})
		if owners[0] == 0 {
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		if err := hub.Serve(w, r, owners[0], session); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	return &clusterEnv{tb: tb, rdb: rdb, feed: feed, hub: hub, url: url}
}

// connect signs uid in, following the pulled authors named, and opens a
// stream.
func (e *clusterEnv) connect(uid int64, pulls ...int64) *stream {
	e.tb.Helper()
	session := "session-" + strconv.FormatInt(uid, 10)
	e.feed.mu.Lock()
	e.feed.sessions[session] = uid
	e.feed.pulls[uid] = pulls
	e.feed.mu.Unlock()
	return connectToken(e.tb, e.url, session)
}

// upToMark publishes a mark on uid's channel, and on the channel of each
// pulled author named, and returns the frames s is sent before the last of
// them comes: a channel's frames come in the order they are published, but
// channels on different masters keep no order between them.
func (e *clusterEnv) upToMark(uid int64, s *stream, pulls ...int64) []frame {
	e.tb.Helper()
	channels := []string{e.feed.UserChannel(uid)}
	for _, author := range pulls {
		channels = append(channels, e.feed.AuthorChannel(author))
	}
	marks := map[string]bool{}
	for _, channel := range channels {
		mark := "mark_" + strconv.FormatInt(serial.Add(1), 10)
		marks[mark] = true
		raw, _ := json.Marshal(map[string]string{"type": "mark", "mark": mark})
		if err := e.rdb.SPublish(e.tb.Context(), channel, raw).Err(); err != nil {
			e.tb.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var got []frame
	for len(marks) > 0 {
		f := s.next(time.Until(deadline))
		if f.Type == "mark" && marks[f.Mark] {
			delete(marks, f.Mark)
			continue
		}
		got = append(got, f)
	}
	return got
}

// send publishes v, as JSON, on uid's channel, as any instance would.
func (e *clusterEnv) send(uid int64, v any) {
	e.tb.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		e.tb.Fatal(err)
	}
	if err := e.rdb.SPublish(e.tb.Context(), e.feed.UserChannel(uid), raw).Err(); err != nil {
		e.tb.Fatal(err)
	}
}

// masterOf is the address of the master serving channel.
func (e *clusterEnv) masterOf(channel string) string {
	e.tb.Helper()
	m, err := e.rdb.MasterForKey(e.tb.Context(), channel)
	if err != nil {
		e.tb.Fatal(err)
	}
	return m.Options().Addr
}

// A hub on a cluster subscribes the channels of its users and pulled
// authors on every master, and routes what is published there; sign-outs
// and friendship announcements, one SPUBLISH each or a pipeline of them,
// reach the masters of their channels.
func TestHubOnCluster(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.ClusterClient(t)
	e := newClusterEnv(t, rdb, rdb)
	const users = 30
	streams := map[int64]*stream{}
	masters := map[string][]int64{}
	for uid := int64(1); uid <= users; uid++ {
		streams[uid] = e.connect(uid)
		masters[e.masterOf(e.feed.UserChannel(uid))] = append(masters[e.masterOf(e.feed.UserChannel(uid))], uid)
	}
	if len(masters) != 3 {
		t.Fatalf("users' channels on %d masters, want 3", len(masters))
	}
	// A reader of a pulled author whose channel is on another master.
	const reader, author = 100, 200
	if e.masterOf(e.feed.UserChannel(reader)) == e.masterOf(e.feed.AuthorChannel(author)) {
		t.Fatal("pick a reader and an author whose channels are on different masters")
	}
	streams[reader] = e.connect(reader, author)

	want := map[int64][]string{}
	for uid := range streams {
		st, _, err := e.feed.post(t.Context(), uid, e.feed.UserChannel(uid), uid)
		if err != nil {
			t.Fatal(err)
		}
		want[uid] = append(want[uid], fmt.Sprintf("status %d", st.ID))
	}
	st, _, err := e.feed.post(t.Context(), author, e.feed.AuthorChannel(author), reader)
	if err != nil {
		t.Fatal(err)
	}
	want[reader] = append(want[reader], fmt.Sprintf("status %d", st.ID))
	var a, b int64 // friends whose channels are on different masters
	for _, uids := range masters {
		if a == 0 {
			a = uids[0]
		} else if b == 0 {
			b = uids[0]
		}
	}
	// a and b are told of each other as presence tells new friends.
	now := time.Now()
	e.send(a, protocol.PresenceFrame{Type: protocol.TypePresence, User: protocol.UserRef{ID: b}, Online: true, LastSeen: &now})
	e.send(b, protocol.PresenceFrame{Type: protocol.TypePresence, User: protocol.UserRef{ID: a}, Online: true, LastSeen: &now})
	want[a] = append(want[a], fmt.Sprintf("presence of %d online=true", b))
	want[b] = append(want[b], fmt.Sprintf("presence of %d online=true", a))
	for uid, s := range streams {
		// Channels on different masters come on different connections:
		// their frames keep no order between them.
		var pulls []int64
		if uid == reader {
			pulls = []int64{author}
		}
		got := describe(e.upToMark(uid, s, pulls...))
		if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(want[uid]))) {
			t.Errorf("user %d's stream got %q, want %q", uid, got, want[uid])
		}
	}

	if n := e.hub.Stats.SubscribeCommands.Load(); n != users+2 {
		t.Fatalf("SubscribeCommands = %d for %d channels subscribed one at a time, want one each", n, users+2)
	}
	// The session ends as social's sign-out ends it.
	e.send(users, protocol.Internal{Type: protocol.TypeSessionEnded, Session: "session-" + strconv.Itoa(users)})
	if code, _ := streams[users].closed(5 * time.Second); code != websocket.StatusCode(protocol.ClosePolicy) {
		t.Fatalf("stream of a signed-out user closed with %v, want 1008", code)
	}
	if n := e.hub.Stats.PubSubRestarts.Load(); n != 0 {
		t.Fatalf("PubSubRestarts = %d with no connection lost, want 0", n)
	}
}

// When a master dies, the streams whose channels it served miss nothing:
// each gets every status of its home timeline once (in the order each
// channel's come: channels on different masters keep none between them).
// That holds for a reader whose own channel is on a master that stays,
// while a pulled author they follow is on the one that dies: the reader's
// frames are held back from the moment the author's channel is lost, so the
// statuses that keep coming on the reader's own channel cannot move its
// catch-up past what the author's missed, published once the replica is
// promoted but before the hub subscribed there again (which the test holds
// back, keeping the hub from connecting to the replica for a while).
func TestHubCatchUpAfterFailover(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 1)
	rdb := redistest.ClusterClientOf(t, cluster.Addrs())
	victim := cluster.Nodes[0].Addr
	gate := &dialGate{open: make(chan struct{})}
	hubRDB := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), Dialer: gate.dial})
	t.Cleanup(func() { hubRDB.Close() })
	e := newClusterEnv(t, rdb, hubRDB)
	used := map[int64]bool{}
	find := func(onVictim bool, channel func(int64) string) int64 {
		for uid := int64(1); ; uid++ {
			if !used[uid] && (e.masterOf(channel(uid)) == victim) == onVictim {
				used[uid] = true
				return uid
			}
		}
	}
	reader, author := find(false, e.feed.UserChannel), find(true, e.feed.AuthorChannel)
	pushed, bystander := find(true, e.feed.UserChannel), find(false, e.feed.UserChannel)
	streams := map[int64]*stream{
		reader: e.connect(reader, author), pushed: e.connect(pushed), bystander: e.connect(bystander),
	}

	stop := make(chan struct{})
	var posters sync.WaitGroup
	var unheard atomic.Int64 // the author's statuses published to no subscriber
	post := func(by int64, channel string, readers ...int64) {
		posters.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				_, n, err := e.feed.post(context.Background(), by, channel, readers...)
				if err != nil {
					t.Errorf("post to %s: %v", channel, err)
					return
				}
				if n == 0 && by == author {
					unheard.Add(1)
				}
			}
		})
	}
	post(reader, e.feed.UserChannel(reader), reader)
	post(author, e.feed.AuthorChannel(author), reader)
	post(pushed, e.feed.UserChannel(pushed), pushed)
	post(bystander, e.feed.UserChannel(bystander), bystander)
	time.Sleep(300 * time.Millisecond)

	gate.block(replicaOf(t, cluster, victim))
	cluster.Nodes[0].Stop()
	testio.Eventually(t, 30*time.Second, func() string {
		if n := unheard.Load(); n < 10 {
			return fmt.Sprintf("%d of the author's statuses published on the promoted replica before the hub subscribed there, want 10", n)
		}
		return ""
	})
	close(gate.open)
	h := e.hub
	testio.Eventually(t, 30*time.Second, func() string {
		h.mu.RLock()
		defer h.mu.RUnlock()
		u := h.users[e.feed.UserChannel(reader)]
		if n := h.Stats.PubSubRestarts.Load(); n < 2 || len(h.lost) > 0 || u.checking {
			return fmt.Sprintf("%d channels confirmed again, %d lost, the reader held back: %v", n, len(h.lost), u.checking)
		}
		return ""
	})
	time.Sleep(300 * time.Millisecond)
	close(stop)
	posters.Wait()

	for uid, s := range streams {
		want := e.feed.homeIDs(uid)
		got := statusesUntil(s, want, 20*time.Second)
		var pulls []int64
		if uid == reader {
			pulls = []int64{author}
		}
		got = append(got, statusIDs(e.upToMark(uid, s, pulls...))...)
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("user %d's stream got statuses %v, want its home timeline %v", uid, got, want)
		}
	}
	if n := h.Stats.PubSubRestarts.Load(); n != 2 {
		t.Errorf("PubSubRestarts = %d, want 2: the author's channel and the pushed user's", n)
	}
}

// A status given its id before another, whose publish is held up while the
// other's goes out (a post waiting out a failover) and then reaches no
// subscriber, the stream's subscription being lost, is sent by the
// catch-up, though it is older than the newest status the stream was sent.
// A status posted before the stream opened is not. The catch-up reads on
// past a page that ends early (a reader of many pulled authors).
func TestCatchUpSendsSkippedStatuses(t *testing.T) {
	t.Parallel()
	for _, short := range []int{0, 2} {
		t.Run(fmt.Sprintf("short pages %d", short), func(t *testing.T) { catchUpSendsSkipped(t, short) })
	}
}

func catchUpSendsSkipped(t *testing.T, shortPages int) {
	cluster := redistest.StartCluster(t, 3, 0)
	rdb := redistest.ClusterClientOf(t, cluster.Addrs())
	gate := &dialGate{open: make(chan struct{})}
	hubRDB := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), Dialer: gate.dial})
	t.Cleanup(func() { hubRDB.Close() })
	e := newClusterEnv(t, rdb, hubRDB)
	ctx := t.Context()
	const reader, author = 1, 2
	channel := e.feed.UserChannel(reader)

	before := e.feed.write(author, reader)
	s := e.connect(reader)
	skipped := e.feed.write(author, reader)
	live, _, err := e.feed.post(ctx, author, channel, reader)
	if err != nil {
		t.Fatal(err)
	}
	if f := s.next(5 * time.Second); f.Type != "status" || f.Status.ID != live.ID {
		t.Fatalf("stream got %v, want status %d", f, live.ID)
	}

	// The hub loses its subscription, and cannot make it again until the
	// skipped status has been published to nobody.
	master := e.masterOf(channel)
	gate.block(master)
	node := redis.NewClient(&redis.Options{Addr: master})
	defer node.Close()
	if err := node.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := e.feed.publish(ctx, channel, skipped); err != nil || n != 0 {
		t.Fatalf("the skipped status reached %d subscribers (%v), want none", n, err)
	}
	e.feed.mu.Lock()
	e.feed.shortPages = shortPages
	e.feed.mu.Unlock()
	close(gate.open)

	got := statusesUntil(s, []int64{skipped.ID}, 20*time.Second)
	got = append(got, statusIDs(e.upToMark(reader, s))...)
	if !slices.Equal(got, []int64{skipped.ID}) {
		t.Fatalf("stream caught up on %v, want the skipped status %d alone (not %d, posted before it opened, nor %d again)",
			got, skipped.ID, before.ID, live.ID)
	}
}

// statusesUntil reads the status frames of s until it has been sent every
// id of want, or within has passed, and returns the ids it was sent.
func statusesUntil(s *stream, want []int64, within time.Duration) []int64 {
	missing := map[int64]bool{}
	for _, id := range want {
		missing[id] = true
	}
	var got []int64
	deadline := time.After(within)
	for len(missing) > 0 {
		select {
		case f := <-s.frames:
			if f.Type == "status" {
				got = append(got, f.Status.ID)
				delete(missing, f.Status.ID)
			}
		case <-deadline:
			return got
		}
	}
	return got
}

// dialGate holds back a client's dials to one address, once blocked, until
// open closes.
type dialGate struct {
	mu      sync.Mutex
	blocked string
	open    chan struct{}
}

func (g *dialGate) block(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.blocked = addr
}

func (g *dialGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	blocked := addr == g.blocked
	g.mu.Unlock()
	if blocked {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// replicaOf is the address of the replica of the master at addr.
func replicaOf(tb testing.TB, cluster *redistest.Cluster, addr string) string {
	tb.Helper()
	_, port, _ := net.SplitHostPort(addr)
	for _, n := range cluster.Nodes {
		node := redis.NewClient(&redis.Options{Addr: n.Addr})
		role, err := node.Do(tb.Context(), "ROLE").Slice()
		node.Close()
		if err != nil {
			tb.Fatal(err)
		}
		if role[0] == "slave" && fmt.Sprint(role[2]) == port {
			return n.Addr
		}
	}
	tb.Fatalf("no replica of %s", addr)
	return ""
}

// On a cluster each thread's channel is in a slot of its own: a hub
// subscribes to the threads its streams watch on whichever masters serve
// them, and routes each thread's frames to its watchers alone.
func TestThreadWatchOnCluster(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.ClusterClient(t)
	e := newClusterEnv(t, rdb, rdb)
	threads := map[string]int64{} // a thread on each master
	for id := int64(1); len(threads) < 3 && id < 1000; id++ {
		if m := e.masterOf(e.hub.bus.ThreadChannel(id)); threads[m] == 0 {
			threads[m] = id
		}
	}
	if len(threads) != 3 {
		t.Fatalf("threads' channels on %d masters, want 3", len(threads))
	}
	streams := map[int64]*stream{}
	for _, thread := range threads {
		s := e.connect(thread)
		s.send(map[string]any{"type": protocol.TypeWatch, "timeline": protocol.TimelineThread, "thread": thread})
		if f := s.next(10 * time.Second); f.Type != protocol.TypeWatching || f.Thread != thread {
			t.Fatalf("the answer to a watch of thread %d is %v, want watching it", thread, f)
		}
		streams[thread] = s
	}
	for _, thread := range threads {
		raw, _ := json.Marshal(protocol.ThreadStatus{Type: protocol.TypeThreadStatus, Thread: thread, Status: social.Status{ID: 1000 + thread, UID: 999}})
		if err := rdb.SPublish(t.Context(), e.hub.bus.ThreadChannel(thread), raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for thread, s := range streams {
		f := s.next(10 * time.Second)
		if f.Type != protocol.TypeThreadStatus || f.Thread != thread || f.Status == nil || f.Status.ID != 1000+thread {
			t.Errorf("the watcher of thread %d got %v, want its thread's status %d", thread, f, 1000+thread)
		}
	}
}
