package social

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// userCounts reads uid's follower and following counts as the user hash
// keeps them.
func userCounts(tb testing.TB, s *Service, uid int64) (followers, following int64) {
	tb.Helper()
	v, err := s.rdb.HMGet(ctxT(tb), s.keys.user(uid), "followers", "following").Result()
	if err != nil {
		tb.Fatal(err)
	}
	parse := func(x any) int64 {
		str, _ := x.(string)
		var n int64
		fmt.Sscan(str, &n)
		return n
	}
	return parse(v[0]), parse(v[1])
}

// followState is every set and count a follow between a and b writes.
func followState(tb testing.TB, s *Service, a, b int64) []int64 {
	tb.Helper()
	ctx := ctxT(tb)
	k := s.keys
	var out []int64
	for _, p := range [2][2]int64{{a, b}, {b, a}} {
		for _, key := range []string{k.following(p[0]), k.followers(p[0]), k.friends(p[0])} {
			n, err := s.rdb.ZCard(ctx, key).Result()
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, n)
		}
		followers, following := userCounts(tb, s, p[0])
		out = append(out, followers, following)
	}
	return out
}

func TestBlockEndsFollowsBothWays(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	follow(t, s, ann.ID, "bob")
	follow(t, s, bob.ID, "ann")
	theirs := []int64{post(t, s, bob.ID, "one").ID, post(t, s, bob.ID, "two").ID}
	mine := post(t, s, ann.ID, "mine")
	if home := zsetIDs(t, s, s.keys.home(ann.ID)); len(home) != 3 {
		t.Fatalf("ann's home before the block: %v, want 3 statuses", home)
	}
	post(t, s, bob.ID, "@ann before the block")
	var lists []List
	for _, c := range []struct {
		owner  int64
		member string
	}{{ann.ID, "bob"}, {bob.ID, "ann"}} {
		l, err := s.CreateList(ctx, c.owner, "close")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddListMember(ctx, c.owner, l.ID, c.member); err != nil {
			t.Fatal(err)
		}
		lists = append(lists, l)
	}
	if got := noteSizes(t, s, ann.ID); got != [3]int64{2, 2, 2} {
		t.Fatalf("ann's notification ids, records, causes before the block: %v, want bob's follow and mention", got)
	}
	if _, err := s.Like(ctx, ann.ID, theirs[0]); err != nil {
		t.Fatal(err)
	}
	if got := noteSizes(t, s, bob.ID); got != [3]int64{2, 2, 2} {
		t.Fatalf("bob's notification ids, records, causes before the block: %v, want ann's follow and like", got)
	}
	l := listen(t, s, rdb, s.UserChannel(ann.ID), s.UserChannel(bob.ID))

	for range 2 { // twice: the second changes nothing
		if err := s.Block(ctx, ann.ID, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if got := followState(t, s, ann.ID, bob.ID); slices.ContainsFunc(got, func(n int64) bool { return n != 0 }) {
		t.Fatalf("following, followers, friends and counts of ann then bob after the block: %v; want all 0", got)
	}
	if home := zsetIDs(t, s, s.keys.home(ann.ID)); !slices.Equal(home, []int64{mine.ID}) {
		t.Fatalf("ann's home after the block: %v, want only her own %d (not %v)", home, mine.ID, theirs)
	}
	if home := zsetIDs(t, s, s.keys.home(bob.ID)); slices.Contains(home, mine.ID) {
		t.Fatalf("bob's home after the block holds ann's %d: %v", mine.ID, home)
	}
	for _, list := range lists {
		if members, err := s.ListMembers(ctx, list.Owner.ID, list.ID, Page{Limit: 10}); err != nil || len(members) != 0 {
			t.Errorf("list %d after the block: members %+v, %v; want none", list.ID, members, err)
		}
	}
	// Neither keeps a notification from the other, which the pages would
	// hide and the unread counts would still count.
	for _, u := range []User{ann, bob} {
		if got := noteSizes(t, s, u.ID); got != [3]int64{} {
			t.Errorf("%s's notification ids, records, causes after the block: %v, want none", u.Login, got)
		}
		if count, _, err := s.UnreadNotifications(ctx, u.ID); err != nil || count != 0 {
			t.Errorf("%s's unread after the block: %d, %v; want 0", u.Login, count, err)
		}
	}
	events := eventsSoFar(t, l)
	for _, c := range []struct {
		uid   int64
		other string
	}{{ann.ID, "bob"}, {bob.ID, "ann"}} {
		removed := ofType(events[s.UserChannel(c.uid)], protocol.TypeFriendRemoved)
		if len(removed) != 1 || removed[0].User.Login != c.other {
			t.Errorf("friend_removed frames to %d: %+v, want one of %s", c.uid, removed, c.other)
		}
	}

	// Neither can follow or answer the other; nothing was written.
	for _, c := range []struct {
		uid   int64
		login string
	}{{ann.ID, "bob"}, {bob.ID, "ann"}} {
		if _, _, err := s.Follow(ctx, c.uid, c.login); !errors.Is(err, ErrBlocked) {
			t.Errorf("%d follows %s: %v, want ErrBlocked", c.uid, c.login, err)
		}
	}
	if _, err := s.Reply(ctx, bob.ID, mine.ID, "hey"); !errors.Is(err, ErrBlocked) {
		t.Errorf("bob replies to ann: %v, want ErrBlocked", err)
	}
	if _, err := s.Reply(ctx, ann.ID, theirs[0], "hey"); !errors.Is(err, ErrBlocked) {
		t.Errorf("ann replies to bob: %v, want ErrBlocked", err)
	}
	for _, c := range []struct {
		name string
		act  func(ctx context.Context, uid, id int64) (Status, error)
	}{{"like", s.Like}, {"repost", s.Repost}} {
		if _, err := c.act(ctx, bob.ID, mine.ID); !errors.Is(err, ErrBlocked) {
			t.Errorf("bob's %s of ann's status: %v, want ErrBlocked", c.name, err)
		}
		if _, err := c.act(ctx, ann.ID, theirs[1]); !errors.Is(err, ErrBlocked) {
			t.Errorf("ann's %s of bob's status: %v, want ErrBlocked", c.name, err)
		}
	}
	if n := rdb.ZCard(ctx, s.keys.likes(mine.ID)).Val() + rdb.ZCard(ctx, s.keys.reposts(mine.ID)).Val(); n != 0 {
		t.Errorf("ann's status has %d likes and reposts after refused ones", n)
	}
	if got := followState(t, s, ann.ID, bob.ID); slices.ContainsFunc(got, func(n int64) bool { return n != 0 }) {
		t.Fatalf("follow state after refused follows: %v; want all 0", got)
	}
	// Bob's notifications to ann went with the block (his follow's);
	// a mention of ann by him stores none.
	before := noteSizes(t, s, ann.ID)
	if before != [3]int64{} {
		t.Errorf("ann's notification ids, records, causes after the block: %v, want none", before)
	}
	post(t, s, bob.ID, "@ann are you there")
	if after := noteSizes(t, s, ann.ID); after != before {
		t.Errorf("ann's notification ids, records, causes: %v after bob's mention, %v before", after, before)
	}
	blocks, err := s.Blocks(ctx, ann.ID, Page{Limit: 10})
	if err != nil || len(blocks) != 1 || blocks[0].Login != "bob" {
		t.Fatalf("ann's blocks: %+v, %v; want bob", blocks, err)
	}

	// Unblocking restores nothing, and lets them follow again.
	for range 2 {
		if err := s.Unblock(ctx, ann.ID, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if got := followState(t, s, ann.ID, bob.ID); slices.ContainsFunc(got, func(n int64) bool { return n != 0 }) {
		t.Fatalf("follow state after the unblock: %v; want all 0", got)
	}
	if n := rdb.ZCard(ctx, s.keys.blockedBy(bob.ID)).Val(); n != 0 {
		t.Fatalf("bob's blocked_by holds %d after the unblock", n)
	}
	follow(t, s, bob.ID, "ann")
}

// A block racing follows of the pair both ways leaves neither following
// the other, with exact counts, and no friendship.
func TestBlockRacesFollows(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	const rounds = 40
	for i := range rounds {
		a, b := signUp(t, s, fmt.Sprintf("a%02d", i)), signUp(t, s, fmt.Sprintf("b%02d", i))
		if i%2 == 0 {
			follow(t, s, a.ID, b.Login) // some pairs follow already
		}
		var wg sync.WaitGroup
		errs := make([]error, 3)
		wg.Go(func() { errs[0] = s.Block(ctx, a.ID, b.Login) })
		wg.Go(func() { _, _, errs[1] = s.Follow(ctx, b.ID, a.Login) })
		wg.Go(func() { _, _, errs[2] = s.Follow(ctx, a.ID, b.Login) })
		wg.Wait()
		if errs[0] != nil {
			t.Fatalf("round %d: block: %v", i, errs[0])
		}
		for _, err := range errs[1:] {
			if err != nil && !errors.Is(err, ErrBlocked) {
				t.Fatalf("round %d: follow: %v", i, err)
			}
		}
		if got := followState(t, s, a.ID, b.ID); slices.ContainsFunc(got, func(n int64) bool { return n != 0 }) {
			t.Fatalf("round %d: following, followers, friends and counts of a then b: %v; want all 0", i, got)
		}
	}
}

func TestBlockAndMuteBadInput(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann := signUp(t, s, "ann")
	bob := signUp(t, s, "bob")
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"block self", s.Block(ctx, ann.ID, "ann"), ErrSelfBlock},
		{"mute self", s.Mute(ctx, ann.ID, "ANN"), ErrSelfBlock},
		{"unblock self", s.Unblock(ctx, ann.ID, "ann"), ErrSelfBlock},
		{"block unknown", s.Block(ctx, ann.ID, "nobody"), ErrUserNotFound},
		{"mute unknown", s.Mute(ctx, ann.ID, "nobody"), ErrUserNotFound},
		{"block invalid", s.Block(ctx, ann.ID, "no/such"), ErrUserNotFound},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}

	// Full sets refuse one more, and write nothing of it.
	follow(t, s, ann.ID, "bob")
	for _, key := range []string{s.keys.blocks(ann.ID), s.keys.mutes(ann.ID)} {
		zs := make([]redis.Z, MaxBlocks)
		for i := range zs {
			zs[i] = redis.Z{Score: 1, Member: fmt.Sprint(1_000_000 + i)}
		}
		if err := rdb.ZAdd(ctx, key, zs...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Of accounts that are there (carol's hash under their ids): a mute at
	// the cap gives back the places of accounts gone.
	fields := rdb.HGetAll(ctx, s.keys.user(signUp(t, s, "carol").ID)).Val()
	pipe := rdb.Pipeline()
	for i := range MaxMutes {
		pipe.HSet(ctx, s.keys.user(int64(1_000_000+i)), fields)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Block(ctx, ann.ID, "bob"); !errors.Is(err, ErrTooManyBlocks) {
		t.Fatalf("block past the cap: %v, want ErrTooManyBlocks", err)
	}
	if err := s.Mute(ctx, ann.ID, "bob"); !errors.Is(err, ErrTooManyMutes) {
		t.Fatalf("mute past the cap: %v, want ErrTooManyMutes", err)
	}
	if n := rdb.ZCard(ctx, s.keys.blockedBy(bob.ID)).Val(); n != 0 {
		t.Fatalf("bob's blocked_by holds %d after a refused block", n)
	}
	if rel, err := s.Relations(ctx, ann.ID, []int64{bob.ID}); err != nil || !rel[0].YouFollow || rel[0].Blocking || rel[0].Muting {
		t.Fatalf("ann's relation to bob after refused block and mute: %+v, %v; want following only", rel, err)
	}
}

// Every read of statuses leaves out, for the viewer, those of whom they
// block, who block them, and whom they mute, and of reposts' originals;
// notifications from them too; search and suggestions leave out the
// blocked both ways.
func TestBlockAndMuteHideReads(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ann := signUp(t, s, "ann")
	blocked, blocker, muted, other := signUp(t, s, "blk"), signUp(t, s, "blkr"), signUp(t, s, "mtd"), signUp(t, s, "oth")
	for _, u := range []User{blocked, blocker, muted, other} {
		follow(t, s, ann.ID, u.Login)
		follow(t, s, u.ID, "ann") // a follow notification to ann from each
	}
	root := post(t, s, ann.ID, "root")
	var hidden []int64
	for _, u := range []User{blocked, blocker, muted} {
		hidden = append(hidden, post(t, s, u.ID, "from "+u.Login).ID)
		hidden = append(hidden, reply(t, s, u.ID, root.ID, "@ann reply from "+u.Login).ID)
	}
	shown := []int64{root.ID, post(t, s, other.ID, "from oth").ID, reply(t, s, other.ID, root.ID, "@ann reply from oth").ID}
	if err := s.Block(ctx, ann.ID, "blk"); err != nil {
		t.Fatal(err)
	}
	if err := s.Block(ctx, blocker.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if err := s.Mute(ctx, ann.ID, "mtd"); err != nil {
		t.Fatal(err)
	}

	read := func(name string, page TimelinePage, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sts, err := s.Decorate(ctx, ann.ID, page.Statuses)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := statusIDs(sts)
		for _, id := range hidden {
			if slices.Contains(got, id) {
				t.Errorf("%s for ann shows hidden status %d: %v", name, id, got)
			}
		}
		for _, id := range shown {
			if !slices.Contains(got, id) {
				t.Errorf("%s for ann lacks %d: %v", name, id, got)
			}
		}
		// Nobody else's view changes.
		all, err := s.Decorate(ctx, other.ID, page.Statuses)
		if err != nil || len(all) != len(page.Statuses) {
			t.Errorf("%s for oth: %d of %d statuses, %v", name, len(all), len(page.Statuses), err)
		}
	}
	page, err := s.GlobalTimeline(ctx, Cursor{Limit: 50})
	read("global", page, err)
	page, err = s.HomeTimeline(ctx, ann.ID, Cursor{Limit: 50})
	// The muted one's statuses are in ann's home (she follows them): read
	// leaves them out.
	read("home", page, err)

	thread, err := s.Context(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := s.Decorate(ctx, ann.ID, thread.Descendants)
	if err != nil {
		t.Fatal(err)
	}
	if got := statusIDs(sts); !slices.Equal(got, shown[2:]) {
		t.Errorf("thread of ann's status for ann: %v, want only %v", got, shown[2:])
	}

	notes, err := s.Notifications(ctx, ann.ID, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes.Notifications {
		if n.From.ID != other.ID {
			t.Errorf("ann's notifications show one from %s (%s)", n.From.Login, n.Type)
		}
	}
	if len(notes.Notifications) == 0 {
		t.Errorf("ann's notifications show none from oth")
	}

	found, err := s.SearchUsers(ctx, ann.ID, "b", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("ann's search for b finds %+v, want none", found)
	}
	if found, err := s.SearchUsers(ctx, other.ID, "b", 10); err != nil || len(found) != 2 {
		t.Errorf("oth's search for b finds %+v, %v; want blk and blkr", found, err)
	}
	if found, err := s.SearchUsers(ctx, ann.ID, "mtd", 10); err != nil || len(found) != 1 {
		t.Errorf("ann's search for mtd finds %+v, %v; want mtd (muting hides statuses only)", found, err)
	}

	// blk and blkr no longer follow ann: they would be suggested to her
	// as followers of people she follows, or as popular.
	sugg, err := s.Suggestions(ctx, ann.ID, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range sugg {
		if sg.User.ID == blocked.ID || sg.User.ID == blocker.ID || sg.User.ID == muted.ID {
			t.Errorf("ann is suggested %s", sg.User.Login)
		}
	}
	sugg, err = s.Suggestions(ctx, blocked.ID, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range sugg {
		if sg.User.ID == ann.ID {
			t.Errorf("blk is suggested ann, who blocks them")
		}
	}
}

// A follow that makes two users friends while one blocks the other tells
// their streams of the friendship (Befriended) and then, the friendship
// being gone, of its end: friend_removed is the last word each stream gets
// of the other, so no open stream is left showing the other's presence.
func TestBlockRacesBefriending(t *testing.T) {
	t.Parallel()
	var s *Service
	s, rdb := newService(t, Options{Befriended: func(ctx context.Context, a, b int64) error {
		// As presence's announcement does: a frame about each to the other.
		for _, p := range [2][2]int64{{a, b}, {b, a}} {
			frame := fmt.Sprintf(`{"type":"presence","user":{"id":%d},"online":true}`, p[1])
			if err := s.bus.Publish(ctx, s.UserChannel(p[0]), frame); err != nil {
				return err
			}
		}
		return nil
	}})
	ctx := ctxT(t)
	const rounds = 40
	befriended := 0
	for i := range rounds {
		a, b := signUp(t, s, fmt.Sprintf("a%02d", i)), signUp(t, s, fmt.Sprintf("b%02d", i))
		follow(t, s, a.ID, b.Login)
		l := listen(t, s, rdb, s.UserChannel(a.ID), s.UserChannel(b.ID))
		var wg sync.WaitGroup
		var blockErr, followErr error
		var made bool
		wg.Go(func() { blockErr = s.Block(ctx, a.ID, b.Login) })
		wg.Go(func() { _, made, followErr = s.Follow(ctx, b.ID, a.Login) })
		wg.Wait()
		if blockErr != nil || (followErr != nil && !errors.Is(followErr, ErrBlocked)) {
			t.Fatalf("round %d: block %v, follow %v", i, blockErr, followErr)
		}
		if made {
			befriended++
		}
		events := eventsSoFar(t, l)
		for _, p := range [2][2]int64{{a.ID, b.ID}, {b.ID, a.ID}} {
			var last string
			for _, ev := range events[s.UserChannel(p[0])] {
				if (ev.Type == protocol.TypePresence || ev.Type == protocol.TypeFriendRemoved) && ev.User != nil && ev.User.ID == p[1] {
					last = ev.Type
				}
			}
			if last == protocol.TypePresence {
				t.Fatalf("round %d: the last frame to %d about %d is a presence frame", i, p[0], p[1])
			}
		}
	}
	t.Logf("%d of %d racing follows made friends before the block ended it", befriended, rounds)
}

// A block and an unblock of the same pair racing each other, the other's
// whole run between one's read of the blocker's side and its write of the
// blocked user's, leave the blocked user's
// side agreeing with the blocker's: a block made again during an unblock
// stands on both (the blocked user cannot follow), and an unblock during a
// block leaves neither side holding it.
func TestBlockAndUnblockRacingAgree(t *testing.T) {
	t.Parallel()
	for _, blockLast := range []bool{true, false} {
		t.Run(fmt.Sprint("blocked at the end=", blockLast), func(t *testing.T) {
			t.Parallel()
			s, _ := newService(t, Options{})
			ctx := ctxT(t)
			ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
			if blockLast {
				if err := s.Block(ctx, ada.ID, "bob"); err != nil {
					t.Fatal(err)
				}
			}
			s.betweenBlockSides = func() {
				s.betweenBlockSides = nil
				var err error
				if blockLast {
					err = s.Block(ctx, ada.ID, "bob") // during the unblock
				} else {
					err = s.Unblock(ctx, ada.ID, "bob") // during the block
				}
				if err != nil {
					t.Error(err)
				}
			}
			var err error
			if blockLast {
				err = s.Unblock(ctx, ada.ID, "bob")
			} else {
				err = s.Block(ctx, ada.ID, "bob")
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.betweenBlockSides != nil {
				t.Fatal("nothing ran between the two sides")
			}
			_, errBlocks := s.rdb.ZScore(ctx, s.keys.blocks(ada.ID), itoa(bob.ID)).Result()
			_, errBy := s.rdb.ZScore(ctx, s.keys.blockedBy(bob.ID), itoa(ada.ID)).Result()
			if blocks, by := errBlocks == nil, errBy == nil; blocks != blockLast || by != blockLast {
				t.Fatalf("ada blocks bob: %v on ada's side, %v on bob's; want %v on both", blocks, by, blockLast)
			}
			_, _, err = s.Follow(ctx, bob.ID, "ada")
			if blockLast && !errors.Is(err, ErrBlocked) {
				t.Errorf("bob, blocked, follows ada: %v", err)
			} else if !blockLast && err != nil {
				t.Errorf("bob, not blocked, cannot follow ada: %v", err)
			}
		})
	}
}

// A friendship with a suspended account ends as any other: an unfollow or
// a block tells the other's streams (friend_removed), though the
// suspended account is shown to no one.
func TestFriendshipWithASuspendedAccountEnds(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	for _, end := range []string{"unfollow", "block"} {
		a, b := signUp(t, s, end+"_a"), signUp(t, s, end+"_b")
		follow(t, s, a.ID, b.Login)
		follow(t, s, b.ID, a.Login)
		if _, err := s.Suspend(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		l := listen(t, s, rdb, s.UserChannel(a.ID))
		var err error
		if end == "unfollow" {
			_, err = s.Unfollow(ctx, a.ID, b.Login)
		} else {
			err = s.Block(ctx, a.ID, b.Login)
		}
		if err != nil {
			t.Fatalf("%s: %v", end, err)
		}
		told := false
		for _, ev := range eventsSoFar(t, l)[s.UserChannel(a.ID)] {
			told = told || ev.Type == protocol.TypeFriendRemoved && ev.User != nil && ev.User.ID == b.ID
		}
		if !told {
			t.Errorf("%s of a suspended friend: no friend_removed about them", end)
		}
	}
}

// A follow whose follower's side was written before the followee blocked
// the follower tells the followee nothing: no followed frame reaches the
// one who blocks, and the follow does not stand.
func TestFollowOvertakenByABlockSendsNoFrame(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	a, b := signUp(t, s, "follower"), signUp(t, s, "blocker")
	l := listen(t, s, rdb, s.UserChannel(b.ID))
	s.betweenFollowSides = func() {
		s.betweenFollowSides = nil
		if err := s.Block(ctx, b.ID, a.Login); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := s.Follow(ctx, a.ID, b.Login); err != nil && !errors.Is(err, ErrBlocked) {
		t.Fatal(err)
	}
	for _, ev := range eventsSoFar(t, l)[s.UserChannel(b.ID)] {
		if ev.Type == protocol.TypeFollowed {
			t.Errorf("the blocker was sent a followed frame")
		}
	}
	if n := rdb.ZCard(ctx, s.keys.followers(b.ID)).Val(); n != 0 {
		t.Errorf("the blocker has %d followers, want none", n)
	}
}

// Mutes of accounts deleted since do not hold a user at the cap: a mute
// that finds the cap reached gives back the places of the oldest mutes
// whose accounts are gone, and is made; with none gone, it is refused.
func TestMuteCapGivesBackAccountsGone(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	signUp(t, s, "cat")
	key := s.keys.mutes(ada.ID)
	// The cap's worth: the oldest three of accounts not there, the rest of
	// accounts that are (bob's hash copied under their ids).
	fields, err := rdb.HGetAll(ctx, s.keys.user(bob.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	pipe := rdb.Pipeline()
	for i := range MaxMutes {
		id := int64(1_000_000 + i)
		pipe.ZAdd(ctx, key, redis.Z{Score: float64(1 + i), Member: itoa(id)})
		if i >= 3 {
			pipe.HSet(ctx, s.keys.user(id), fields)
		}
		if i%1000 == 999 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Mute(ctx, ada.ID, "bob"); err != nil {
		t.Fatalf("a mute at the cap with three accounts gone: %v", err)
	}
	if n := rdb.ZCard(ctx, key).Val(); n != MaxMutes-2 {
		t.Errorf("ada mutes %d, want %d", n, MaxMutes-2)
	}
	if err := s.Mute(ctx, ada.ID, "cat"); err != nil {
		t.Fatalf("a second mute: %v", err)
	}
	if err := s.Mute(ctx, ada.ID, "cat"); err != nil {
		t.Fatalf("the same mute again: %v", err)
	}
	pipe = rdb.Pipeline()
	pipe.ZAdd(ctx, key, redis.Z{Score: 0, Member: itoa(2_000_000)})
	pipe.HSet(ctx, s.keys.user(2_000_000), fields)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	dan := signUp(t, s, "dan")
	if err := s.Mute(ctx, ada.ID, dan.Login); !errors.Is(err, ErrTooManyMutes) {
		t.Errorf("a mute at the cap with no account gone: %v, want ErrTooManyMutes", err)
	}
}

// HiddenAuthorsOf reads for many users what HiddenAuthors reads for one,
// in two round trips, or one when none of them blocks, mutes or is
// blocked.
func TestHiddenAuthorsOf(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob, cat, dan := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat"), signUp(t, s, "dan")
	if err := s.Block(ctx, ann.ID, "dan"); err != nil {
		t.Fatal(err)
	}
	if err := s.Mute(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	counter := &commandCounter{}
	rdb.AddHook(counter)
	for _, c := range []struct {
		users []User
		trips int64
	}{
		{[]User{ann, bob, cat, dan}, 2},
		{[]User{bob, cat}, 1},
		{nil, 1},
	} {
		uids := make([]int64, len(c.users))
		for i, u := range c.users {
			uids[i] = u.ID
		}
		before := counter.roundTrips.Load()
		got, err := s.HiddenAuthorsOf(ctx, uids)
		if err != nil {
			t.Fatal(err)
		}
		if n := counter.roundTrips.Load() - before; n > c.trips {
			t.Errorf("%d users: %d round trips, want %d", len(uids), n, c.trips)
		}
		if len(got) != len(uids) {
			t.Fatalf("%d hidden sets for %d users", len(got), len(uids))
		}
		for i, uid := range uids {
			want, err := s.HiddenAuthors(ctx, uid)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			slices.Sort(got[i])
			if !slices.Equal(got[i], want) || (uid == ann.ID && !slices.Equal(got[i], sorted(bob.ID, dan.ID))) {
				t.Errorf("hidden from %s: %v, HiddenAuthors says %v", c.users[i].Login, got[i], want)
			}
		}
	}
}

func sorted(ids ...int64) []int64 {
	slices.Sort(ids)
	return ids
}
