package presence

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"chorus/bus"
	"chorus/internal/slots"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// Friends listening on their own channels, as the realtime hub does
// (SSUBSCRIBE on a cluster, where the channels are in the friends' slots,
// spread over the masters), hear a user come online and go offline, each
// frame carrying the last_seen presence holds.
func TestFriendsHearPresence(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		ctx := ctxT(t)
		const alice = 1
		friends := []int64{2, 3, 4, 5, 6, 7, 8, 9}
		if e.cluster {
			masters := map[string]bool{}
			for _, f := range friends {
				if slots.Of(e.channel(f)) == slots.Of(e.keys().connected()) {
					t.Fatalf("the channel of %d is in presence's slot: the test would not leave it", f)
				}
				n, err := e.rdb.(*redis.ClusterClient).MasterForKey(ctx, e.channel(f))
				if err != nil {
					t.Fatal(err)
				}
				masters[n.Options().Addr] = true
			}
			if len(masters) < 2 {
				t.Fatalf("the friends' channels are on %d master, want several", len(masters))
			}
		}
		events := map[int64]<-chan *redis.Message{}
		for _, f := range friends {
			e.befriend(t, alice, f)
			mustConnect(t, tr, f, "f")
			events[f] = e.subscribe(t, f)
		}

		mustConnect(t, tr, alice, "a")
		told := e.rdb.ZScore(ctx, e.keys().connected(), itoa(alice)).Val()
		for _, f := range friends {
			ev := nextEvent(t, events[f], 2*time.Second)
			checkEvent(t, ev, alice, true)
			if want := unixMilli(int64(told)); !ev.LastSeen.Equal(want) {
				t.Errorf("online frame to %d: last_seen %v, want when alice was told online, %v", f, ev.LastSeen, want)
			}
		}

		mustDisconnect(t, tr, alice, "a")
		seen := e.rdb.ZScore(ctx, e.keys().lastSeen(), itoa(alice)).Val()
		for _, f := range friends {
			ev := nextEvent(t, events[f], 2*time.Second)
			checkEvent(t, ev, alice, false)
			if want := unixMilli(int64(seen)); !ev.LastSeen.Equal(want) {
				t.Errorf("offline frame to %d: last_seen %v, want the last activity %v", f, ev.LastSeen, want)
			}
		}
		for _, f := range friends {
			noEvent(t, events[f], 50*time.Millisecond)
		}
	})
}

// A user with more connected friends than one batch holds is announced to
// all of them: the first friend and the last, in two batches, both hear.
func TestAnnouncementInBatches(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		ctx := ctxT(t)
		const alice = 1
		now := float64(time.Now().UnixMilli())
		pipe := e.rdb.Pipeline()
		for f := int64(1000); f < 1000+announceBatch+announceBatch/2; f++ {
			pipe.ZAdd(ctx, e.friendsKey(alice), redis.Z{Score: now, Member: itoa(f)})
			pipe.ZAdd(ctx, e.keys().connected(), redis.Z{Score: now, Member: itoa(f)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		// The order publish reads them in.
		friends, err := e.rdb.ZInter(ctx, &redis.ZStore{Keys: []string{e.friendsKey(alice), e.keys().connected()}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(friends) <= announceBatch {
			t.Fatalf("%d connected friends: one batch", len(friends))
		}
		var listeners []<-chan *redis.Message
		for _, f := range []string{friends[0], friends[len(friends)-1]} {
			uid, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			listeners = append(listeners, e.subscribe(t, uid))
		}

		mustConnect(t, tr, alice, "a")
		for _, events := range listeners {
			checkEvent(t, nextEvent(t, events, 5*time.Second), alice, true)
		}
	})
}

// An announcement overtaken by a newer change of the same user, in the
// moment between its check and its publish, still leaves each friend's
// last frame saying the true state. The tracker's Profile runs in that
// moment, so the test makes the newer change there, through another
// instance (a tab reloaded elsewhere, or closed), whose own announcement
// then goes out before the stale one. On one Redis the script's check
// and publish are one step: the stale frame is not sent. On a cluster it is,
// and the check after it sends the true state again.
func TestOvertakenAnnouncementIsCorrected(t *testing.T) {
	t.Parallel()
	const alice, bob = 1, 2
	for _, tc := range []struct {
		name   string
		online bool // alice's state at the end
	}{
		{"offline overtaken by online", true},
		{"online overtaken by offline", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			onBackends(t, func(t *testing.T, e env) {
				ctx := ctxT(t)
				other := e.tracker(t, Options{})
				var armed atomic.Bool
				var overtake func()
				tr := e.tracker(t, Options{Profile: func(ctx context.Context, uid int64) (string, string, error) {
					if uid == alice && armed.CompareAndSwap(true, false) {
						overtake()
					}
					return profile(ctx, uid)
				}})
				e.befriend(t, alice, bob)
				mustConnect(t, other, bob, "b")
				events := e.subscribe(t, bob)

				if tc.online {
					mustConnect(t, tr, alice, "a")
					checkEvent(t, nextEvent(t, events, 2*time.Second), alice, true)
					overtake = func() { mustConnect(t, other, alice, "reloaded") }
					armed.Store(true)
					mustDisconnect(t, tr, alice, "a")
				} else {
					overtake = func() { mustDisconnect(t, other, alice, "a") }
					armed.Store(true)
					mustConnect(t, tr, alice, "a")
				}
				if armed.Load() {
					t.Fatal("the announcement did not ask for the profile: nothing overtook it")
				}

				got := framesUntilQuiet(t, events, 300*time.Millisecond)
				want := []bool{tc.online} // the newer change's own announcement
				if e.cluster {
					want = append(want, !tc.online, tc.online) // the stale frame, then the correction
				}
				if states := onlineFlags(got); !slices.Equal(states, want) {
					t.Fatalf("bob got online = %v, want %v", states, want)
				}
				last := got[len(got)-1]
				checkEvent(t, last, alice, tc.online)
				if online, _ := presenceOf(t, tr, alice); online != tc.online {
					t.Fatalf("alice online = %v, want %v", online, tc.online)
				}
				key := e.keys().lastSeen() // last_seen of "offline": the last activity
				if tc.online {
					key = e.keys().connected() // of "online": when the user was told online
				}
				if want := unixMilli(int64(e.rdb.ZScore(ctx, key, itoa(alice)).Val())); !last.LastSeen.Equal(want) {
					t.Errorf("last frame's last_seen = %v, want %v", last.LastSeen, want)
				}
			})
		})
	}
}

// framesUntilQuiet returns the presence frames that come on ch until none
// comes for quiet.
func framesUntilQuiet(tb testing.TB, ch <-chan *redis.Message, quiet time.Duration) []protocol.PresenceFrame {
	tb.Helper()
	var out []protocol.PresenceFrame
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				tb.Fatalf("subscription closed")
			}
			out = append(out, decodeEvent(tb, m))
		case <-time.After(quiet):
			return out
		}
	}
}

func onlineFlags(frames []protocol.PresenceFrame) []bool {
	out := make([]bool, len(frames))
	for i, f := range frames {
		out[i] = f.Online
	}
	return out
}

// A friendship that ends while a user's presence is announced (an unfollow
// or a block between the read of the connected friends and the publish)
// is never followed on the ex-friend's channel by the user's presence: the
// friend_removed the ending published is the last frame there, so the
// friend's list does not take the user back. The other friends are told.
func TestAnnouncementAfterTheFriendshipEnded(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		ctx := ctxT(t)
		const alice, bob, carol = 1, 2, 3
		e.befriend(t, alice, bob)
		e.befriend(t, alice, carol)
		tr := e.tracker(t, Options{})
		mustConnect(t, tr, bob, "b")
		mustConnect(t, tr, carol, "c")
		toBob, toCarol := e.subscribe(t, bob), e.subscribe(t, carol)
		send := func(channel string, frame any) {
			t.Helper()
			raw, _ := json.Marshal(frame)
			if err := bus.New(e.rdb, e.prefix).PublishBatch(ctx, []bus.Message{{Channel: channel, Payload: raw}}); err != nil {
				t.Fatal(err)
			}
		}
		var armed atomic.Bool
		armed.Store(true)
		e.rdb.AddHook(beforeAnnounce{armed: &armed, do: func() {
			// Bob unfollows alice, as the social package does: the
			// friendship ends, then friend_removed goes to bob.
			pipe := e.rdb.Pipeline()
			pipe.ZRem(ctx, e.friendsKey(alice), itoa(bob))
			pipe.ZRem(ctx, e.friendsKey(bob), itoa(alice))
			if _, err := pipe.Exec(ctx); err != nil {
				t.Error(err)
			}
			send(e.channel(bob), protocol.FriendRemoved{Type: protocol.TypeFriendRemoved, User: protocol.UserRef{ID: alice}})
		}})
		mustConnect(t, tr, alice, "a")
		if armed.Load() {
			t.Fatal("the announcement published nothing the test could come before")
		}
		checkEvent(t, nextEvent(t, toCarol, 2*time.Second), alice, true)
		// The announcement is over: every frame it sent bob comes before
		// this one.
		send(e.channel(bob), map[string]string{"type": "end"})
		var got []string
		for {
			ev := nextEvent(t, toBob, 2*time.Second)
			if ev.Type == "end" {
				break
			}
			got = append(got, ev.Type)
		}
		if len(got) == 0 || got[len(got)-1] != protocol.TypeFriendRemoved {
			t.Errorf("bob was sent %q, want friend_removed last", got)
		}
		if !e.cluster && len(got) != 1 {
			t.Errorf("bob was sent %q, want friend_removed alone: one Redis checks the friendship as it publishes", got)
		}
	})
}

// beforeAnnounce runs do once, while armed, before the first publish of an
// announcement: announce.lua's call on one Redis, the pipeline of SPUBLISH
// on a cluster.
type beforeAnnounce struct {
	armed *atomic.Bool
	do    func()
}

func (beforeAnnounce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h beforeAnnounce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[1] == announceScript.Hash() && h.armed.CompareAndSwap(true, false) {
			h.do()
		}
		return next(ctx, cmd)
	}
}

func (h beforeAnnounce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "spublish" && h.armed.CompareAndSwap(true, false) {
			h.do()
		}
		return next(ctx, cmds)
	}
}

// BenchmarkAnnounce measures the announcement of a user with 100 connected
// friends on one redis-server: an op is one publish to them all, and it
// reports the Redis time of its commands per op (commandstats).
func BenchmarkAnnounce(b *testing.B) {
	const friends, uid = 100, 1
	e := newEnv(b)
	b.Cleanup(func() { dropPrefix(e) })
	tr := e.tracker(b, Options{Window: benchWindow})
	ctx := context.Background()
	beats := []Beat{{UID: uid, ConnID: "a"}}
	var zs []redis.Z
	for f := int64(2); f < 2+friends; f++ {
		zs = append(zs, redis.Z{Score: 1, Member: f})
		beats = append(beats, Beat{UID: f, ConnID: "c"})
	}
	if err := e.rdb.ZAdd(ctx, e.friendsKey(uid), zs...).Err(); err != nil {
		b.Fatal(err)
	}
	if _, err := tr.register(ctx, beats, 0); err != nil {
		b.Fatal(err)
	}
	cmds := []string{"evalsha", "eval", "zinter", "zmscore", "zscore"}
	before := serverMicros(b, e, cmds)
	b.ResetTimer()
	for range b.N {
		if err := tr.publish(ctx, uid, true, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric((serverMicros(b, e, cmds)-before)/float64(b.N), "redis-µs/op")
}
