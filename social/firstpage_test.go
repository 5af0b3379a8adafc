package social

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestFirstPageCut reads a first page by its members alone, cut at the
// follow sequence, and reads it again with its scores only when its last
// member is past the sequence or the reads disagree on who is last.
func TestFirstPageCut(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 3})
	ctx := ctxT(t)
	key := s.keys.followers(1)
	for i := int64(1); i <= 5; i++ {
		if err := rdb.ZAdd(ctx, key, redis.Z{Score: float64(i * 10), Member: strconv.FormatInt(100+i, 10)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(pass int, min string) *firstPage {
		t.Helper()
		s.opts.FanoutPassSize = pass
		pipe := rdb.Pipeline()
		p := s.queueFirstPage(ctx, pipe, 1, min)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) { // no unfollow count
			t.Fatal(err)
		}
		return p
	}
	counter := &commandCounter{}
	rdb.AddHook(counter)
	for _, c := range []struct {
		name       string
		pass       int
		min, until string
		members    []string
		last       float64
		full       bool
		again      int64 // round trips of cut
	}{
		{"a short page", 10, "-inf", "50", []string{"101", "102", "103", "104", "105"}, 50, false, 0},
		{"a full page", 3, "-inf", "50", []string{"101", "102", "103"}, 30, true, 0},
		{"past a cursor", 3, "(20", "50", []string{"103", "104", "105"}, 50, true, 0},
		{"a short page's last past the sequence", 10, "-inf", "40", []string{"101", "102", "103", "104"}, 40, false, 1},
		{"a full page's last past the sequence", 3, "-inf", "25", []string{"101", "102"}, 20, false, 1},
		{"all past the sequence", 3, "(20", "25", nil, 0, false, 1},
	} {
		p := read(c.pass, c.min)
		trips := counter.roundTrips.Load()
		members, last, full, err := p.cut(ctx, s, c.until, "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(members, c.members) || last != c.last || full != c.full {
			t.Errorf("%s: %v, last %v, full %v; want %v, %v, %v", c.name, members, last, full, c.members, c.last, c.full)
		}
		if n := counter.roundTrips.Load() - trips; n != c.again {
			t.Errorf("%s: cut made %d round trips, want %d", c.name, n, c.again)
		}
	}

	// A follower comes ahead of the page's last between the two reads: the
	// later read names another member at the page's end, and the page is
	// read again.
	for _, pass := range []int{3, 10} {
		p := read(pass, "-inf")
		if err := rdb.ZAdd(ctx, key, redis.Z{Score: 5, Member: "99"}).Err(); err != nil {
			t.Fatal(err)
		}
		end, err := rdb.ZRangeWithScores(ctx, key, int64(pass-1), int64(pass-1)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if pass == 3 {
			p.atEnd.SetVal(end)
		} else {
			// The set's last is the same member: its page is still right.
			p.setLast.SetVal([]redis.Z{{Score: 50, Member: "105"}})
		}
		trips := counter.roundTrips.Load()
		members, _, _, err := p.cut(ctx, s, "50", "")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"99", "101", "102"}
		again := int64(1)
		if pass == 10 {
			want, again = []string{"101", "102", "103", "104", "105"}, 0
		}
		if !slices.Equal(members, want) {
			t.Errorf("page of %d after a follower came between the reads: %v, want %v", pass, members, want)
		}
		if n := counter.roundTrips.Load() - trips; n != again {
			t.Errorf("page of %d: cut made %d round trips, want %d", pass, n, again)
		}
		if err := rdb.ZRem(ctx, key, "99").Err(); err != nil {
			t.Fatal(err)
		}
	}

	// Between the reads a member of the page leaves, and its last follows
	// again, scored past another follower, yet within the sequence: the
	// later read names the same member at the page's end, with its new
	// score. The unfollow count moved, and the page is read again; taken
	// as it was read, the next pass would start past 104, never reached.
	p := read(3, "-inf")
	pipe := rdb.Pipeline()
	pipe.ZRem(ctx, key, "101", "103")
	pipe.Incr(ctx, s.keys.unfollows(1))
	pipe.Incr(ctx, s.keys.unfollows(1))
	pipe.ZAdd(ctx, key, redis.Z{Score: 45, Member: "103"})
	end := pipe.ZRangeWithScores(ctx, key, 2, 2)
	count := pipe.Get(ctx, s.keys.unfollows(1))
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if got := end.Val(); len(got) != 1 || got[0].Member != "103" {
		t.Fatalf("the page's last place holds %v, want 103", got)
	}
	p.atEnd.SetVal(end.Val())
	p.unfollowsAfter.SetVal(count.Val())
	members, last, _, err := p.cut(ctx, s, "50", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"102", "104", "103"}; !slices.Equal(members, want) || last != 45 {
		t.Errorf("page after a member followed again between the reads: %v, last %v; want %v, 45", members, last, want)
	}
}

// TestPostReachesFollowerPastSequence: a follower in a post's page but
// scored past the follow sequence the post read (a follow whose number came
// after, between the two reads: on a cluster, where they are on different
// shards) is cut from the page, as one whose copy of the author's statuses
// comes after; but that copy may come before the status is written. The
// post, whose page was the author's every follower, leaves its job to a
// worker's pass, which reads the followers again (lateFollowers).
func TestPostReachesFollowerPastSequence(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", 2)
	late := signUp(t, s, "late")
	// late's follow is written on both sides, scored by the number after
	// the sequence, which it takes only once the post read the sequence;
	// its copy of the author's statuses is not made yet.
	follow(t, s, late.ID, "author")
	seq, err := rdb.Get(ctx, s.keys.followSeq()).Float64()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, s.keys.followers(author.ID), redis.Z{Score: seq + 1, Member: itoa(late.ID)}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, s.keys.home(late.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	st := post(t, s, author.ID, "as late follows")
	if err := rdb.Incr(ctx, s.keys.followSeq()).Err(); err != nil {
		t.Fatal(err)
	}
	runJob(t, s, s.keys.job(postJobID(st.ID)))
	for _, f := range append(followers, late) {
		if got := homeIDs(t, s, f.ID); !slices.Equal(got, []int64{st.ID}) {
			t.Errorf("%s's home = %v, want %v", f.Login, got, []int64{st.ID})
		}
	}
}

// BenchmarkFirstPageRead measures what Redis spends on reading the first
// page of an author's 100 followers (scored by follow numbers in the
// hundreds of thousands, as a site's are), with their scores (as a post
// read it) and by its members alone with the scores of its last place and
// of the set's last (firstPage).
func BenchmarkFirstPageRead(b *testing.B) {
	for _, withScores := range []bool{true, false} {
		name := "members"
		if withScores {
			name = "withscores"
		}
		b.Run(name, func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			key := s.keys.followers(1)
			followers := make([]redis.Z, 100)
			for i := range followers {
				followers[i] = redis.Z{Score: float64(300_000 + 7*i), Member: strconv.Itoa(10_000 + i)}
			}
			if err := rdb.ZAdd(ctx, key, followers...).Err(); err != nil {
				b.Fatal(err)
			}
			cpu := redisCPU(b, rdb)
			reads := 0
			b.ResetTimer()
			for b.Loop() {
				pipe := rdb.Pipeline()
				var pages []*firstPage
				for range 100 {
					if withScores {
						pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: "+inf", Count: int64(s.opts.FanoutPassSize)})
					} else {
						pages = append(pages, s.queueFirstPage(ctx, pipe, 1, "-inf"))
					}
				}
				if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
					b.Fatal(err)
				}
				for _, p := range pages {
					if members, _, _, err := p.cut(ctx, s, "1000000", ""); err != nil || len(members) != 100 {
						b.Fatalf("cut: %d members, %v", len(members), err)
					}
				}
				reads += 100
			}
			b.StopTimer()
			b.ReportMetric((redisCPU(b, rdb)-cpu).Seconds()*1e6/float64(reads), "redis-us/read")
		})
	}
}

// TestFollowDuringAFullPagesPost follows an author while a post whose
// first page is full (more followers than a pass) is made: the follow
// takes its number after the post read the follow sequence, and copies the
// author's statuses before the status is written. The job's later passes
// reach that follower, read up to a follow sequence read once the status
// is written.
func TestFollowDuringAFullPagesPost(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", 3)
	late := signUp(t, s, "late")
	startWorker(t, s, "w")
	post(t, s, author.ID, "loads the scripts")
	waitJobsDone(t, s)

	raced := false
	s.afterQueue = func() { // the page read, the status not yet written
		s.afterQueue = nil
		if _, _, err := s.Follow(ctx, late.ID, "author"); err != nil {
			t.Error(err)
		}
		raced = true
	}
	st := post(t, s, author.ID, "as late follows")
	if !raced {
		t.Fatal("the follow did not run during the post")
	}
	waitJobsDone(t, s)
	for _, f := range append(followers, late) {
		if got := homeIDs(t, s, f.ID); !slices.Contains(got, st.ID) {
			t.Errorf("%s's home %v lacks status %d", f.Login, got, st.ID)
		}
	}
}

// TestLaterPassOfAnAuthorPulledSince runs the passes after a post's own
// first page once its author was made pulled from a later status on: the
// later passes read the follow sequence as a first pass does, but the
// status, older than the author's pulls, still reaches the rest of the
// followers' homes.
func TestLaterPassOfAnAuthorPulledSince(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", 3)
	st := post(t, s, author.ID, "before the pulls")
	if err := rdb.ZAdd(ctx, s.keys.pulledAuthors(), redis.Z{Score: float64(st.ID + 1), Member: itoa(author.ID)}).Err(); err != nil {
		t.Fatal(err)
	}
	runJob(t, s, s.keys.job(postJobID(st.ID)))
	for _, f := range followers {
		if got := homeIDs(t, s, f.ID); !slices.Equal(got, []int64{st.ID}) {
			t.Errorf("%s's home = %v, want %v", f.Login, got, []int64{st.ID})
		}
	}
}
