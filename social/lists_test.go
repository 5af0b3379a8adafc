package social

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func createList(tb testing.TB, s *Service, owner int64, name string) List {
	tb.Helper()
	l, err := s.CreateList(ctxT(tb), owner, name)
	if err != nil {
		tb.Fatalf("create list %q for %d: %v", name, owner, err)
	}
	return l
}

func addMember(tb testing.TB, s *Service, owner, id int64, login string) List {
	tb.Helper()
	l, err := s.AddListMember(ctxT(tb), owner, id, login)
	if err != nil {
		tb.Fatalf("add %s to list %d: %v", login, id, err)
	}
	return l
}

// followAll makes uid follow each of logins: only followees may be put
// in one's lists.
func followAll(tb testing.TB, s *Service, uid int64, logins ...string) {
	tb.Helper()
	for _, login := range logins {
		follow(tb, s, uid, login)
	}
}

// seedFollowing writes uid's side of follows of each of uids, all that
// AddListMember reads of a follow, for tests that add hundreds of members
// (a whole Follow each would be slow).
func seedFollowing(tb testing.TB, s *Service, uid int64, uids ...int64) {
	tb.Helper()
	ctx := ctxT(tb)
	zs := make([]redis.Z, len(uids))
	for i, u := range uids {
		zs[i] = redis.Z{Score: float64(i + 1), Member: itoa(u)}
	}
	if err := s.rdb.ZAdd(ctx, s.keys.following(uid), zs...).Err(); err != nil {
		tb.Fatal(err)
	}
}

// listsOf makes the lists named, owned by owner, each holding members,
// whom owner follows first.
func listsOf(tb testing.TB, s *Service, owner int64, names []string, members ...string) []List {
	tb.Helper()
	followAll(tb, s, owner, members...)
	lists := make([]List, len(names))
	for i, name := range names {
		lists[i] = createList(tb, s, owner, name)
		for _, m := range members {
			lists[i] = addMember(tb, s, owner, lists[i].ID, m)
		}
	}
	return lists
}

func listIDs(lists []List) []int64 {
	ids := make([]int64, len(lists))
	for i, l := range lists {
		ids[i] = l.ID
	}
	return ids
}

// listTimelineIDs returns the status ids in list id's timeline, oldest
// first, as Redis holds them.
func listTimelineIDs(tb testing.TB, s *Service, id int64) []int64 {
	tb.Helper()
	return zsetIDs(tb, s, s.keys.listStatuses(id))
}

// unchanged fails the test when any key under the service's prefix differs
// from before (a dumpKeys), appeared or went.
func unchanged(tb testing.TB, s *Service, rdb redis.UniversalClient, before map[string]string) {
	tb.Helper()
	after := dumpKeys(tb, s, rdb)
	for _, key := range slices.Sorted(maps.Keys(before)) {
		if v, ok := after[key]; !ok {
			tb.Errorf("%s went", key)
		} else if v != before[key] {
			tb.Errorf("%s changed", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[key]; !ok {
			tb.Errorf("%s appeared", key)
		}
	}
}

// A list is made, read, renamed and deleted by its owner; its owner's lists
// come oldest first, and a deleted list leaves no key behind.
func TestListLifecycle(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	before := dumpKeys(t, s, rdb)

	engines := createList(t, s, ada.ID, "  Engines ")
	if engines.Name != "Engines" || engines.Owner != ada.Ref() || engines.Members != 0 || engines.ID <= 0 {
		t.Fatalf("created %+v, want Engines owned by %+v, empty", engines, ada.Ref())
	}
	if age := time.Since(engines.Created); age < 0 || age > time.Minute {
		t.Fatalf("created at %v, %v ago", engines.Created, age)
	}
	looms := createList(t, s, ada.ID, "Looms")
	got, err := s.List(ctx, ada.ID, engines.ID)
	if err != nil || got != engines {
		t.Fatalf("List = %+v, %v; want %+v", got, err, engines)
	}
	lists, err := s.Lists(ctx, ada.ID)
	if err != nil || !slices.Equal(listIDs(lists), []int64{engines.ID, looms.ID}) || lists[0] != engines {
		t.Fatalf("Lists = %+v, %v; want Engines then Looms", lists, err)
	}

	renamed, err := s.RenameList(ctx, ada.ID, engines.ID, "Difference engines")
	if err != nil {
		t.Fatal(err)
	}
	want := engines
	want.Name = "Difference engines"
	if renamed != want {
		t.Fatalf("renamed %+v, want %+v", renamed, want)
	}
	if got, _ := s.List(ctx, ada.ID, engines.ID); got != want {
		t.Fatalf("List after the rename = %+v, want %+v", got, want)
	}

	for _, l := range []List{engines, looms} {
		if err := s.DeleteList(ctx, ada.ID, l.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, l.Owner.ID, l.ID); !errors.Is(err, ErrListNotFound) {
			t.Fatalf("reading a deleted list: %v, want ErrListNotFound", err)
		}
	}
	if lists, err := s.Lists(ctx, ada.ID); err != nil || len(lists) != 0 {
		t.Fatalf("Lists after deleting both = %+v, %v", lists, err)
	}
	// Only the id counter stays.
	delete(before, s.keys.listSeq())
	after := dumpKeys(t, s, rdb)
	delete(after, s.keys.listSeq())
	if !maps.Equal(before, after) {
		t.Fatalf("keys before %v, after %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// A name is trimmed and must be 1 to 64 characters with no control or
// bidirectional formatting characters; a bad one is refused as an invalid
// name, on creation and rename alike, and changes nothing.
func TestListNameRules(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	l := createList(t, s, ada.ID, "kept")
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", "Friends", true},
		{"unicode", "Zoë 山田 ✨", true},
		{"longest", strings.Repeat("é", 64), true},
		{"empty", "", false},
		{"blank", " \t\n ", false},
		{"too long", strings.Repeat("é", 65), false},
		{"nul", "a\x00b", false},
		{"newline inside", "two\nlines", false},
		{"escape", "\x1b[31mred", false},
		{"c1", "c1\u0085inside", false},
		{"override", "gnp.exe\u202e", false},
		{"isolate", "a\u2066b", false},
		{"not utf-8", "bad\xff", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []struct {
				name string
				do   func() (List, error)
			}{
				{"create", func() (List, error) { return s.CreateList(ctx, ada.ID, tc.in) }},
				{"rename", func() (List, error) { return s.RenameList(ctx, ada.ID, l.ID, tc.in) }},
			} {
				before := dumpKeys(t, s, rdb)
				got, err := op.do()
				if tc.ok {
					if err != nil || got.Name != strings.TrimSpace(tc.in) {
						t.Fatalf("%s %q: %+v, %v; want it accepted", op.name, tc.in, got, err)
					}
					continue
				}
				var inv *InvalidError
				if !errors.As(err, &inv) || inv.Field != "name" {
					t.Fatalf("%s %q: %+v, %v; want an invalid name", op.name, tc.in, got, err)
				}
				unchanged(t, s, rdb, before)
			}
		})
	}
}

// A user owns at most MaxListsPerUser lists and a list holds at most
// MaxListMembers; past either a change is refused and changes nothing.
// Adding someone who is in the full list already is no change, and so no
// refusal.
func TestListCaps(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	var lists []List
	for i := range MaxListsPerUser {
		lists = append(lists, createList(t, s, ada.ID, fmt.Sprint("list ", i)))
	}
	before := dumpKeys(t, s, rdb)
	if _, err := s.CreateList(ctx, ada.ID, "one too many"); !errors.Is(err, ErrTooManyLists) {
		t.Fatalf("list %d: %v, want ErrTooManyLists", MaxListsPerUser+1, err)
	}
	delete(before, s.keys.listSeq()) // an id was taken, and is not used
	after := dumpKeys(t, s, rdb)
	delete(after, s.keys.listSeq())
	if !maps.Equal(before, after) {
		t.Fatal("a refused list changed something")
	}
	if err := s.DeleteList(ctx, ada.ID, lists[0].ID); err != nil {
		t.Fatal(err)
	}
	createList(t, s, ada.ID, "in the place of the deleted one")
	// Another user's count is their own.
	createList(t, s, signUp(t, s, "bob").ID, "bob's")

	full := lists[1]
	members := signUpMany(t, s, "m", MaxListMembers+1)
	seedFollowing(t, s, ada.ID, userIDs(members)...)
	for _, m := range members[:MaxListMembers] {
		addMember(t, s, ada.ID, full.ID, m.Login)
	}
	before = dumpKeys(t, s, rdb)
	last := members[MaxListMembers].Login
	if _, err := s.AddListMember(ctx, ada.ID, full.ID, last); !errors.Is(err, ErrListFull) {
		t.Fatalf("member %d: %v, want ErrListFull", MaxListMembers+1, err)
	}
	if got := addMember(t, s, ada.ID, full.ID, members[7].Login); got.Members != MaxListMembers {
		t.Fatalf("adding a member again to a full list: %d members, want %d", got.Members, MaxListMembers)
	}
	unchanged(t, s, rdb, before)
	// Removing one makes room.
	if _, err := s.RemoveListMember(ctx, ada.ID, full.ID, members[0].Login); err != nil {
		t.Fatal(err)
	}
	if got := addMember(t, s, ada.ID, full.ID, last); got.Members != MaxListMembers {
		t.Fatalf("after making room: %d members, want %d", got.Members, MaxListMembers)
	}
}

// signUpMany signs up n users, <prefix>000 on, several at a time.
func signUpMany(tb testing.TB, s *Service, prefix string, n int) []User {
	tb.Helper()
	users := make([]User, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range users {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			u, _, err := s.SignUp(ctxT(tb), fmt.Sprintf("%s%03d", prefix, i), "Member", "kettle-drum-41")
			if err != nil {
				tb.Errorf("sign up %d: %v", i, err)
			}
			users[i] = u
		})
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	return users
}

// Anyone may read a list, but only its owner may change it: everyone else
// gets ErrNotOwner and changes nothing. A list that does not exist is
// ErrListNotFound to every call, and an unknown member ErrUserNotFound.
func TestListRefusals(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	bob := signUp(t, s, "bob")
	l := createList(t, s, ada.ID, "ada's")
	follow(t, s, ada.ID, "bob")
	addMember(t, s, ada.ID, l.ID, "bob")
	post(t, s, bob.ID, "in ada's list")
	gone := createList(t, s, ada.ID, "deleted")
	if err := s.DeleteList(ctx, ada.ID, gone.ID); err != nil {
		t.Fatal(err)
	}

	// ada reads it; to bob, its member, and to a visitor (0) it is no list.
	if got, err := s.List(ctx, ada.ID, l.ID); err != nil || got.ID != l.ID {
		t.Fatalf("ada reads the list: %+v, %v", got, err)
	}
	if users, err := s.ListMembers(ctx, ada.ID, l.ID, Page{Limit: 10}); err != nil || len(users) != 1 || users[0].ID != bob.ID {
		t.Fatalf("ada reads its members: %+v, %v", users, err)
	}
	if page, err := s.ListTimeline(ctx, ada.ID, l.ID, Cursor{Limit: 10}); err != nil || len(page.Statuses) != 1 {
		t.Fatalf("ada reads its timeline: %+v, %v", page, err)
	}
	for _, viewer := range []int64{bob.ID, 0} {
		if got, err := s.List(ctx, viewer, l.ID); !errors.Is(err, ErrListNotFound) {
			t.Errorf("%d reads ada's list: %+v, %v; want ErrListNotFound", viewer, got, err)
		}
		if got, err := s.ListMembers(ctx, viewer, l.ID, Page{Limit: 10}); !errors.Is(err, ErrListNotFound) {
			t.Errorf("%d reads ada's list's members: %+v, %v; want ErrListNotFound", viewer, got, err)
		}
		if got, err := s.ListTimeline(ctx, viewer, l.ID, Cursor{Limit: 10}); !errors.Is(err, ErrListNotFound) {
			t.Errorf("%d reads ada's list's timeline: %+v, %v; want ErrListNotFound", viewer, got, err)
		}
	}
	before := dumpKeys(t, s, rdb)
	changes := func(uid, id int64, member string) map[string]func() error {
		return map[string]func() error{
			"rename": func() error { _, err := s.RenameList(ctx, uid, id, "mine now"); return err },
			"delete": func() error { return s.DeleteList(ctx, uid, id) },
			"add":    func() error { _, err := s.AddListMember(ctx, uid, id, member); return err },
			"remove": func() error { _, err := s.RemoveListMember(ctx, uid, id, member); return err },
		}
	}
	for _, tc := range []struct {
		name   string
		uid    int64
		id     int64
		member string
		want   error
	}{
		{"not the owner", bob.ID, l.ID, "bob", ErrNotOwner},
		{"not the owner, adding someone new", bob.ID, l.ID, "ada", ErrNotListOwner},
		{"unknown list", ada.ID, gone.ID + 100, "bob", ErrListNotFound},
		{"deleted list", ada.ID, gone.ID, "bob", ErrListNotFound},
		{"unknown member", ada.ID, l.ID, "nobody", ErrUserNotFound},
		{"malformed member", ada.ID, l.ID, "no body", ErrUserNotFound},
	} {
		for name, change := range changes(tc.uid, tc.id, tc.member) {
			if tc.want == ErrUserNotFound && (name == "rename" || name == "delete") {
				continue
			}
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				if err := change(); !errors.Is(err, tc.want) {
					t.Fatalf("%s: %v, want %v", name, err, tc.want)
				}
				unchanged(t, s, rdb, before)
			})
		}
	}
	for name, read := range map[string]func(id int64) error{
		"list":     func(id int64) error { _, err := s.List(ctx, ada.ID, id); return err },
		"members":  func(id int64) error { _, err := s.ListMembers(ctx, ada.ID, id, Page{Limit: 10}); return err },
		"timeline": func(id int64) error { _, err := s.ListTimeline(ctx, ada.ID, id, Cursor{Limit: 10}); return err },
	} {
		for _, id := range []int64{gone.ID, gone.ID + 100, 0, -1} {
			if err := read(id); !errors.Is(err, ErrListNotFound) {
				t.Errorf("%s of list %d: %v, want ErrListNotFound", name, id, err)
			}
		}
	}
	if _, err := s.ListTimeline(ctx, l.Owner.ID, l.ID, Cursor{}); err == nil {
		t.Error("a list timeline read with no limit was not refused")
	}
}

// Adding a member backfills the list's timeline with their newest
// statuses (at most HomeSize, in id order among the others'); adding them
// again changes nothing. Removing them takes exactly their statuses out,
// and removing them again changes nothing. One may add oneself.
func TestListMembershipBackfillAndRemoval(t *testing.T) {
	t.Parallel()
	const size = 20
	s, rdb := newService(t, Options{HomeSize: size})
	ctx := ctxT(t)
	owner := signUp(t, s, "owner")
	ada := signUp(t, s, "ada")
	bob := signUp(t, s, "bob")
	var byAda, byBob, own []int64
	for i := range 30 {
		byAda = append(byAda, post(t, s, ada.ID, fmt.Sprint("ada ", i)).ID)
		if i%5 == 0 {
			byBob = append(byBob, post(t, s, bob.ID, fmt.Sprint("bob ", i)).ID)
		}
		if i%10 == 3 {
			own = append(own, post(t, s, owner.ID, fmt.Sprint("own ", i)).ID)
		}
	}
	l := createList(t, s, owner.ID, "people")
	followAll(t, s, owner.ID, "ada", "bob")
	check := func(stage string, want []int64) {
		t.Helper()
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, want) {
			t.Fatalf("%s: list holds %v, want %v", stage, got, want)
		}
	}

	if got := addMember(t, s, owner.ID, l.ID, "bob"); got.Members != 1 {
		t.Fatalf("after adding bob: %d members", got.Members)
	}
	check("after adding bob", byBob)
	addMember(t, s, owner.ID, l.ID, "ADA") // logins match ignoring case
	check("after adding ada", newestOf(size, byAda, byBob))
	before := dumpKeys(t, s, rdb)
	if got := addMember(t, s, owner.ID, l.ID, "ada"); got.Members != 2 {
		t.Fatalf("after adding ada again: %d members, want 2", got.Members)
	}
	unchanged(t, s, rdb, before)
	addMember(t, s, owner.ID, l.ID, "owner")
	check("after adding oneself", newestOf(size, byAda, byBob, own))
	members, err := s.ListMembers(ctx, l.Owner.ID, l.ID, Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := userIDs(members), []int64{owner.ID, ada.ID, bob.ID}; !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v (newest first)", got, want)
	}
	if got, _ := s.ListMembers(ctx, l.Owner.ID, l.ID, Page{Limit: 1, Offset: 1}); !slices.Equal(userIDs(got), []int64{ada.ID}) {
		t.Fatalf("second page of one member: %v, want ada", userIDs(got))
	}

	removed, err := s.RemoveListMember(ctx, owner.ID, l.ID, "ada")
	if err != nil || removed.Members != 2 {
		t.Fatalf("remove ada: %+v, %v", removed, err)
	}
	want := newestOf(size, byAda, byBob, own)
	want = slices.DeleteFunc(want, func(id int64) bool { return slices.Contains(byAda, id) })
	check("after removing ada", want)
	before = dumpKeys(t, s, rdb)
	if got, err := s.RemoveListMember(ctx, owner.ID, l.ID, "ada"); err != nil || got.Members != 2 {
		t.Fatalf("remove ada again: %+v, %v", got, err)
	}
	unchanged(t, s, rdb, before)
	for _, u := range []User{ada, bob} {
		in := zsetIDs(t, s, s.keys.listsIn(u.ID))
		if wantIn := u.ID == bob.ID; slices.Contains(in, l.ID) != wantIn {
			t.Errorf("list:in of %s = %v", u.Login, in)
		}
	}
}

func userIDs(users []User) []int64 {
	ids := make([]int64, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	return ids
}

// userChannels returns the event channels of users.
func userChannels(s *Service, users []User) []string {
	channels := make([]string, len(users))
	for i, u := range users {
		channels[i] = s.UserChannel(u.ID)
	}
	return channels
}

// A removal that an add of the same member overtakes (a second tab, a
// retried request) leaves them a member with their statuses in the list:
// the add's backfill, made before the removal walked the timeline, is
// copied back rather than lost with the walk.
func TestListRemovalOvertakenByAnAdd(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	owner := signUp(t, s, "owner")
	bob := signUp(t, s, "bob")
	var byBob []int64
	for i := range 5 {
		byBob = append(byBob, post(t, s, bob.ID, fmt.Sprint("bob ", i)).ID)
	}
	l := listsOf(t, s, owner.ID, []string{"people"}, "bob")[0]
	if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, byBob) {
		t.Fatalf("the list holds %v, want bob's %v", got, byBob)
	}
	// The add runs whole between the removal's membership write and its
	// walk of the timeline.
	timeline := s.keys.listStatuses(l.ID)
	hook := &beforeOnce{
		match: func(c redis.Cmder) bool {
			args := c.Args()
			return c.Name() == "zrange" && len(args) > 1 && args[1] == timeline
		},
		do: func() {
			if _, err := s.AddListMember(ctx, owner.ID, l.ID, "bob"); err != nil {
				t.Error(err)
			}
		},
	}
	rdb.AddHook(hook)
	if _, err := s.RemoveListMember(ctx, owner.ID, l.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if !hook.fired.Load() {
		t.Fatal("the removal never walked the list's timeline")
	}
	members, err := s.ListMembers(ctx, owner.ID, l.ID, Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members[0].ID != bob.ID {
		t.Fatalf("members %v, want bob (the add came last)", members)
	}
	if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, byBob) {
		t.Errorf("the list holds %v, want bob's %v: a member's statuses lost", got, byBob)
	}
}

// A status reaches the timeline of every list that holds its author, over
// as many passes as the lists need, whatever the author's followers; the
// first runs inside Post. A list that takes the author in while the job
// runs gets it from its backfill. Deleting the status takes it out of
// every list the same way. An author in no list queues no list job.
func TestListFanoutPostAndDelete(t *testing.T) {
	t.Parallel()
	const passSize = 3
	for _, n := range []int{1, passSize, 3*passSize + 2} {
		t.Run(fmt.Sprintf("lists=%d", n), func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{FanoutPassSize: passSize})
			ctx := ctxT(t)
			author := signUp(t, s, "author")
			followersOf(t, s, "author", 2)
			owners := signUpMany(t, s, "o", (n+1)/2)
			var lists []List
			for i := range n {
				o := owners[i/2] // two lists each
				if i%2 == 0 {
					follow(t, s, o.ID, "author")
				}
				lists = append(lists, createList(t, s, o.ID, fmt.Sprint("list ", i)))
				addMember(t, s, o.ID, lists[i].ID, "author")
			}
			late := createList(t, s, owners[0].ID, "late")

			st := post(t, s, author.ID, "to every list")
			job := s.keys.job(listPostJobID(st.ID))
			for i, l := range lists {
				got := slices.Contains(listTimelineIDs(t, s, l.ID), st.ID)
				if want := i < passSize; got != want {
					t.Fatalf("after the inline pass, list %d has the status: %v, want %v", i, got, want)
				}
			}
			addMember(t, s, owners[0].ID, late.ID, "author")
			passes := runJob(t, s, job)
			var reached int64
			for _, p := range passes {
				reached += p.reached
			}
			if want := int64(max(0, n-passSize)); reached != want {
				t.Errorf("the passes after the first reached %d lists, want %d", reached, want)
			}
			for _, l := range append(slices.Clone(lists), late) {
				if !slices.Contains(listTimelineIDs(t, s, l.ID), st.ID) {
					t.Errorf("list %q lacks the status", l.Name)
				}
			}

			// Delete: the inline pass cleans the first lists, the job the rest.
			runJob(t, s, s.keys.job(postJobID(st.ID))) // the followers' job
			if err := s.DeleteStatus(ctx, author.ID, st.ID); err != nil {
				t.Fatal(err)
			}
			cleanup := s.keys.job(listDeleteJobID(st.ID))
			for i, l := range lists {
				got := slices.Contains(listTimelineIDs(t, s, l.ID), st.ID)
				if want := i >= passSize; got != want {
					t.Fatalf("after the inline cleanup pass, list %d has the status: %v, want %v", i, got, want)
				}
			}
			page, err := s.ListTimeline(ctx, lists[n-1].Owner.ID, lists[n-1].ID, Cursor{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(statusIDs(page.Statuses), st.ID) {
				t.Error("a deleted status is read from a list its cleanup has not reached")
			}
			runJob(t, s, cleanup)
			runJob(t, s, s.keys.job(deleteJobID(st.ID)))
			for _, l := range append(slices.Clone(lists), late) {
				if slices.Contains(listTimelineIDs(t, s, l.ID), st.ID) {
					t.Errorf("list %q still holds the deleted status", l.Name)
				}
			}
			for _, key := range []string{job, cleanup} {
				if rdb.Exists(ctx, key).Val() != 0 {
					t.Errorf("%s is left after its job", key)
				}
			}
			if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
				t.Errorf("job stream holds %d entries after the jobs, want 0", n)
			}

			// Someone in no list queues no list job.
			nobody := signUp(t, s, "nobody")
			other := post(t, s, nobody.ID, "unlisted")
			if err := s.DeleteStatus(ctx, nobody.ID, other.ID); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{s.keys.job(listPostJobID(other.ID)), s.keys.job(listDeleteJobID(other.ID))} {
				if rdb.Exists(ctx, key).Val() != 0 {
					t.Errorf("%s queued for an author in no list", key)
				}
			}
			if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
				t.Errorf("job stream holds %d entries, want 0", n)
			}
		})
	}
}

// A list job stops once its status is deleted; a deleted list is in no
// member's list:in, so no job writes its timeline again.
func TestListJobsAfterDeletions(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 1})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	other := signUp(t, s, "other")
	owner := signUp(t, s, "owner")
	lists := listsOf(t, s, owner.ID, []string{"first", "second", "third"}, "author", "other")
	st := post(t, s, author.ID, "soon deleted") // reaches lists[0] only
	if err := s.DeleteList(ctx, owner.ID, lists[1].ID); err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{author, other} {
		if got, want := zsetIDs(t, s, s.keys.listsIn(u.ID)), []int64{lists[0].ID, lists[2].ID}; !slices.Equal(got, want) {
			t.Fatalf("list:in of %s after a delete = %v, want %v", u.Login, got, want)
		}
	}
	runJob(t, s, s.keys.job(listPostJobID(st.ID)))
	for _, key := range []string{s.keys.list(lists[1].ID), s.keys.listMembers(lists[1].ID), s.keys.listStatuses(lists[1].ID)} {
		if rdb.Exists(ctx, key).Val() != 0 {
			t.Errorf("%s exists after its list was deleted", key)
		}
	}
	if got := listTimelineIDs(t, s, lists[2].ID); !slices.Equal(got, []int64{st.ID}) {
		t.Fatalf("list 2 = %v, want the status", got)
	}

	gone := post(t, s, author.ID, "deleted before its job ends")
	if err := s.DeleteStatus(ctx, author.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if passes := runJob(t, s, s.keys.job(listPostJobID(gone.ID))); len(passes) != 1 || passes[0].reached != 0 {
		t.Errorf("the job of a deleted status ran %+v, want one pass reaching nobody", passes)
	}
	runJob(t, s, s.keys.job(listDeleteJobID(gone.ID)))
	for _, l := range []List{lists[0], lists[2]} {
		if slices.Contains(listTimelineIDs(t, s, l.ID), gone.ID) {
			t.Errorf("list %q holds the deleted status", l.Name)
		}
	}
}

// A status deleted while its list cleanup is on the way stays in the
// timelines of lists the job has not reached. If its author leaves such a
// list first, the job never reaches it: the removal drops it, with any
// other deleted status there whose cleanup is under way.
func TestListRemovalDropsStatusesDeletedUnderway(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{FanoutPassSize: 1})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	other := signUp(t, s, "other")
	owner := signUp(t, s, "owner")
	lists := listsOf(t, s, owner.ID, []string{"first", "second"}, "author", "other")
	first, second := lists[0], lists[1]
	var sts []Status
	for _, by := range []User{author, author, other, other} {
		st := post(t, s, by.ID, "by "+by.Login)
		runJob(t, s, s.keys.job(listPostJobID(st.ID)))
		sts = append(sts, st)
	}
	gone, kept, otherGone, otherKept := sts[0], sts[1], sts[2], sts[3]
	for _, st := range []Status{gone, otherGone} {
		if err := s.DeleteStatus(ctx, st.UID, st.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := listTimelineIDs(t, s, second.ID), statusIDs(sts); !slices.Equal(got, want) {
		t.Fatalf("second list before the cleanup reaches it = %v, want %v", got, want)
	}
	if _, err := s.RemoveListMember(ctx, owner.ID, second.ID, "author"); err != nil {
		t.Fatal(err)
	}
	if got, want := listTimelineIDs(t, s, second.ID), []int64{otherKept.ID}; !slices.Equal(got, want) {
		t.Errorf("second list after removing the author = %v, want %v", got, want)
	}
	for _, st := range []Status{gone, otherGone} {
		runJob(t, s, s.keys.job(listDeleteJobID(st.ID)))
	}
	if got, want := listTimelineIDs(t, s, first.ID), []int64{kept.ID, otherKept.ID}; !slices.Equal(got, want) {
		t.Errorf("first list after the cleanup = %v, want %v", got, want)
	}
}

// Paging through a list's timeline with the cursors each page gives yields
// every status exactly once, in order, both ways, also across statuses
// deleted from under it whose cleanup has not reached it.
func TestListTimelinePagesExactly(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{FanoutPassSize: 1})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	bob := signUp(t, s, "bob")
	owner := signUp(t, s, "owner")
	// The first list takes each cleanup's inline pass; the second waits.
	lists := listsOf(t, s, owner.ID, []string{"clean", "stale"}, "ada", "bob")
	stale := lists[1]
	var all, deleted []int64
	for i := range 30 {
		by := ada
		if i%3 == 0 {
			by = bob
		}
		st := post(t, s, by.ID, fmt.Sprint("status ", i))
		runJob(t, s, s.keys.job(listPostJobID(st.ID)))
		all = append(all, st.ID)
		if (i >= 10 && i < 21) || i == 3 || i == 27 {
			deleted = append(deleted, st.ID)
		}
	}
	for _, id := range deleted {
		st, err := s.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteStatus(ctx, st.UID, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := listTimelineIDs(t, s, stale.ID); len(got) != len(all) {
		t.Fatalf("stale list holds %d ids, want all %d written", len(got), len(all))
	}
	live := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return slices.Contains(deleted, id) })
	for _, l := range lists {
		read := func(c Cursor) (TimelinePage, error) { return s.ListTimeline(ctx, l.Owner.ID, l.ID, c) }
		for _, limit := range []int{1, 4, 7, 100} {
			t.Run(fmt.Sprintf("%s/limit=%d", l.Name, limit), func(t *testing.T) {
				if got, _ := walkTimeline(t, read, Cursor{Limit: limit}); !slices.Equal(got, reversed(live)) {
					t.Errorf("newest first: %v, want %v", got, reversed(live))
				}
				if got, _ := walkTimeline(t, read, Cursor{Limit: limit, Forward: true}); !slices.Equal(got, live) {
					t.Errorf("oldest first: %v, want %v", got, live)
				}
				mid := deleted[len(deleted)/2]
				want := reversed(slices.DeleteFunc(slices.Clone(live), func(id int64) bool { return id >= mid }))
				if got, _ := walkTimeline(t, read, Cursor{Limit: limit, Before: mid}); !slices.Equal(got, want) {
					t.Errorf("before %d: %v, want %v", mid, got, want)
				}
			})
		}
	}
}

// Racing adds of distinct users, and of the same user, to one list never
// take it past MaxListMembers: exactly the cap are added, the rest get
// ErrListFull, and the count, the members and every list:in agree.
func TestConcurrentListAddsKeepTheCap(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	owner := signUp(t, s, "owner")
	l := createList(t, s, owner.ID, "crowded")
	users := signUpMany(t, s, "u", MaxListMembers+40)
	seedFollowing(t, s, owner.ID, userIDs(users)...)

	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	added := map[int64]bool{}
	full := 0
	for i, u := range users {
		for range 1 + i%2 { // every other user twice at once
			wg.Go(func() {
				<-start
				_, err := s.AddListMember(ctx, owner.ID, l.ID, u.Login)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					added[u.ID] = true
				case errors.Is(err, ErrListFull):
					full++
				default:
					t.Errorf("add %s: %v", u.Login, err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	got, err := s.List(ctx, l.Owner.ID, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	members := zsetIDs(t, s, s.keys.listMembers(l.ID))
	if got.Members != MaxListMembers || len(members) != MaxListMembers || len(added) != MaxListMembers {
		t.Fatalf("count %d, %d members, %d users added; want %d each", got.Members, len(members), len(added), MaxListMembers)
	}
	if full < 40 {
		t.Fatalf("%d refusals, want at least 40", full)
	}
	for _, u := range users {
		in := rdb.ZScore(ctx, s.keys.listsIn(u.ID), itoa(l.ID)).Err() == nil
		if in != added[u.ID] || in != slices.Contains(members, u.ID) {
			t.Fatalf("%s: in list:in %v, added %v, a member %v", u.Login, in, added[u.ID], slices.Contains(members, u.ID))
		}
	}
}

// The embedded store runs the list scripts and jobs too.
func TestListsOnEmbeddedStore(t *testing.T) {
	t.Parallel()
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	s := New(rdb, Options{Prefix: "e:", BcryptCost: 4, FanoutPassSize: 1, JobClaimIdle: 100 * time.Millisecond})
	ctx := ctxT(t)
	go s.NewWorker("embedded", slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)

	owner := signUp(t, s, "owner")
	author := signUp(t, s, "author")
	old := post(t, s, author.ID, "before the lists")
	lists := listsOf(t, s, owner.ID, []string{"first", "second", "third"}, "author")
	st := post(t, s, author.ID, "to three lists")
	holds := func(want ...int64) func() bool {
		return func() bool {
			for _, l := range lists {
				if !slices.Equal(listTimelineIDs(t, s, l.ID), want) {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, holds(old.ID, st.ID))
	if err := s.DeleteStatus(ctx, author.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, holds(old.ID))
	if _, err := s.RemoveListMember(ctx, owner.ID, lists[0].ID, "author"); err != nil {
		t.Fatal(err)
	}
	if got := listTimelineIDs(t, s, lists[0].ID); len(got) != 0 {
		t.Fatalf("list after removing its only member = %v", got)
	}
	if err := s.DeleteList(ctx, owner.ID, lists[1].ID); err != nil {
		t.Fatal(err)
	}
	if got := zsetIDs(t, s, s.keys.listsIn(author.ID)); !slices.Equal(got, []int64{lists[2].ID}) {
		t.Fatalf("list:in of the author = %v, want list 2", got)
	}
}

// A place in the owner's lists whose list's hash never came (CreateList
// cut short between its two steps) is given back by the owner's next read
// of their lists once it is a minute old; a younger one, whose hash may be
// on its way, stays.
func TestListNeverMadeGivesItsPlaceBack(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada := signUp(t, s, "ada")
	kept, err := s.CreateList(ctx, ada.ID, "kept")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	out := s.keys.listsOut(ada.ID)
	if err := rdb.ZAdd(ctx, out,
		redis.Z{Score: float64(now.Add(-2 * lostListAfter).UnixMilli()), Member: "900001"},
		redis.Z{Score: float64(now.UnixMilli()), Member: "900002"}).Err(); err != nil {
		t.Fatal(err)
	}
	lists, err := s.Lists(ctx, ada.ID)
	if err != nil || len(lists) != 1 || lists[0].ID != kept.ID {
		t.Fatalf("ada's lists: %+v, %v; want only %d", lists, err, kept.ID)
	}
	got, err := rdb.ZRange(ctx, out, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{itoa(kept.ID), "900002"}; !slices.Equal(got, want) {
		t.Errorf("ada's places: %v, want %v", got, want)
	}
}
