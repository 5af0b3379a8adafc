package social

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// Only those the owner follows may be put in the owner's lists: adding
// anyone else is ErrNotFollowing and changes nothing, oneself excepted.
// An unfollow takes the followee out of every list of the follower's, with
// their statuses, and leaves other people's lists alone.
func TestListsHoldOnlyFollowees(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	bob := signUp(t, s, "bob")
	carol := signUp(t, s, "carol")
	byBob := post(t, s, bob.ID, "bob, before any list")
	engines := createList(t, s, ada.ID, "engines")
	looms := createList(t, s, ada.ID, "looms")
	carols := createList(t, s, carol.ID, "carol's")

	before := dumpKeys(t, s, rdb)
	if _, err := s.AddListMember(ctx, ada.ID, engines.ID, "bob"); !errors.Is(err, ErrNotFollowing) {
		t.Fatalf("adding someone not followed: %v, want ErrNotFollowing", err)
	}
	unchanged(t, s, rdb, before)
	// bob following ada is not ada following bob.
	follow(t, s, bob.ID, "ada")
	if _, err := s.AddListMember(ctx, ada.ID, engines.ID, "bob"); !errors.Is(err, ErrNotFollowing) {
		t.Fatalf("adding a follower one does not follow: %v, want ErrNotFollowing", err)
	}
	// Oneself needs no follow.
	addMember(t, s, ada.ID, engines.ID, "ada")

	followAll(t, s, ada.ID, "bob")
	follow(t, s, carol.ID, "bob")
	for _, l := range []List{engines, looms} {
		addMember(t, s, ada.ID, l.ID, "bob")
	}
	addMember(t, s, carol.ID, carols.ID, "bob")
	st := post(t, s, bob.ID, "bob, in three lists")
	for _, l := range []List{engines, looms, carols} {
		if got := listTimelineIDs(t, s, l.ID); !slices.Contains(got, st.ID) || !slices.Contains(got, byBob.ID) {
			t.Fatalf("list %q = %v, want bob's statuses", l.Name, got)
		}
	}

	if _, err := s.Unfollow(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	for _, l := range []List{engines, looms} {
		got, err := s.List(ctx, l.Owner.ID, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		members := zsetIDs(t, s, s.keys.listMembers(l.ID))
		if slices.Contains(members, bob.ID) || got.Members != int64(len(members)) {
			t.Errorf("list %q after the unfollow: members %v, count %d", l.Name, members, got.Members)
		}
		for _, id := range listTimelineIDs(t, s, l.ID) {
			if id == st.ID || id == byBob.ID {
				t.Errorf("list %q still holds bob's status %d", l.Name, id)
			}
		}
	}
	if got := zsetIDs(t, s, s.keys.listsIn(bob.ID)); !slices.Equal(got, []int64{carols.ID}) {
		t.Errorf("list:in of bob after ada's unfollow = %v, want only carol's list", got)
	}
	if got := listTimelineIDs(t, s, carols.ID); !slices.Contains(got, st.ID) {
		t.Errorf("carol's list lost bob's status: %v", got)
	}
	// ada stays in her own list, and bob posts to carol's only.
	if got := zsetIDs(t, s, s.keys.listMembers(engines.ID)); !slices.Equal(got, []int64{ada.ID}) {
		t.Errorf("engines members = %v, want ada", got)
	}
	later := post(t, s, bob.ID, "bob, after the unfollow")
	for _, l := range []List{engines, looms} {
		if slices.Contains(listTimelineIDs(t, s, l.ID), later.ID) {
			t.Errorf("list %q got a status of someone unfollowed", l.Name)
		}
	}
	// An unfollow of someone in none of one's lists changes no list.
	before = dumpKeys(t, s, rdb)
	if _, err := s.Unfollow(ctx, carol.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	unchanged(t, s, rdb, before)
}

// An add cut short after its membership, whose follow ended meanwhile and
// whose unfollow read the lists before that membership, leaves someone the
// owner does not follow in the list; the add's retry takes them out and
// refuses. An unfollow retried after an add raced it does the same.
func TestListAddRacingUnfollowEndsWithoutTheMember(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	ada := signUp(t, s, "ada")
	bob := signUp(t, s, "bob")
	post(t, s, bob.ID, "bob's")
	l := createList(t, s, ada.ID, "people")

	// The add read the follow, the unfollow ran whole, then the add's
	// script wrote and its instance died.
	follow(t, s, ada.ID, "bob")
	if _, err := s.Unfollow(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	cutShort := func() {
		t.Helper()
		seq := rdb.Incr(ctx, k.listMemberSeq()).Val()
		if err := listAddScript.Run(ctx, rdb, []string{k.list(l.ID), k.listMembers(l.ID)},
			ada.ID, bob.ID, 1, MaxListMembers, seq, 1).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.settleListIn(ctx, l.ID, bob.ID, seq); err != nil {
			t.Fatal(err)
		}
		if _, err := s.copyLatest(ctx, k.listStatuses(l.ID), k.profile(bob.ID), guard{key: k.listMembers(l.ID), member: itoa(bob.ID)}, s.opts.HomeSize); err != nil {
			t.Fatal(err)
		}
		if got := zsetIDs(t, s, k.listMembers(l.ID)); !slices.Equal(got, []int64{bob.ID}) {
			t.Fatalf("members after the add cut short = %v", got)
		}
	}
	gone := func(stage string) {
		t.Helper()
		got, err := s.List(ctx, l.Owner.ID, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Members != 0 || len(zsetIDs(t, s, k.listMembers(l.ID))) != 0 || len(listTimelineIDs(t, s, l.ID)) != 0 {
			t.Errorf("%s: %d members, members %v, timeline %v; want none", stage, got.Members,
				zsetIDs(t, s, k.listMembers(l.ID)), listTimelineIDs(t, s, l.ID))
		}
		if _, ok := inList(t, s, bob.ID, l.ID); ok {
			t.Errorf("%s: list:in of bob still holds the list", stage)
		}
	}

	cutShort()
	if _, err := s.AddListMember(ctx, ada.ID, l.ID, "bob"); !errors.Is(err, ErrNotFollowing) {
		t.Fatalf("the retried add: %v, want ErrNotFollowing", err)
	}
	gone("after the retried add")

	cutShort()
	if _, err := s.Unfollow(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	gone("after the retried unfollow")
}

// Adds racing unfollows and follows of the same people, many times over:
// whatever the interleaving, once they are done no list holds someone its
// owner does not follow, and the members, their count and list:in agree.
func TestListAddsRaceUnfollows(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	owner := signUp(t, s, "owner")
	people := signUpMany(t, s, "p", 6)
	lists := []List{createList(t, s, owner.ID, "one"), createList(t, s, owner.ID, "two")}
	for round := range 8 {
		var wg sync.WaitGroup
		for i, p := range people {
			follow(t, s, owner.ID, p.Login)
			wg.Go(func() {
				for _, l := range lists {
					_, err := s.AddListMember(ctx, owner.ID, l.ID, p.Login)
					if err != nil && !errors.Is(err, ErrNotFollowing) {
						t.Errorf("round %d: add %s: %v", round, p.Login, err)
					}
				}
			})
			wg.Go(func() {
				if _, err := s.Unfollow(ctx, owner.ID, p.Login); err != nil {
					t.Errorf("round %d: unfollow %s: %v", round, p.Login, err)
				}
				if (i+round)%3 == 0 {
					if _, _, err := s.Follow(ctx, owner.ID, p.Login); err != nil {
						t.Errorf("round %d: follow %s: %v", round, p.Login, err)
					}
				}
			})
		}
		wg.Wait()
		following := zsetIDs(t, s, s.keys.following(owner.ID))
		for _, l := range lists {
			members := zsetIDs(t, s, s.keys.listMembers(l.ID))
			got, err := s.List(ctx, l.Owner.ID, l.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Members != int64(len(members)) {
				t.Fatalf("round %d: list %q counts %d, holds %v", round, l.Name, got.Members, members)
			}
			for _, m := range members {
				if !slices.Contains(following, m) {
					t.Fatalf("round %d: list %q holds %d, whom its owner does not follow (follows %v)", round, l.Name, m, following)
				}
			}
			for _, p := range people {
				_, in := inList(t, s, p.ID, l.ID)
				if in != slices.Contains(members, p.ID) {
					t.Fatalf("round %d: %s in list:in of %q: %v, a member: %v", round, p.Login, l.Name, in, slices.Contains(members, p.ID))
				}
			}
		}
		// Next round: everyone out, to be followed and added again.
		for _, p := range people {
			if _, err := s.Unfollow(ctx, owner.ID, p.Login); err != nil {
				t.Fatal(err)
			}
		}
	}
}
