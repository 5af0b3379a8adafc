package presence

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestWindowEdges(t *testing.T) {
	t.Parallel()
	const w = 2 * time.Second
	const friend, me = 10, 11
	tests := []struct {
		name    string
		seenAgo time.Duration // before Redis's now
		expiry  time.Duration // the connection's lease after now; 0: no connection
		online  bool
	}{
		{"just seen", 0, w, true},
		{"just inside W", w - 300*time.Millisecond, 300 * time.Millisecond, true},
		{"just outside W", w + 300*time.Millisecond, time.Hour, false},
		// Its instance went away W ago (its lease is at least W past the
		// last activity) and the sweep has not come yet.
		{"lease run out, not swept", w + 300*time.Millisecond, -300 * time.Millisecond, false},
		{"seen, never connected", 0, 0, false},
	}
	for _, tc := range tests {
		for _, shared := range []bool{false, true} {
			name := tc.name + "/copied"
			if shared {
				name = tc.name + "/shared copy"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				onBackends(t, func(t *testing.T, e env) {
					opts := Options{Window: w, CopyTTL: -1}
					if shared {
						opts.CopyTTL = time.Hour
					}
					tr := e.tracker(t, opts)
					e.befriend(t, friend, me)
					if shared { // make the copy before the user appears in it
						onlineFriends(t, tr, me)
					}
					now := e.now(t)
					var expiry time.Time
					if tc.expiry != 0 {
						expiry = now.Add(tc.expiry)
					}
					plant(t, e, map[int64]time.Time{friend: now.Add(-tc.seenAgo)}, expiry)

					got := onlineFriends(t, tr, me)
					if want := tc.online; (len(got) == 1) != want {
						t.Errorf("online friends = %v, want online=%v", got, want)
					}
					online, seen := presenceOf(t, tr, friend)
					if online != tc.online || seen == nil {
						t.Errorf("presence = %v, %v, want online=%v with a last_seen", online, seen, tc.online)
					}
					if c := counts(t, tr); (c.Online == 1) != tc.online {
						t.Errorf("counts = %+v, want online=%v", c, tc.online)
					}
				})
			})
		}
	}
}

func TestWindowInRealTime(t *testing.T) {
	t.Parallel()
	const w = time.Second
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{Window: w, HeartbeatInterval: 300 * time.Millisecond})
		const alice, bob = 1, 2
		e.befriend(t, alice, bob)

		start := time.Now()
		mustConnect(t, tr, alice, "c")
		beat := time.Now()
		if got := onlineFriends(t, tr, bob); !slices.Equal(got, []int64{alice}) {
			t.Fatalf("right after connecting: %v, want [alice]", got)
		}
		time.Sleep(time.Until(start.Add(w - 300*time.Millisecond)))
		if got := onlineFriends(t, tr, bob); !slices.Equal(got, []int64{alice}) {
			t.Fatalf("just inside W: %v, want [alice]", got)
		}
		if online, _ := presenceOf(t, tr, alice); !online {
			t.Fatalf("just inside W: offline")
		}
		time.Sleep(time.Until(beat.Add(w + 300*time.Millisecond)))
		if got := onlineFriends(t, tr, bob); len(got) != 0 {
			t.Fatalf("just outside W: %v, want none", got)
		}
		if online, seen := presenceOf(t, tr, alice); online || seen == nil {
			t.Fatalf("just outside W: online=%v last_seen=%v, want offline with a last_seen", online, seen)
		}
		if c := counts(t, tr); c.Online != 0 || c.ActiveLast10m != 1 {
			t.Fatalf("just outside W: counts = %+v, want 0 online, 1 active", c)
		}
	})
}

func TestActiveMinutes(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		k := e.keys()
		ctx := ctxT(t)

		minute := clearOfMinuteEdge(t, e)
		mustConnect(t, tr, 1, "c")
		mustConnect(t, tr, 2, "c")

		for _, key := range []string{k.activeUsers(minute), k.activeHLL(minute)} {
			ttl, err := e.rdb.TTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 10*time.Minute || ttl > activeKeyTTL {
				t.Fatalf("TTL of this minute's %s = %s, want a little over 10 minutes", key, ttl)
			}
		}
		for ago, uid := range map[int64]int64{1: 1, 9: 3, 10: 4, 60: 5, -1: 6} {
			plantActive(t, e, minute-ago, uid)
		}
		// 1 and 2 now, 1 again a minute ago, 3 nine minutes ago; not 4 (ten
		// minutes ago), 5 (an hour ago) or 6 (a minute not begun).
		if c := counts(t, tr); c.ActiveLast10m != 3 {
			t.Fatalf("active in the last 10 minutes = %d, want 3", c.ActiveLast10m)
		}
	})
}

func TestUserPresence(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		const alice, carol = 1, 3

		if online, seen := presenceOf(t, tr, 999); online || seen != nil {
			t.Fatalf("unknown user: %v, %v; want offline, never seen", online, seen)
		}
		if online, seen := presenceOf(t, tr, 0); online || seen != nil {
			t.Fatalf("user 0: %v, %v; want offline, never seen", online, seen)
		}
		before := e.now(t).Truncate(time.Millisecond)
		mustConnect(t, tr, alice, "a")
		after := e.now(t)
		online, seen := presenceOf(t, tr, alice)
		if !online || seen == nil || seen.Before(before) || seen.After(after) || seen.Location() != time.UTC {
			t.Fatalf("connected: %v, %v; want online, seen between %v and %v in UTC", online, seen, before, after)
		}
		mustDisconnect(t, tr, alice, "a")
		if online, seen2 := presenceOf(t, tr, alice); online || seen2 == nil || !seen2.Equal(*seen) {
			t.Fatalf("disconnected: %v, %v; want offline, last seen %v", online, seen2, seen)
		}

		mustConnect(t, tr, carol, "c")
		ps, err := tr.Presences(ctxT(t), []int64{carol, 999, alice})
		if err != nil {
			t.Fatal(err)
		}
		got := []bool{ps[0].Online, ps[1].Online, ps[2].Online}
		if !slices.Equal(got, []bool{true, false, false}) || ps[1].LastSeen != nil || ps[2].LastSeen == nil {
			t.Fatalf("presences = %+v", ps)
		}
		if ps, err := tr.Presences(ctxT(t), nil); err != nil || len(ps) != 0 {
			t.Fatalf("presences of nobody = %v, %v", ps, err)
		}
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		const lonely, many = 1, 2
		mustConnect(t, tr, lonely, "c")

		for _, uid := range []int64{lonely, 999_999, 0, -5} {
			fs, err := tr.OnlineFriends(ctxT(t), uid)
			if err != nil || fs == nil || len(fs) != 0 {
				t.Errorf("online friends of %d = %v, %v; want an empty list", uid, fs, err)
			}
		}
		for _, tc := range []struct {
			uid  int64
			conn string
		}{{1, ""}, {0, "c"}, {-1, "c"}} {
			if _, err := tr.Connect(ctxT(t), tc.uid, tc.conn); !errors.Is(err, ErrInvalid) {
				t.Errorf("connect(%d, %q) = %v, want ErrInvalid", tc.uid, tc.conn, err)
			}
			if err := tr.Heartbeat(ctxT(t), tc.uid, tc.conn); !errors.Is(err, ErrInvalid) {
				t.Errorf("heartbeat(%d, %q) = %v, want ErrInvalid", tc.uid, tc.conn, err)
			}
			if _, err := tr.Disconnect(ctxT(t), tc.uid, tc.conn); !errors.Is(err, ErrInvalid) {
				t.Errorf("disconnect(%d, %q) = %v, want ErrInvalid", tc.uid, tc.conn, err)
			}
		}

		// 10,000 friends, 3,000 of them online: the most recent 1,000 come back.
		ctx := ctxT(t)
		now := e.now(t)
		seen := map[int64]time.Time{}
		var members []redis.Z
		for i := range int64(10_000) {
			fid := 1000 + i
			members = append(members, redisZ(now, fid))
			if i < 3000 {
				seen[fid] = now.Add(-time.Duration(i) * time.Millisecond)
			}
		}
		if err := e.rdb.ZAdd(ctx, e.friendsKey(many), members...).Err(); err != nil {
			t.Fatal(err)
		}
		plant(t, e, seen, now.Add(time.Minute))
		fs, err := tr.OnlineFriends(ctx, many)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != DefaultMaxOnlineFriends || fs[0].UID != 1000 || fs[len(fs)-1].UID != 1999 {
			t.Fatalf("online friends of a user with 10,000: %d, first %v, last %v", len(fs), fs[0], fs[len(fs)-1])
		}
		for i := 1; i < len(fs); i++ {
			if fs[i].LastSeen.After(fs[i-1].LastSeen) {
				t.Fatalf("not most recent first at %d: %v after %v", i, fs[i], fs[i-1])
			}
		}

		// Announcing to 10,000 friends reaches the one listening.
		e.befriend(t, many, lonely)
		events := e.subscribe(t, lonely)
		mustConnect(t, tr, many, "m")
		checkEvent(t, nextEvent(t, events, 2*time.Second), many, true)
	})
}

func TestConcurrentHeartbeatsAndOnlineFriends(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		// A short copy TTL: trims race with heartbeats and sign-offs. A
		// window longer than the test can take, however busy the machine:
		// the last heartbeat of an even user comes a whole round of the
		// storm before the checks below, which must find all of them
		// online, and the odd ones offline by their sign-off alone.
		tr := e.tracker(t, Options{Window: time.Hour, CopyTTL: 20 * time.Millisecond, CountsTTL: -1})
		const me, n = 1, 60
		for i := range int64(n) {
			e.befriend(t, me, 100+i)
		}
		ctx := ctxT(t)
		deadline := time.Now().Add(1500 * time.Millisecond)
		var wg sync.WaitGroup
		for g := range int64(4) {
			wg.Add(1)
			go func() { // heartbeats of friends 100+g, 104+g, ...; odd ones come and go
				defer wg.Done()
				for time.Now().Before(deadline) {
					for uid := 100 + g; uid < 100+n; uid += 4 {
						var err error
						if uid%2 == 1 {
							_, err = tr.Connect(ctx, uid, "c")
							if err == nil {
								_, err = tr.Disconnect(ctx, uid, "c")
							}
						} else {
							err = tr.Heartbeat(ctx, uid, "c")
						}
						if err != nil {
							t.Errorf("user %d: %v", uid, err)
							return
						}
					}
				}
			}()
		}
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					fs, err := tr.OnlineFriends(ctx, me)
					if err != nil {
						t.Errorf("online friends: %v", err)
						return
					}
					seen := map[int64]bool{}
					for i, f := range fs {
						if seen[f.UID] || f.UID < 100 || f.UID >= 100+n {
							t.Errorf("online friends: bad or repeated %d in %v", f.UID, uids(fs))
							return
						}
						seen[f.UID] = true
						if i > 0 && f.LastSeen.After(fs[i-1].LastSeen) {
							t.Errorf("online friends out of order: %v", fs)
							return
						}
					}
					if _, err := tr.Counts(ctx); err != nil {
						t.Errorf("counts: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		got := onlineFriends(t, tr, me)
		slices.Sort(got)
		var want []int64
		for uid := int64(100); uid < 100+n; uid += 2 {
			want = append(want, uid)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("online friends after the storm = %v, want the even ones %v", got, want)
		}
		if c := counts(t, tr); c.Online != n/2 || c.ActiveLast10m != n {
			t.Fatalf("counts = %+v, want %d online, %d active", c, n/2, n)
		}
	})
}

func TestLostCopyIsMadeWhole(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{CopyTTL: time.Hour})
		k := e.keys()
		const me = 1
		for _, uid := range []int64{2, 3, 4} {
			e.befriend(t, me, uid)
			mustConnect(t, tr, uid, "c")
		}
		if got := onlineFriends(t, tr, me); len(got) != 3 {
			t.Fatalf("online friends = %v, want 3", got)
		}
		// The copy is lost (evicted, deleted by hand) while the trim marker
		// lives, and a heartbeat comes before the next reader.
		if err := e.rdb.Del(ctxT(t), k.onlineCopy()).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // last-seen times are in ms: no tie
		if err := tr.Heartbeat(ctxT(t), 2, "c"); err != nil {
			t.Fatal(err)
		}
		if got := onlineFriends(t, tr, me); len(got) != 3 || got[0] != 2 {
			t.Fatalf("online friends after losing the copy = %v, want 2 first, then 3 and 4", got)
		}
		if c := counts(t, tr); c.Online != 3 {
			t.Fatalf("online after losing the copy = %d, want 3", c.Online)
		}
	})
}

// Readers never trim the shared copy (they cut what they read at now - W);
// the sweepers do, one trim per CopyTTL whichever instance asks, keeping
// the trimmed users' times in last.seen.
func TestCopyTrimmedBySweepers(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		const w = time.Hour // the fresh one stays fresh however long the test takes
		a, b := e.tracker(t, Options{Window: w, CopyTTL: time.Hour}), e.tracker(t, Options{Window: w, CopyTTL: time.Hour})
		k := e.keys()
		ctx := ctxT(t)
		const me, stale, fresh = 1, 2, 3
		e.befriend(t, me, stale)
		e.befriend(t, me, fresh)
		onlineFriends(t, a, me) // the copy, empty
		now := e.now(t)
		plant(t, e, map[int64]time.Time{stale: now.Add(-w - time.Second), fresh: now}, now.Add(2*w))

		if got := onlineFriends(t, a, me); !slices.Equal(got, []int64{fresh}) {
			t.Fatalf("online friends = %v, want the fresh one", got)
		}
		if _, err := e.rdb.ZScore(ctx, k.onlineCopy(), itoa(stale)).Result(); err != nil {
			t.Fatalf("a reader trimmed the copy: %v", err)
		}
		if n, err := a.TrimCopy(ctx); err != nil || n != 1 {
			t.Fatalf("trim = %d, %v; want the stale one", n, err)
		}
		if n, err := b.TrimCopy(ctx); err != nil || n != 0 {
			t.Fatalf("second trim within CopyTTL = %d, %v; want none", n, err)
		}
		if _, err := e.rdb.ZScore(ctx, k.onlineCopy(), itoa(stale)).Result(); err != redis.Nil {
			t.Fatalf("the stale user is still in the copy: %v", err)
		}
		if got := onlineFriends(t, b, me); !slices.Equal(got, []int64{fresh}) {
			t.Fatalf("online friends after the trim = %v, want the fresh one", got)
		}
	})
}

// The users of an instance gone away all fall out of the window at once: a
// trim takes them out of the shared copy in script calls of trimBatch at
// most, so that none holds Redis for all of them, and takes every one of
// them out, their times kept in last.seen; the fresh stay.
func TestCopyTrimmedInBoundedCalls(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		// Longer than the test can take however busy the machine: the
		// fresh, seen now, stay fresh until the trims, which take out
		// only those planted out of the window.
		const w = time.Hour
		replies := &scriptReplies{script: trimScript}
		e.rdb.AddHook(replies)
		tr := e.tracker(t, Options{Window: w, CopyTTL: time.Hour})
		k := e.keys()
		ctx := ctxT(t)
		const stale, fresh = 2*trimBatch + trimBatch/2, 10
		now := e.now(t)
		copied := make([]redis.Z, 0, stale+fresh)
		older := make([]redis.Z, 0, stale)
		for uid := int64(1); uid <= stale; uid++ {
			copied = append(copied, redisZ(now.Add(-w-time.Duration(uid)*time.Millisecond), uid))
			older = append(older, redisZ(now.Add(-2*w), uid))
		}
		for uid := int64(stale + 1); uid <= stale+fresh; uid++ {
			copied = append(copied, redisZ(now, uid))
		}
		if err := e.rdb.ZAdd(ctx, k.onlineCopy(), copied...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.rdb.ZAdd(ctx, k.lastSeen(), older...).Err(); err != nil {
			t.Fatal(err)
		}

		if n, err := tr.TrimCopy(ctx); err != nil || n != stale {
			t.Fatalf("trim = %d, %v; want the %d stale", n, err, stale)
		}
		calls := replies.all()
		if len(calls) < stale/trimBatch+1 {
			t.Errorf("%d trim calls for %d stale users, want calls of %d at most", len(calls), stale, trimBatch)
		}
		for _, c := range calls {
			if n, _ := c.reply.(int64); n > trimBatch {
				t.Errorf("one trim call took out %d users, over %d", n, trimBatch)
			}
		}
		if n, err := e.rdb.ZCard(ctx, k.onlineCopy()).Result(); err != nil || n != fresh {
			t.Errorf("the copy holds %d (%v) after the trim, want the %d fresh", n, err, fresh)
		}
		for _, uid := range []int64{1, trimBatch + 1, stale} {
			if seen, err := e.rdb.ZScore(ctx, k.lastSeen(), itoa(uid)).Result(); err != nil || seen != copied[uid-1].Score {
				t.Errorf("user %d's last.seen = %v (%v), want their time in the copy %v", uid, seen, err, copied[uid-1].Score)
			}
		}
		if n, err := tr.TrimCopy(ctx); err != nil || n != 0 {
			t.Errorf("trim again within CopyTTL = %d, %v; want none", n, err)
		}
	})
}
