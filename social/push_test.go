package social

import (
	"fmt"
	"slices"
	"testing"
)

// TestPushRacesAnUnfollow pushes a status after the follower's unfollow
// has walked their home timeline: what a pass does when the unfollow comes
// between its page read and its push. The unfollow count read before the
// page has moved, so a plain push (the follower not connected) is undone,
// and push.lua (connected) checks the follow and adds nothing; unless the
// follower followed again since, whose follow brought the status back.
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
			before := unfollowCount(s.rdb.HMGet(ctx, s.keys.user(author.ID), unfollowsField))

			if _, err := s.Unfollow(ctx, fan.ID, "author"); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(homeIDs(t, s, fan.ID), st.ID) {
				t.Fatal("the unfollow left the status in its home timeline")
			}
			if again {
				follow(t, s, fan.ID, "author")
			}
			after := unfollowCount(s.rdb.HMGet(ctx, s.keys.user(author.ID), unfollowsField))
			if after == before {
				t.Fatalf("the unfollow count stayed %q", after)
			}

			err := s.pushStatus(ctx, author.ID, st.ID, 0, "{}", []string{itoa(fan.ID)}, []bool{c.connected}, before)
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
