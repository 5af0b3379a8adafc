package social

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/slots"

	"github.com/redis/go-redis/v9"
)

// These tests run the lists on one Redis and on the shared cluster alike.
// Sign-up and post do not run on a cluster yet, so they write users and
// statuses as those would, and queue list jobs by hand.

// onBoth runs test on one Redis and on the shared cluster, each with a
// Service of its own under a prefix of its own.
func onBoth(t *testing.T, opts Options, test func(t *testing.T, s *Service, rdb redis.UniversalClient)) {
	t.Helper()
	for _, backend := range []string{"redis", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var rdb redis.UniversalClient
			var prefix string
			if backend == "cluster" {
				rdb, prefix = redistest.ClusterClient(t)
			} else {
				rdb, prefix = redistest.Client(t)
			}
			o := opts
			o.Prefix, o.BcryptCost = prefix, 4
			test(t, New(rdb, o), rdb)
		})
	}
}

// seedUsers writes users first to first+n-1, logins <prefix>000 on, as
// sign-up would (less the password and session), several at a time.
func seedUsers(tb testing.TB, s *Service, rdb redis.UniversalClient, first int64, prefix string, n int) {
	tb.Helper()
	ctx := ctxT(tb)
	pipe := rdb.Pipeline()
	for i := range int64(n) {
		uid, login := first+i, fmt.Sprintf("%s%03d", prefix, i)
		pipe.HSet(ctx, s.keys.user(uid), "id", uid, "login", login, "name", "Name of "+login,
			"followers", 0, "following", 0, "posts", 0, "signup", 1)
		pipe.HSet(ctx, s.keys.loginIndex(), login, uid)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
}

// seedStatus writes status id by author as post would: its hash and its
// place in the author's profile.
func seedStatus(tb testing.TB, s *Service, rdb redis.UniversalClient, id, author int64) {
	tb.Helper()
	ctx := ctxT(tb)
	if err := rdb.HSet(ctx, s.keys.status(id), "id", id, "uid", author, "login", "a",
		"name", "A", "message", fmt.Sprint("status ", id), "posted", 1).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, s.keys.profile(author), redisZ(float64(id), itoa(id))).Err(); err != nil {
		tb.Fatal(err)
	}
}

// queueListJob queues a list job of kind for status sid by uid, as post
// and delete do, with the fields given besides.
func queueListJob(tb testing.TB, s *Service, rdb redis.UniversalClient, key, kind string, uid, sid int64, fields ...any) {
	tb.Helper()
	ctx := ctxT(tb)
	k := s.keys
	if err := rdb.XGroupCreateMkStream(ctx, k.jobs(), jobGroup, "0").Err(); err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		tb.Fatal(err)
	}
	entry, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.jobs(), Values: []any{"job", key}}).Result()
	if err != nil {
		tb.Fatal(err)
	}
	// Ready: the status it carries is written (or, for a list_delete job,
	// taken out), as its maker marks it once it is.
	args := append([]any{"kind", kind, "uid", uid, "sid", sid, "cursor", 0, "entry", entry, "ready", 1}, fields...)
	if err := rdb.HSet(ctx, key, args...).Err(); err != nil {
		tb.Fatal(err)
	}
}

// runListJob runs passes of the job at key until it finishes, as a worker
// would, and returns what each did.
func runListJob(tb testing.TB, s *Service, key string, pass func(context.Context, job) (passResult, error)) []passResult {
	tb.Helper()
	ctx := ctxT(tb)
	var steps []passResult
	for len(steps) < 1000 {
		j, ok, err := s.readJob(ctx, key)
		if err != nil {
			tb.Fatal(err)
		}
		if !ok {
			return steps
		}
		st, err := pass(ctx, j)
		if err != nil {
			tb.Fatal(err)
		}
		if wrote, err := s.advance(ctx, j, st); err != nil || !wrote {
			tb.Fatalf("advance job %s: %v, %v", key, wrote, err)
		}
		steps = append(steps, st)
	}
	tb.Fatal("the job did not finish in 1000 passes")
	return nil
}

// inList reports whether list:in of uid holds list id, and at what score.
func inList(tb testing.TB, s *Service, uid, id int64) (float64, bool) {
	tb.Helper()
	score, err := s.rdb.ZScore(ctxT(tb), s.keys.listsIn(uid), itoa(id)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false
	}
	if err != nil {
		tb.Fatal(err)
	}
	return score, true
}

// A list is made, renamed, filled (each member's newest statuses copied
// in), emptied (their statuses taken out) and deleted on either backend,
// its keys in its slot and its members' in theirs; the deletion leaves no
// key but the counters.
func TestListLifecycleOnBothBackends(t *testing.T) {
	t.Parallel()
	const size = 20
	onBoth(t, Options{HomeSize: size}, func(t *testing.T, s *Service, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		k := s.keys
		const owner, ada, bob = 101, 102, 103
		seedUser(t, s, rdb, owner, "owner", "password-owner")
		seedUser(t, s, rdb, ada, "ada", "password-ada")
		seedUser(t, s, rdb, bob, "bob", "password-bob")
		seedFollowing(t, s, owner, ada, bob)
		var byAda, byBob []int64
		for id := int64(1); id <= 40; id++ {
			if id%4 == 0 {
				seedStatus(t, s, rdb, id, bob)
				byBob = append(byBob, id)
			} else {
				seedStatus(t, s, rdb, id, ada)
				byAda = append(byAda, id)
			}
		}
		before := dumpKeys(t, s, rdb)

		l := createList(t, s, owner, "  Engines ")
		if l.Name != "Engines" || l.Owner.ID != owner || l.Owner.Login != "owner" || l.Members != 0 {
			t.Fatalf("created %+v", l)
		}
		if k.cluster && slots.Of(k.list(l.ID)) == slots.Of(k.listsIn(ada)) {
			t.Fatal("the test wants the list and ada in different slots")
		}
		if lists, err := s.Lists(ctx, owner); err != nil || len(lists) != 1 || lists[0] != l {
			t.Fatalf("Lists = %+v, %v; want %+v", lists, err, l)
		}
		renamed, err := s.RenameList(ctx, owner, l.ID, "Difference engines")
		if err != nil || renamed.Name != "Difference engines" {
			t.Fatalf("rename = %+v, %v", renamed, err)
		}
		if _, err := s.RenameList(ctx, bob, l.ID, "mine"); !errors.Is(err, ErrNotListOwner) {
			t.Fatalf("bob renames: %v, want ErrNotListOwner", err)
		}

		if got := addMember(t, s, owner, l.ID, "bob"); got.Members != 1 {
			t.Fatalf("after adding bob: %d members", got.Members)
		}
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, byBob) {
			t.Fatalf("after adding bob the list holds %v, want %v", got, byBob)
		}
		addMember(t, s, owner, l.ID, "ada")
		both := newestOf(size, byAda, byBob)
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, both) {
			t.Fatalf("after adding ada the list holds %v, want %v", got, both)
		}
		for _, uid := range []int64{ada, bob} {
			score, ok := inList(t, s, uid, l.ID)
			member, err := rdb.ZScore(ctx, k.listMembers(l.ID), itoa(uid)).Result()
			if !ok || err != nil || score != member {
				t.Errorf("list:in of %d holds the list at %v (%v), its members at %v (%v)", uid, score, ok, member, err)
			}
		}
		mid := dumpKeys(t, s, rdb)
		if got := addMember(t, s, owner, l.ID, "ADA"); got.Members != 2 {
			t.Fatalf("after adding ada again: %d members", got.Members)
		}
		unchanged(t, s, rdb, mid)
		page, err := s.ListTimeline(ctx, l.Owner.ID, l.ID, Cursor{Limit: 3})
		if err != nil || !slices.Equal(statusIDs(page.Statuses), reversed(both[len(both)-3:])) {
			t.Fatalf("timeline page = %v, %v", statusIDs(page.Statuses), err)
		}

		removed, err := s.RemoveListMember(ctx, owner, l.ID, "ada")
		if err != nil || removed.Members != 1 {
			t.Fatalf("remove ada = %+v, %v", removed, err)
		}
		want := slices.DeleteFunc(slices.Clone(both), func(id int64) bool { return slices.Contains(byAda, id) })
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, want) {
			t.Fatalf("after removing ada the list holds %v, want %v", got, want)
		}
		if _, ok := inList(t, s, ada, l.ID); ok {
			t.Error("ada's list:in still holds the list")
		}
		mid = dumpKeys(t, s, rdb)
		if _, err := s.RemoveListMember(ctx, owner, l.ID, "ada"); err != nil {
			t.Fatal(err)
		}
		unchanged(t, s, rdb, mid)

		if err := s.DeleteList(ctx, bob, l.ID); !errors.Is(err, ErrNotListOwner) {
			t.Fatalf("bob deletes: %v, want ErrNotListOwner", err)
		}
		if err := s.DeleteList(ctx, owner, l.ID); err != nil {
			t.Fatal(err)
		}
		for name, read := range map[string]func() error{
			"list":     func() error { _, err := s.List(ctx, l.Owner.ID, l.ID); return err },
			"members":  func() error { _, err := s.ListMembers(ctx, l.Owner.ID, l.ID, Page{Limit: 10}); return err },
			"timeline": func() error { _, err := s.ListTimeline(ctx, l.Owner.ID, l.ID, Cursor{Limit: 10}); return err },
			"delete":   func() error { return s.DeleteList(ctx, owner, l.ID) },
		} {
			if err := read(); !errors.Is(err, ErrListNotFound) {
				t.Errorf("%s of the deleted list: %v, want ErrListNotFound", name, err)
			}
		}
		after := dumpKeys(t, s, rdb)
		for _, key := range []string{k.listSeq(), k.listMemberSeq()} {
			delete(after, key)
		}
		if !maps.Equal(before, after) {
			t.Fatalf("keys before %v, after %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
		}
	})
}

// Racing creates never take an owner past MaxListsPerUser, and racing adds
// (of distinct users, and of the same user twice) never take a list past
// MaxListMembers: the caps are kept by the scripts in one slot, the
// owner's and the list's.
func TestListCapsUnderConcurrencyOnBothBackends(t *testing.T) {
	t.Parallel()
	onBoth(t, Options{}, func(t *testing.T, s *Service, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		const owner = 1
		const extra = 20
		seedUsers(t, s, rdb, owner, "owner", 1)
		seedUsers(t, s, rdb, 1000, "u", MaxListMembers+extra)
		var everyone []int64
		for i := range MaxListMembers + extra {
			everyone = append(everyone, int64(1000+i))
		}
		seedFollowing(t, s, owner, everyone...)

		var wg sync.WaitGroup
		var mu sync.Mutex
		var made []List
		tooMany := 0
		for range MaxListsPerUser + extra {
			wg.Go(func() {
				l, err := s.CreateList(ctx, owner, "racing")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					made = append(made, l)
				case errors.Is(err, ErrTooManyLists):
					tooMany++
				default:
					t.Errorf("create: %v", err)
				}
			})
		}
		wg.Wait()
		lists, err := s.Lists(ctx, owner)
		if err != nil || len(made) != MaxListsPerUser || tooMany != extra || len(lists) != MaxListsPerUser {
			t.Fatalf("%d made, %d refused, %d listed (%v); want %d, %d, %d",
				len(made), tooMany, len(lists), err, MaxListsPerUser, extra, MaxListsPerUser)
		}

		l := made[0]
		added := map[int64]bool{}
		full := 0
		for i := range MaxListMembers + extra {
			uid, login := int64(1000+i), fmt.Sprintf("u%03d", i)
			for range 1 + i%2 {
				wg.Go(func() {
					_, err := s.AddListMember(ctx, owner, l.ID, login)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						added[uid] = true
					case errors.Is(err, ErrListFull):
						full++
					default:
						t.Errorf("add %s: %v", login, err)
					}
				})
			}
		}
		wg.Wait()
		got, err := s.List(ctx, l.Owner.ID, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		members := zsetIDs(t, s, s.keys.listMembers(l.ID))
		if got.Members != MaxListMembers || len(members) != MaxListMembers || len(added) != MaxListMembers || full < extra {
			t.Fatalf("count %d, %d members, %d added, %d refused; want %d, %d, %d, at least %d",
				got.Members, len(members), len(added), full, MaxListMembers, MaxListMembers, MaxListMembers, extra)
		}
		for i := range MaxListMembers + extra {
			uid := int64(1000 + i)
			_, in := inList(t, s, uid, l.ID)
			if in != added[uid] || in != slices.Contains(members, uid) {
				t.Fatalf("user %d: in list:in %v, added %v, a member %v", uid, in, added[uid], slices.Contains(members, uid))
			}
		}
	})
}

// A list_post job reaches every list that held the author when its first
// pass read list:member:seq, over as many passes as they need, and a list
// that takes the author in later gets the status from its backfill; the
// list_delete job takes it out of all of them. Both move on only by
// advance, and leave no job behind.
func TestListPassesOnBothBackends(t *testing.T) {
	t.Parallel()
	const passSize = 3
	onBoth(t, Options{FanoutPassSize: passSize}, func(t *testing.T, s *Service, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		k := s.keys
		const author, owners = 1, 100
		const n = 3*passSize + 2
		seedUsers(t, s, rdb, author, "author", 1)
		seedUsers(t, s, rdb, owners, "o", n)
		var lists []List
		for i := range n {
			seedFollowing(t, s, int64(owners+i), author)
			l := createList(t, s, int64(owners+i), "holds the author")
			addMember(t, s, l.Owner.ID, l.ID, "author000")
			lists = append(lists, l)
		}
		late := createList(t, s, owners, "late")

		const sid = 500
		seedStatus(t, s, rdb, sid, author)
		key := k.job(listPostJobID(sid))
		queueListJob(t, s, rdb, key, "list_post", author, sid)
		// The first pass reads until; the late membership comes after it.
		j, _, err := s.readJob(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		first, err := s.listPostPass(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		if first.finished || first.reached != passSize || first.next.until == "" || first.next.cursor == 0 {
			t.Fatalf("first pass = %+v", first)
		}
		if _, err := s.advance(ctx, j, first); err != nil {
			t.Fatal(err)
		}
		addMember(t, s, owners, late.ID, "author000")
		steps := runListJob(t, s, key, s.listPostPass)
		var reached int64
		for _, st := range steps {
			reached += st.reached
		}
		if want := int64(n - passSize); reached != want || len(steps) != 3 {
			t.Errorf("the passes after the first reached %d lists in %d passes, want %d in 3", reached, len(steps), want)
		}
		for _, l := range append(slices.Clone(lists), late) {
			if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, []int64{sid}) {
				t.Errorf("list %d holds %v, want the status", l.ID, got)
			}
		}

		// The status is deleted: its hash goes, then its cleanup job runs.
		rdb.Del(ctx, k.status(sid))
		cleanup := k.job(listDeleteJobID(sid))
		queueListJob(t, s, rdb, cleanup, "list_delete", author, sid)
		// 12 lists: four full pages, and an empty one that finds none left.
		if steps := runListJob(t, s, cleanup, s.listDeletePass); len(steps) != 5 {
			t.Errorf("cleanup ran %d passes, want 5", len(steps))
		}
		for _, l := range append(slices.Clone(lists), late) {
			if got := listTimelineIDs(t, s, l.ID); len(got) != 0 {
				t.Errorf("list %d holds %v after the cleanup", l.ID, got)
			}
		}
		for _, key := range []string{key, cleanup} {
			if rdb.Exists(ctx, key).Val() != 0 {
				t.Errorf("%s is left after its job", key)
			}
		}
		if n := jobsLeft(t, ctx, rdb, k); n != 0 {
			t.Errorf("job stream holds %d entries after the jobs, want 0", n)
		}

		// A job whose status is gone before its first pass reaches nobody.
		queueListJob(t, s, rdb, key, "list_post", author, sid)
		if steps := runListJob(t, s, key, s.listPostPass); len(steps) != 1 || steps[0].reached != 0 {
			t.Errorf("the job of a deleted status ran %+v, want one pass reaching nobody", steps)
		}
	})
}

// A list_post pass checks what it wrote: a list deleted since its list:in
// was paged loses the timeline the pass made again, a list the author left
// loses the status, and both lose their stale place in list:in; a list
// the author left and joined again keeps the status and its place.
func TestListPostPassTakesBackWhatNoLongerStands(t *testing.T) {
	t.Parallel()
	onBoth(t, Options{}, func(t *testing.T, s *Service, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		k := s.keys
		const author, owner = 1, 2
		seedUsers(t, s, rdb, author, "author", 1)
		seedUsers(t, s, rdb, owner, "owner", 1)
		seedFollowing(t, s, owner, author)
		lists := make([]List, 4)
		for i := range lists {
			lists[i] = createList(t, s, owner, fmt.Sprint("list ", i))
			addMember(t, s, owner, lists[i].ID, "author000")
		}
		kept, deleted, left, rejoined := lists[0], lists[1], lists[2], lists[3]
		// As a pass that paged list:in before these changes sees it: the
		// changes ran, then list:in is put back as it was.
		stale := map[int64]float64{}
		for _, l := range lists[1:] {
			stale[l.ID], _ = inList(t, s, author, l.ID)
		}
		if err := s.DeleteList(ctx, owner, deleted.ID); err != nil {
			t.Fatal(err)
		}
		for _, l := range []List{left, rejoined} {
			if _, err := s.RemoveListMember(ctx, owner, l.ID, "author000"); err != nil {
				t.Fatal(err)
			}
		}
		addMember(t, s, owner, rejoined.ID, "author000")
		for id, score := range stale {
			rdb.ZAdd(ctx, k.listsIn(author), redisZ(score, itoa(id)))
		}

		const sid = 7
		seedStatus(t, s, rdb, sid, author)
		key := k.job(listPostJobID(sid))
		queueListJob(t, s, rdb, key, "list_post", author, sid)
		runListJob(t, s, key, s.listPostPass)
		for _, l := range []List{kept, rejoined} {
			if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, []int64{sid}) {
				t.Errorf("list %d holds %v, want the status", l.ID, got)
			}
		}
		if got := listTimelineIDs(t, s, left.ID); len(got) != 0 {
			t.Errorf("the list the author left holds %v", got)
		}
		if n := rdb.Exists(ctx, k.listStatuses(deleted.ID)).Val(); n != 0 {
			t.Error("the deleted list's timeline was made again")
		}
		for _, l := range []List{deleted, left} {
			if _, ok := inList(t, s, author, l.ID); ok {
				t.Errorf("list:in still holds list %d", l.ID)
			}
		}
		// The pass read the rejoined list at its old score, and found the
		// author a member: it stays.
		if _, ok := inList(t, s, author, rejoined.ID); !ok {
			t.Error("list:in lost the list the author rejoined")
		}
	})
}

// A change cut short after any of its steps is finished by its retry: the
// list's script ran, the member's or owner's side did not.
func TestListChangesFinishedByRetry(t *testing.T) {
	t.Parallel()
	onBoth(t, Options{}, func(t *testing.T, s *Service, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		k := s.keys
		const owner, ada = 1, 2
		seedUsers(t, s, rdb, owner, "owner", 1)
		seedUsers(t, s, rdb, ada, "ada", 1)
		seedFollowing(t, s, owner, ada)
		for id := int64(1); id <= 5; id++ {
			seedStatus(t, s, rdb, id, ada)
		}
		l := createList(t, s, owner, "people")

		// Create: the owner's place is taken, the hash never comes (taken
		// now, so that Lists below leaves the place for a while).
		if err := listCreateScript.Run(ctx, rdb, []string{k.user(owner), k.listsOut(owner)}, 9999, time.Now().UnixMilli(), MaxListsPerUser).Err(); err != nil {
			t.Fatal(err)
		}
		if lists, err := s.Lists(ctx, owner); err != nil || len(lists) != 1 || lists[0].ID != l.ID {
			t.Errorf("Lists after a create cut short = %+v, %v; want the one list", lists, err)
		}
		if _, err := s.List(ctx, owner, 9999); !errors.Is(err, ErrListNotFound) {
			t.Errorf("List of a create cut short: %v, want ErrListNotFound", err)
		}

		// Add: the membership is made, list:in and the backfill are not.
		seq := rdb.Incr(ctx, k.listMemberSeq()).Val()
		if err := listAddScript.Run(ctx, rdb, []string{k.list(l.ID), k.listMembers(l.ID)},
			owner, ada, 1, MaxListMembers, seq, 1).Err(); err != nil {
			t.Fatal(err)
		}
		if got := addMember(t, s, owner, l.ID, "ada000"); got.Members != 1 {
			t.Fatalf("retried add: %d members, want 1", got.Members)
		}
		if score, ok := inList(t, s, ada, l.ID); !ok || score != float64(seq) {
			t.Errorf("list:in after the retried add holds the list at %v (%v), want %d", score, ok, seq)
		}
		if got := listTimelineIDs(t, s, l.ID); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
			t.Errorf("list after the retried add holds %v", got)
		}

		// Remove: the membership goes, list:in and the timeline keep theirs.
		if err := listRemoveScript.Run(ctx, rdb, []string{k.list(l.ID), k.listMembers(l.ID)}, owner, ada).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := s.RemoveListMember(ctx, owner, l.ID, "ada000"); err != nil || got.Members != 0 {
			t.Fatalf("retried remove = %+v, %v", got, err)
		}
		if _, ok := inList(t, s, ada, l.ID); ok {
			t.Error("list:in still holds the list after the retried remove")
		}
		if got := listTimelineIDs(t, s, l.ID); len(got) != 0 {
			t.Errorf("list after the retried remove holds %v", got)
		}

		// Delete: the list is marked, nothing else. It is gone to every
		// read and change, and the retry deletes everything.
		addMember(t, s, owner, l.ID, "ada000")
		if err := listDeleteScript.Run(ctx, rdb, []string{k.list(l.ID), k.listMembers(l.ID)}, owner).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, l.Owner.ID, l.ID); !errors.Is(err, ErrListNotFound) {
			t.Errorf("List of a list being deleted: %v, want ErrListNotFound", err)
		}
		if lists, err := s.Lists(ctx, owner); err != nil || len(lists) != 0 {
			t.Errorf("Lists with a list being deleted = %+v, %v", lists, err)
		}
		if _, err := s.AddListMember(ctx, owner, l.ID, "ada000"); !errors.Is(err, ErrListNotFound) {
			t.Errorf("adding to a list being deleted: %v, want ErrListNotFound", err)
		}
		if err := s.DeleteList(ctx, owner, l.ID); err != nil {
			t.Fatalf("retried delete: %v", err)
		}
		for _, key := range []string{k.list(l.ID), k.listMembers(l.ID), k.listStatuses(l.ID)} {
			if rdb.Exists(ctx, key).Val() != 0 {
				t.Errorf("%s is left after the retried delete", key)
			}
		}
		if _, ok := inList(t, s, ada, l.ID); ok {
			t.Error("list:in still holds the list after the retried delete")
		}
		if ids := zsetIDs(t, s, k.listsOut(owner)); !slices.Equal(ids, []int64{9999}) {
			t.Errorf("list:out after the retried delete = %v, want only the create cut short", ids)
		}
	})
}

// settleListIn writes list:in over with the membership's score when an
// older one is there, and takes out only a score whose membership ended.
func TestSettleListIn(t *testing.T) {
	t.Parallel()
	onBoth(t, Options{}, func(t *testing.T, s *Service, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		k := s.keys
		const owner, ada = 1, 2
		seedUsers(t, s, rdb, owner, "owner", 1)
		seedUsers(t, s, rdb, ada, "ada", 1)
		seedFollowing(t, s, owner, ada)
		l := createList(t, s, owner, "people")
		addMember(t, s, owner, l.ID, "ada000")
		current, _ := inList(t, s, ada, l.ID)

		// An add that took its score before a removal and a new add writes
		// the old score last.
		rdb.ZAdd(ctx, k.listsIn(ada), redisZ(current-100, itoa(l.ID)))
		if err := s.settleListIn(ctx, l.ID, ada, int64(current-100)); err != nil {
			t.Fatal(err)
		}
		if got, ok := inList(t, s, ada, l.ID); !ok || got != current {
			t.Errorf("list:in after settling = %v (%v), want %v", got, ok, current)
		}
		// The leave script takes out only the score it names.
		if n, err := listLeaveScript.Run(ctx, rdb, []string{k.listsIn(ada)}, l.ID, int64(current-100)).Int(); err != nil || n != 0 {
			t.Errorf("leave of an old score = %d, %v; want 0", n, err)
		}
		if n, err := listLeaveScript.Run(ctx, rdb, []string{k.listsIn(ada)}, l.ID, int64(current)).Int(); err != nil || n != 1 {
			t.Errorf("leave of the score held = %d, %v; want 1", n, err)
		}
		// A membership that lasts is put back; one that ended is not.
		if err := s.settleListIn(ctx, l.ID, ada, 0); err != nil {
			t.Fatal(err)
		}
		if got, ok := inList(t, s, ada, l.ID); !ok || got != current {
			t.Errorf("list:in after settling a lost entry = %v (%v), want %v", got, ok, current)
		}
		if err := rdb.ZRem(ctx, k.listMembers(l.ID), itoa(ada)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.settleListIn(ctx, l.ID, ada, 0); err != nil {
			t.Fatal(err)
		}
		if _, ok := inList(t, s, ada, l.ID); ok {
			t.Error("list:in holds the list after its membership ended")
		}
	})
}
