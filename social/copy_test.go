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
