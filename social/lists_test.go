package social

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
func unchanged(tb testing.TB, s *Service, rdb *redis.Client, before map[string]string) {
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
	got, err := s.List(ctx, engines.ID)
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
	if got, _ := s.List(ctx, engines.ID); got != want {
		t.Fatalf("List after the rename = %+v, want %+v", got, want)
	}

	for _, l := range []List{engines, looms} {
		if err := s.DeleteList(ctx, ada.ID, l.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, l.ID); !errors.Is(err, ErrListNotFound) {
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
			u, _, err := s.SignUp(ctxT(tb), fmt.Sprintf("%s%03d", prefix, i), "Member", "password1")
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
	addMember(t, s, ada.ID, l.ID, "bob")
	post(t, s, bob.ID, "in ada's list")
	gone := createList(t, s, ada.ID, "deleted")
	if err := s.DeleteList(ctx, ada.ID, gone.ID); err != nil {
		t.Fatal(err)
	}

	// bob reads it.
	if got, err := s.List(ctx, l.ID); err != nil || got.ID != l.ID {
		t.Fatalf("bob reads the list: %+v, %v", got, err)
	}
	if users, err := s.ListMembers(ctx, l.ID, Page{Limit: 10}); err != nil || len(users) != 1 || users[0].ID != bob.ID {
		t.Fatalf("bob reads its members: %+v, %v", users, err)
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
		"list":     func(id int64) error { _, err := s.List(ctx, id); return err },
		"members":  func(id int64) error { _, err := s.ListMembers(ctx, id, Page{Limit: 10}); return err },
		"timeline": func(id int64) error { _, err := s.ListTimeline(ctx, id, Cursor{Limit: 10}); return err },
	} {
		for _, id := range []int64{gone.ID, gone.ID + 100, 0, -1} {
			if err := read(id); !errors.Is(err, ErrListNotFound) {
				t.Errorf("%s of list %d: %v, want ErrListNotFound", name, id, err)
			}
		}
	}
	if _, err := s.ListTimeline(ctx, l.ID, Cursor{}); err == nil {
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
	members, err := s.ListMembers(ctx, l.ID, Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := userIDs(members), []int64{owner.ID, ada.ID, bob.ID}; !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v (newest first)", got, want)
	}
	if got, _ := s.ListMembers(ctx, l.ID, Page{Limit: 1, Offset: 1}); !slices.Equal(userIDs(got), []int64{ada.ID}) {
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
	got, err := s.List(ctx, l.ID)
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
