package social

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// Deleting a status takes it at once out of the author's timelines and the
// global one, and the cleanup job then takes it out of every follower's
// home timeline, over several passes, telling each follower once. The
// author's other statuses stay everywhere.
func TestDeleteStatusCleansEveryTimeline(t *testing.T) {
	t.Parallel()
	const passSize, n = 3, 10 // four passes
	s, rdb := newService(t, Options{FanoutPassSize: passSize})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", n)
	startWorker(t, s, "w")
	kept := post(t, s, author.ID, "kept")
	gone := post(t, s, author.ID, "gone")
	allHomes := func(want ...int64) func() bool {
		return func() bool {
			for _, f := range followers {
				if !slices.Equal(homeIDs(t, s, f.ID), want) {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, allHomes(kept.ID, gone.ID))
	channels := []string{s.UserChannel(author.ID)}
	for _, f := range followers {
		channels = append(channels, s.UserChannel(f.ID))
	}
	sub := listen(t, s, rdb, channels...)

	if err := s.DeleteStatus(ctx, author.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{s.keys.profile(author.ID), s.keys.home(author.ID), s.keys.global()} {
		if got, want := zsetIDs(t, s, key), []int64{kept.ID}; !slices.Equal(got, want) {
			t.Errorf("%s = %v when the delete returns, want %v", key, got, want)
		}
	}
	if _, err := s.Status(ctx, gone.ID); !errors.Is(err, ErrStatusNotFound) {
		t.Errorf("reading the deleted status: %v, want ErrStatusNotFound", err)
	}
	if u, err := s.UserByID(ctx, author.ID); err != nil || u.Posts != 1 {
		t.Errorf("author's posts = %d (%v), want 1", u.Posts, err)
	}

	waitFor(t, allHomes(kept.ID))
	waitFor(t, func() bool { return jobsLeft(t, ctx, rdb, s.keys) == 0 })
	if rdb.Exists(ctx, s.keys.job(deleteJobID(gone.ID))).Val() != 0 {
		t.Error("the cleanup job hash is left after the job")
	}
	events := eventsSoFar(t, sub)
	for _, u := range append(slices.Clone(followers), author) {
		got := events[s.UserChannel(u.ID)]
		if len(got) != 1 || got[0].Type != protocol.TypeStatusDeleted || got[0].ID != gone.ID {
			t.Errorf("%s was told %+v, want one %s of %d", u.Login, got, protocol.TypeStatusDeleted, gone.ID)
		}
	}
}

// A delete by someone other than the author, or of a status that does not
// exist (any more), is refused and changes nothing: no key, no job, no
// event.
func TestDeleteStatusRefusals(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	other := signUp(t, s, "other")
	followers := []User{other}
	for i := range 3 {
		f := signUp(t, s, fmt.Sprintf("fan%d", i))
		follow(t, s, f.ID, "author")
		followers = append(followers, f)
	}
	follow(t, s, other.ID, "author")
	st := post(t, s, author.ID, "mine")
	runJob(t, s, s.keys.job(postJobID(st.ID)))
	post(t, s, other.ID, "other's")
	deleted := post(t, s, author.ID, "deleted already")
	runJob(t, s, s.keys.job(postJobID(deleted.ID)))
	if err := s.DeleteStatus(ctx, author.ID, deleted.ID); err != nil {
		t.Fatal(err)
	}
	runJob(t, s, s.keys.job(deleteJobID(deleted.ID)))
	channels := []string{s.UserChannel(author.ID)}
	for _, f := range followers {
		channels = append(channels, s.UserChannel(f.ID))
	}
	sub := listen(t, s, rdb, channels...)

	before := dumpKeys(t, s, rdb)
	if !slices.Contains(zsetIDs(t, s, s.keys.home(followers[1].ID)), st.ID) {
		t.Fatal("the status did not reach a follower")
	}
	for _, tc := range []struct {
		name    string
		uid, id int64
		want    error
	}{
		{"someone else's status", other.ID, st.ID, ErrNotOwner},
		{"unknown status", author.ID, deleted.ID + 1000, ErrStatusNotFound},
		{"deleted already", author.ID, deleted.ID, ErrStatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.DeleteStatus(ctx, tc.uid, tc.id); !errors.Is(err, tc.want) {
				t.Fatalf("delete: %v, want %v", err, tc.want)
			}
			after := dumpKeys(t, s, rdb)
			for _, key := range slices.Sorted(maps.Keys(before)) {
				if after[key] != before[key] {
					t.Errorf("%s changed", key)
				}
			}
			for _, key := range slices.Sorted(maps.Keys(after)) {
				if _, ok := before[key]; !ok {
					t.Errorf("%s appeared", key)
				}
			}
			if events := eventsSoFar(t, sub); len(events) != 0 {
				t.Errorf("events published: %v", events)
			}
		})
	}
}

// dumpKeys returns the serialized value of every key under the service's
// prefix, to tell whether anything changed.
func dumpKeys(tb testing.TB, s *Service, rdb redis.UniversalClient) map[string]string {
	tb.Helper()
	ctx := ctxT(tb)
	out := map[string]string{}
	for _, key := range scanKeys(tb, s, rdb) {
		v, err := rdb.Dump(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			tb.Fatal(err)
		}
		out[key] = v
	}
	return out
}
