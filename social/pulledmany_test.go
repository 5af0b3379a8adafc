package social

import (
	"slices"
	"testing"
)

// PulledAuthorsOf reads for many users what PulledAuthors reads for one,
// in one round trip.
func TestPulledAuthorsOf(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PullThreshold: 3})
	ctx := ctxT(t)
	w := newPullWorld(t, s)
	loner := signUp(t, s, "loner")
	counter := &commandCounter{}
	rdb.AddHook(counter)
	for _, users := range [][]User{{w.followers[0], loner, w.followers[4]}, {loner}, nil} {
		uids := make([]int64, len(users))
		for i, u := range users {
			uids[i] = u.ID
		}
		before := counter.roundTrips.Load()
		got, err := s.PulledAuthorsOf(ctx, uids)
		if err != nil {
			t.Fatal(err)
		}
		if n := counter.roundTrips.Load() - before; n > 1 {
			t.Errorf("%d users: %d round trips, want at most 1", len(uids), n)
		}
		if len(got) != len(uids) {
			t.Fatalf("%d pulled sets for %d users", len(got), len(uids))
		}
		for i, u := range users {
			want, err := s.PulledAuthors(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[i], want) || (u.ID != loner.ID && !slices.Equal(got[i], []int64{w.big.ID})) {
				t.Errorf("pulled authors of %s: %v, PulledAuthors says %v", u.Login, got[i], want)
			}
		}
	}
}
