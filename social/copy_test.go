package social

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A copy keeps the target to its size, newest first, leaves out statuses
// deleted under it, and takes back everything once its guard is gone.
func TestCopyBelow(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	from, to := k.profile(1), k.home(2)
	for id := int64(1); id <= 20; id++ {
		rdb.ZAdd(ctx, from, redis.Z{Score: float64(id), Member: id})
		if id != 17 { // 17 was deleted: its hash is gone
			rdb.HSet(ctx, k.status(id), "id", id)
		}
	}
	rdb.ZAdd(ctx, k.following(2), redis.Z{Score: 1, Member: 1})
	g := guard{key: k.following(2), member: "1"}

	copied, last, done, err := s.copyBelow(ctx, to, from, g, "+inf", 8, 5)
	if err != nil {
		t.Fatal(err)
	}
	if copied != 5 || last != "16" || done {
		t.Errorf("first copy = %d, %q, %v; want 5, \"16\", false", copied, last, done)
	}
	if got, want := zsetIDs(t, s, to), []int64{16, 18, 19, 20}; !slices.Equal(got, want) {
		t.Errorf("target after 5 = %v, want %v (17 deleted)", got, want)
	}
	if _, err := s.copyLatest(ctx, to, from, g, 8); err != nil {
		t.Fatal(err)
	}
	// 17 took a place in the copy, and left it empty when taken out.
	if got, want := zsetIDs(t, s, to), []int64{13, 14, 15, 16, 18, 19, 20}; !slices.Equal(got, want) {
		t.Errorf("target after the latest = %v, want %v", got, want)
	}

	// The follow ended: what the copy adds goes again.
	rdb.ZRem(ctx, k.following(2), "1")
	rdb.ZRemRangeByScore(ctx, to, "-inf", "+inf")
	if _, err := s.copyLatest(ctx, to, from, g, 8); err != nil {
		t.Fatal(err)
	}
	if got := zsetIDs(t, s, to); len(got) != 0 {
		t.Errorf("target after a copy without its follow = %v, want empty", got)
	}
}

// A follow's backfill and an unfollow's refill copy into a home what the
// fan-out would have pushed there, no more: not a reply to someone the
// reader does not follow, nor a repost entry of a status the home holds
// (or holds another repost of); a reply to oneself, to the reader, or to
// one the reader follows, and a repost of a status the home lacks, are
// copied.
func TestHomeCopiesKeepTheFanoutsRules(t *testing.T) {
	t.Parallel()
	t.Run("backfill", func(t *testing.T) {
		t.Parallel()
		s, rdb := newService(t, Options{})
		ctx := ctxT(t)
		alice, bob, carol, dan, reader := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "carol"), signUp(t, s, "dan"), signUp(t, s, "reader")
		follow(t, s, reader.ID, "carol")
		toBob := reply(t, s, alice.ID, post(t, s, bob.ID, "bob asks").ID, "alice answers bob")
		byCarol := post(t, s, carol.ID, "carol's")
		toCarol := reply(t, s, alice.ID, byCarol.ID, "alice answers carol")
		toReader := reply(t, s, alice.ID, post(t, s, reader.ID, "reader asks").ID, "alice answers reader")
		toSelf := reply(t, s, alice.ID, post(t, s, alice.ID, "alice asks").ID, "alice answers alice")
		byDan := post(t, s, dan.ID, "dan's")
		entry := func(of Status) int64 {
			if _, err := s.Repost(ctx, alice.ID, of.ID); err != nil {
				t.Fatal(err)
			}
			return int64(rdb.ZScore(ctx, s.keys.reposts(of.ID), itoa(alice.ID)).Val())
		}
		ofCarol, ofDan := entry(byCarol), entry(byDan)

		follow(t, s, reader.ID, "alice")
		home := homeIDs(t, s, reader.ID)
		for name, id := range map[string]int64{"the reply to carol": toCarol.ID, "the reply to reader": toReader.ID,
			"alice's reply to herself": toSelf.ID, "the repost of dan's": ofDan} {
			if !slices.Contains(home, id) {
				t.Errorf("reader's home %v lacks %s (%d)", home, name, id)
			}
		}
		for name, id := range map[string]int64{"the reply to bob": toBob.ID, "the repost of carol's, held": ofCarol} {
			if slices.Contains(home, id) {
				t.Errorf("reader's home %v holds %s (%d)", home, name, id)
			}
		}
		// The repost copied is mapped, as a push maps it: another repost
		// of dan's status does not come in beside it.
		if got := rdb.ZScore(ctx, s.keys.homeReposts(reader.ID), itoa(byDan.ID)).Val(); int64(got) != ofDan {
			t.Errorf("reader's home maps dan's status to %v, want alice's repost %d", got, ofDan)
		}
	})
	t.Run("refill", func(t *testing.T) {
		t.Parallel()
		s, _ := newService(t, Options{HomeSize: 3, RefillBelow: 3})
		alice, bob, reader, other := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "reader"), signUp(t, s, "other")
		follow(t, s, reader.ID, "alice")
		follow(t, s, reader.ID, "other")
		toBob := reply(t, s, alice.ID, post(t, s, bob.ID, "bob asks").ID, "alice answers bob")
		own := post(t, s, alice.ID, "alice's own")
		for range 3 {
			post(t, s, other.ID, "filler")
		}
		if _, err := s.Unfollow(ctxT(t), reader.ID, "other"); err != nil {
			t.Fatal(err)
		}
		runJob(t, s, s.keys.job(refillJobID(reader.ID)))
		home := homeIDs(t, s, reader.ID)
		if slices.Contains(home, toBob.ID) || !slices.Contains(home, own.ID) {
			t.Errorf("reader's home after the refill %v: want alice's own %d, not her reply to bob %d", home, own.ID, toBob.ID)
		}
	})
}
