package social

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// TestPushRacesAnUnfollow pushes a status after the follower's unfollow
// has walked their home timeline: what a pass does when the unfollow comes
// between its page read and its push. The unfollow count read before the
// page has moved, so push.lua checks the follow and adds nothing, connected
// or not; unless the follower followed again since, whose follow brought
// the status back.
func TestPushRacesAnUnfollow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ connected, again bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		again := c.again
		t.Run(fmt.Sprintf("connected=%v/followed again=%v", c.connected, again), func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{})
			ctx := ctxT(t)
			author := signUp(t, s, "author")
			fan := signUp(t, s, "fan")
			follow(t, s, fan.ID, "author")
			st := post(t, s, author.ID, "before the unfollow")
			if !slices.Contains(homeIDs(t, s, fan.ID), st.ID) {
				t.Fatal("the post did not reach its follower")
			}
			// The count as a pass reads it with its page.
			before := s.rdb.Get(ctx, s.keys.unfollows(author.ID)).Val()

			if _, err := s.Unfollow(ctx, fan.ID, "author"); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(homeIDs(t, s, fan.ID), st.ID) {
				t.Fatal("the unfollow left the status in its home timeline")
			}
			if again {
				follow(t, s, fan.ID, "author")
			}
			after := s.rdb.Get(ctx, s.keys.unfollows(author.ID)).Val()
			if after == before {
				t.Fatalf("the unfollow count stayed %q", after)
			}

			err := s.pushStatus(ctx, author.ID, st.ID, 0, "{}", []string{itoa(fan.ID)}, []bool{c.connected}, nil, before)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(homeIDs(t, s, fan.ID), st.ID); got != again {
				t.Errorf("after the push, the home timeline holds the status: %v, want %v", got, again)
			}
		})
	}
}

// TestBoundedPage reads pages of a sorted set by their members and the
// last one's score, and again with scores when a member left between the
// two reads.
func TestBoundedPage(t *testing.T) {
	t.Parallel()
	const passSize = 4
	s, rdb := newService(t, Options{FanoutPassSize: passSize})
	ctx := ctxT(t)
	key := s.keys.followers(1)
	for i := 1; i <= 10; i++ {
		rdb.ZAdd(ctx, key, redisZ(float64(10*i), itoa(int64(i))))
	}
	read := func(cursor float64, until string) *boundedPage {
		pipe := rdb.Pipeline()
		p := s.queueBoundedPage(ctx, pipe, key, cursor, until)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(name string, p *boundedPage, want []string, wantLast float64) {
		t.Helper()
		members, last, err := s.boundedMembers(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(members, want) || last != wantLast {
			t.Errorf("%s: page %v, last scored %v; want %v, %v", name, members, last, want, wantLast)
		}
	}

	check("a full page", read(0, "95"), []string{"1", "2", "3", "4"}, 40)
	check("on from it", read(40, "95"), []string{"5", "6", "7", "8"}, 80)
	check("a short page", read(80, "95"), []string{"9"}, 0)

	// A member leaves between the page's two reads: the last read names
	// the member after the page's last, and the page is read again.
	p := read(0, "95")
	rdb.ZRem(ctx, key, "2")
	p.last = read(0, "95").last
	check("a member gone between the reads", p, []string{"1", "3", "4", "5"}, 50)
}

// TestFollowOvertakenWalksAgain: a follow whose followee step comes after a
// whole unfollow puts the follower back among the followee's followers for
// a moment, after the unfollow walked their home timeline, and a post's
// push may reach them then (its follow check left out while the unfollow
// count stands). The follow, taking them out again, walks the home
// timeline itself.
func TestFollowOvertakenWalksAgain(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	ada := signUp(t, s, "ada")
	bob := signUp(t, s, "bob")
	st := post(t, s, bob.ID, "while ada comes and goes")
	note, err := s.loadFollowNote(ctx, ada.ID)
	if err != nil {
		t.Fatal(err)
	}

	// The follow's first step, then a whole unfollow, then the push that
	// came while the follow's next step had ada among bob's followers.
	res, err := followFollowerScript.Run(ctx, rdb,
		[]string{k.following(ada.ID), k.followers(ada.ID), k.friends(ada.ID), k.user(ada.ID), k.blocks(ada.ID), k.blockedBy(ada.ID)},
		bob.ID, 7, note.now, DefaultMaxFollowing).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unfollow(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	rdb.ZAdd(ctx, k.home(ada.ID), redisZ(float64(st.ID), itoa(st.ID)))

	score, _ := res[0].(string)
	side, err := s.syncFollowee(ctx, ada.ID, bob.ID, score, func() (followNote, error) { return note, nil })
	if err != nil {
		t.Fatal(err)
	}
	if side.stands || !side.removed {
		t.Fatalf("the follow's sync left %+v, want it taken out again", side)
	}
	if err := s.dropPutBack(ctx, ada.ID, bob.ID, side); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(homeIDs(t, s, ada.ID), st.ID) {
		t.Error("ada's home timeline keeps bob's status after the follow was overtaken")
	}
}

// TestPushInTx pushes a status to one follower connected and one not, in a
// pass's transaction (pushInTx, on one Redis): the connected one gets the
// frame with the push, the other the plain ZADD. When the author's unfollow
// count moves between the WATCH and the EXEC, Redis runs nothing of the
// transaction, and the pass (pushStatus) pushes with push.lua instead; a
// write to the author's other keys (their profile) changes nothing. On a
// cluster it never runs one.
func TestPushInTx(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"nothing", "profile", "unfollow count"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			author := signUp(t, s, "author")
			on, off := signUp(t, s, "online"), signUp(t, s, "offline")
			follow(t, s, on.ID, "author")
			follow(t, s, off.ID, "author")
			st := post(t, s, author.ID, "pushed again")
			// As if the pass had not reached them yet.
			for _, u := range []User{on, off} {
				if err := rdb.ZRem(ctx, s.keys.home(u.ID), st.ID).Err(); err != nil {
					t.Fatal(err)
				}
			}
			sub := listen(t, s, rdb, s.UserChannel(on.ID))
			payload := fmt.Sprintf(`{"type":"status","status":{"id":%d}}`, st.ID)
			before := s.rdb.Get(ctx, s.keys.unfollows(author.ID)).Val()
			uids, connected := []int64{on.ID, off.ID}, []bool{true, false}

			if redistest.OnCluster() {
				if _, done, err := s.pushInTx(ctx, author.ID, st.ID, payload, uids, connected, before); err != nil || done {
					t.Fatalf("on a cluster, pushInTx answered done %v, %v; want no transaction", done, err)
				}
				return
			}
			// Each transaction is sent after the change, written by
			// another client.
			var multis atomic.Int64
			other := redis.NewClient(rdb.(*redis.Client).Options())
			t.Cleanup(func() { _ = other.Close() })
			rdb.AddHook(beforeMulti(func() {
				multis.Add(1)
				var err error
				switch change {
				case "profile":
					err = other.HSet(ctx, s.keys.user(author.ID), "name", "Renamed").Err()
				case "unfollow count":
					err = other.Incr(ctx, s.keys.unfollows(author.ID)).Err()
				}
				if err != nil {
					t.Error(err)
				}
			}))
			added, done, err := s.pushInTx(ctx, author.ID, st.ID, payload, uids, connected, before)
			if err != nil {
				t.Fatal(err)
			}
			if moved := change == "unfollow count"; done == moved || multis.Load() != 1 {
				t.Fatalf("pushInTx done %v after %d transactions with the %s changed, want done %v after 1", done, multis.Load(), change, !moved)
			}
			if !done {
				// Redis ran none of it.
				for _, u := range []User{on, off} {
					if slices.Contains(homeIDs(t, s, u.ID), st.ID) {
						t.Fatalf("the transaction Redis dropped reached %s's home timeline", u.Login)
					}
				}
				if got := eventsSoFar(t, sub)[s.UserChannel(on.ID)]; len(got) != 0 {
					t.Fatalf("the transaction Redis dropped sent %v", eventIDs(got))
				}
				// The pass's way: the count has moved, so no transaction,
				// and push.lua pushes, checking each follow.
				err = s.pushStatus(ctx, author.ID, st.ID, 0, payload, []string{itoa(on.ID), itoa(off.ID)}, connected, nil, before)
				if err != nil {
					t.Fatal(err)
				}
				if multis.Load() != 1 {
					t.Fatalf("%d transactions sent in all, want 1", multis.Load())
				}
			} else if !slices.Equal(added, []int64{pushAdded, pushAdded}) {
				t.Errorf("pushInTx answered %v, want both added", added)
			}
			for _, u := range []User{on, off} {
				if !slices.Contains(homeIDs(t, s, u.ID), st.ID) {
					t.Errorf("%s's home timeline lacks the status", u.Login)
				}
			}
			got := ofType(eventsSoFar(t, sub)[s.UserChannel(on.ID)], protocol.TypeStatus)
			if ids := eventIDs(got); !slices.Equal(ids, []int64{st.ID}) {
				t.Errorf("the connected follower was told of %v, want [%d]", ids, st.ID)
			}
		})
	}
}

// beforeMulti is a go-redis hook that calls fn before it sends a
// transaction (a pipeline that opens with MULTI).
type beforeMulti func()

func (beforeMulti) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (beforeMulti) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f beforeMulti) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "multi" {
			f()
		}
		return next(ctx, cmds)
	}
}

// push.lua reaches a follower flagged to be reached only if active or
// connected (onlyIfOn) only while their last request is within
// InactiveAfter (or none is kept) or presence's set holds them, in a call
// that also sends live frames to others: their ids follow the live ones'
// (one Redis only: a cluster's calls carry no such flag, whatever the
// backend under test).
func TestPushOnlyIfConnected(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	s := New(rdb, Options{Prefix: prefix, BcryptCost: 4, HashWait: time.Minute, ConnectedKey: prefix + "connected"})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	fans := followersOf(t, s, "author", 4)
	uids, channels := userIDs(fans), userChannels(s, fans)
	// f00 and f02 to be reached only if active or connected, f00 is
	// connected, neither active; f01 live.
	rdb.ZAdd(ctx, s.opts.ConnectedKey, redisZ(1, itoa(fans[0].ID)), redisZ(1, itoa(fans[1].ID)))
	lastSeenAgo(t, s, fans[0].ID, 8*24*time.Hour)
	lastSeenAgo(t, s, fans[1].ID, time.Hour)
	lastSeenAgo(t, s, fans[2].ID, 8*24*time.Hour)
	lastSeenAgo(t, s, fans[3].ID, time.Hour)
	l := listen(t, s, rdb, channels...)
	push := func(connected, onlyIfOn []bool) (int64, []int64) {
		t.Helper()
		sid := rdb.Incr(ctx, s.keys.statusSeq()).Val()
		payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: Status{ID: sid, UID: author.ID}})
		if err != nil {
			t.Fatal(err)
		}
		pipe := rdb.Pipeline()
		h := s.queuePush(ctx, pipe, author.ID, sid, 0, string(payload), uids, connected, onlyIfOn, "")
		cmds, err := pipe.Exec(ctx)
		added, err := h.results(ctx, rdb, cmds, err)
		if err != nil {
			t.Fatal(err)
		}
		return sid, added
	}
	sid, added := push([]bool{false, true, false, false}, []bool{true, false, true, false})
	if want := []int64{pushAdded, pushAdded, pushInactive, pushAdded}; !slices.Equal(added, want) {
		t.Errorf("push answered %v, want %v", added, want)
	}
	for i, f := range fans {
		if got, want := slices.Contains(homeIDs(t, s, f.ID), sid), i != 2; got != want {
			t.Errorf("%s's home holds the status: %v, want %v", f.Login, got, want)
		}
	}
	events := eventsSoFar(t, l)
	for i, ch := range channels {
		want := []int64{}
		if i == 1 {
			want = []int64{sid}
		}
		if got := eventIDs(events[ch]); !slices.Equal(got, want) {
			t.Errorf("%s was sent %v, want %v", fans[i].Login, got, want)
		}
	}

	// All four to be reached only if active or connected: f01 and f03 are
	// active by their last requests, f00 connected; then f02 has no last
	// request kept (from before activity was), and counts as active.
	all := []bool{true, true, true, true}
	none := []bool{false, false, false, false}
	if _, added := push(none, all); !slices.Equal(added, []int64{pushAdded, pushAdded, pushInactive, pushAdded}) {
		t.Errorf("push answered %v, want f02 alone not reached", added)
	}
	rdb.ZRem(ctx, s.keys.seen(), itoa(fans[2].ID))
	if _, added := push(none, all); !slices.Equal(added, []int64{pushAdded, pushAdded, pushAdded, pushAdded}) {
		t.Errorf("push answered %v, want all reached", added)
	}
}

// TestPushOnlyIfConnectedInOneMessage runs push.lua's followers flagged 4
// (their keys, presence's set and users' last requests, last) beside the
// frames channel's: those connected get their frames in one message while
// every instance in presence's set is marked as a reader (when presence's
// instances are passed), and each on their channel while one is not; with
// no instances passed, no mark is read.
func TestPushOnlyIfConnectedInOneMessage(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := ctxT(t)
	withInstances := New(rdb, Options{Prefix: prefix, BcryptCost: 4, HashWait: time.Minute,
		ConnectedKey: prefix + "connected", InstancesKey: prefix + "instances"})
	opts := withInstances.opts
	opts.InstancesKey = ""
	without := New(rdb, opts)
	author := signUp(t, withInstances, "author")
	fans := followersOf(t, withInstances, "author", 3)
	uids, channels := userIDs(fans), userChannels(withInstances, fans)
	// f00 and f02 to be reached only if active or connected: f00 is
	// connected, f02 is neither; f01 is live.
	rdb.ZAdd(ctx, opts.ConnectedKey, redisZ(1, itoa(fans[0].ID)), redisZ(1, itoa(fans[1].ID)))
	lastSeenAgo(t, withInstances, fans[0].ID, 8*24*time.Hour)
	lastSeenAgo(t, withInstances, fans[1].ID, time.Hour)
	lastSeenAgo(t, withInstances, fans[2].ID, 8*24*time.Hour)
	frames := withInstances.bus.FramesChannel()
	l := listen(t, withInstances, rdb, append([]string{frames}, channels...)...) // one reader
	hour := float64(time.Now().Add(time.Hour).UnixMilli())
	rdb.ZAdd(ctx, prefix+"instances", redisZ(hour, "a"))

	// sent pushes a status by s and says whether its frame went in one
	// message (to f01 alone either way).
	sent := func(s *Service) bool {
		t.Helper()
		sid := rdb.Incr(ctx, s.keys.statusSeq()).Val()
		payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: Status{ID: sid, UID: author.ID}})
		if err != nil {
			t.Fatal(err)
		}
		pipe := rdb.Pipeline()
		h := s.queuePush(ctx, pipe, author.ID, sid, 0, string(payload), uids, []bool{false, true, false}, []bool{true, false, true}, "")
		cmds, err := pipe.Exec(ctx)
		added, err := h.results(ctx, rdb, cmds, err)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{pushAdded, pushAdded, pushInactive}; !slices.Equal(added, want) {
			t.Errorf("push answered %v, want %v", added, want)
		}
		got := payloadsSoFar(t, l)
		if msgs := got[frames]; len(msgs) > 0 {
			uids, frame, ok := strings.Cut(msgs[0], "\n")
			if len(got) != 1 || len(msgs) != 1 || !ok || uids != itoa(fans[1].ID) || !strings.Contains(frame, fmt.Sprintf(`"id":%d,`, sid)) {
				t.Fatalf("published %q, want one message naming f01 with status %d's frame", got, sid)
			}
			return true
		}
		if len(got) != 1 || len(got[channels[1]]) != 1 || !strings.Contains(got[channels[1]][0], fmt.Sprintf(`"id":%d,`, sid)) {
			t.Fatalf("published %q, want status %d's frame on f01's channel alone", got, sid)
		}
		return false
	}
	if sent(withInstances) {
		t.Error("an instance holding streams is not marked as a reader: in one message")
	}
	rdb.ZAdd(ctx, withInstances.bus.FramesReadersKey(), redisZ(hour, "a"))
	if !sent(withInstances) {
		t.Error("every instance holding streams marked as a reader: not in one message")
	}
	rdb.ZRem(ctx, withInstances.bus.FramesReadersKey(), "a")
	if !sent(without) {
		t.Error("no instances passed, one reader: not in one message")
	}
}
