package social

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// A worker removes the consumers of dead instances, those idle past
// ConsumerIdle with nothing pending, and keeps the others and itself; it
// does so at most once a minute.
func TestWorkerRemovesDeadConsumers(t *testing.T) {
	t.Parallel()
	const idle = 50 * time.Millisecond
	s, rdb := newService(t, Options{ConsumerIdle: idle, JobClaimIdle: time.Hour})
	ctx := ctxT(t)
	stream := s.keys.jobs()
	if err := rdb.XGroupCreateMkStream(ctx, stream, jobGroup, "$").Err(); err != nil {
		t.Fatal(err)
	}
	// "dead" read nothing; "holding" read a job it never finished; "me" is
	// the worker's own name.
	for _, c := range []string{"dead", "me"} {
		if err := rdb.XGroupCreateConsumer(ctx, stream, jobGroup, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"job", s.keys.job("refill:1")}})
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: jobGroup, Consumer: "holding", Streams: []string{stream, ">"}, Count: 1,
	}).Err(); err != nil {
		t.Fatal(err)
	}
	consumers := func() []string {
		t.Helper()
		cs, err := rdb.XInfoConsumers(ctx, stream, jobGroup).Result()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		slices.Sort(names)
		return names
	}
	time.Sleep(2 * idle) // all three are idle longer than ConsumerIdle

	w := s.NewWorker("me", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.reapConsumers(ctx)
	if got, want := consumers(), []string{"holding", "me"}; !slices.Equal(got, want) {
		t.Fatalf("consumers after removing the dead = %v, want %v", got, want)
	}

	// Another dead one, within the minute: left for the next round.
	rdb.XGroupCreateConsumer(ctx, stream, jobGroup, "dead-later")
	time.Sleep(2 * idle)
	w.reapConsumers(ctx)
	if got, want := consumers(), []string{"dead-later", "holding", "me"}; !slices.Equal(got, want) {
		t.Fatalf("consumers after a second round within a minute = %v, want %v", got, want)
	}
	w.lastReap = w.lastReap.Add(-consumerReapEvery)
	w.reapConsumers(ctx)
	if got, want := consumers(), []string{"holding", "me"}; !slices.Equal(got, want) {
		t.Fatalf("consumers a minute later = %v, want %v", got, want)
	}
}

// A worker whose job stream and group were deleted under it makes them
// again and goes on with the jobs that come after.
func TestWorkerRecreatesItsGroup(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{FanoutPassSize: 2})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	followers := followersOf(t, s, author.Login, 5)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.NewWorker("w", slog.New(slog.NewTextHandler(io.Discard, nil))).Run(wctx)
	reachedAll := func(id int64) func() bool {
		return func() bool {
			for _, f := range followers {
				if rdb.ZScore(ctx, s.keys.home(f.ID), itoa(id)).Err() != nil {
					return false
				}
			}
			return true
		}
	}
	first, err := s.Post(ctx, author.ID, "before")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, reachedAll(first.ID))

	if err := rdb.Del(ctx, s.keys.jobs()).Err(); err != nil {
		t.Fatal(err)
	}
	second, err := s.Post(ctx, author.ID, "after the stream was deleted")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, reachedAll(second.ID))
}

// A status reaches every follower's home timeline over as many passes as
// the followers need, each of them exactly once: no follower is skipped or
// reached twice where one pass ends and the next begins. One who follows
// once the status is written gets it from the follow's backfill: the job
// reaches them only where its later passes have yet to read the follow
// sequence (the post's own page read it before the status was written),
// and then adds nothing and sends no frame. The job is gone at the end.
func TestPostFanoutPasses(t *testing.T) {
	t.Parallel()
	const passSize = 4
	for _, n := range []int{passSize - 1, 3 * passSize, 3*passSize + 2} {
		t.Run(fmt.Sprintf("followers=%d", n), func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{FanoutPassSize: passSize})
			ctx := ctxT(t)
			author := signUp(t, s, "author")
			followers := followersOf(t, s, "author", n)
			late := signUp(t, s, "late")
			channels := []string{s.UserChannel(author.ID), s.UserChannel(late.ID)}
			for _, f := range followers {
				channels = append(channels, s.UserChannel(f.ID))
			}
			sub := listen(t, s, rdb, channels...)

			st := post(t, s, author.ID, "to every follower")
			job := s.keys.job(postJobID(st.ID))

			// Post ran the first pass: it reached the oldest follows, up
			// to a pass, and left the cursor at the last of them.
			first := min(n, passSize)
			for i, f := range followers {
				got := slices.Contains(homeIDs(t, s, f.ID), st.ID)
				if want := i < first; got != want {
					t.Fatalf("after the first pass, follower %d has the status: %v, want %v", i, got, want)
				}
			}
			if n >= passSize {
				cursor, err := rdb.HGet(ctx, job, "cursor").Result()
				if err != nil {
					t.Fatal(err)
				}
				score := rdb.ZScore(ctx, s.keys.followers(author.ID), itoa(followers[passSize-1].ID)).Val()
				if want := fmt.Sprint(score); cursor != want {
					t.Fatalf("cursor after the first pass = %s, want %s (the follow of the last follower reached)", cursor, want)
				}
			}

			follow(t, s, late.ID, "author")
			passes := runJob(t, s, job)
			var reached int64
			for i, p := range passes {
				reached += p.reached
				last := i == len(passes)-1
				if p.reached > passSize || (!last && p.reached != passSize) {
					t.Errorf("pass %d of %d reached %d followers (pass size %d)", i+1, len(passes), p.reached, passSize)
				}
			}
			wantReached := int64(n - first)
			if n >= passSize {
				wantReached++ // late, behind the sequence the second pass reads
			}
			if reached != wantReached {
				t.Errorf("the passes after the first reached %d followers, want %d", reached, wantReached)
			}
			if rdb.Exists(ctx, job).Val() != 0 {
				t.Error("the job hash is left after its last pass")
			}
			if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
				t.Errorf("job stream holds %d entries after the job, want 0", n)
			}

			want := []int64{st.ID}
			for _, f := range append(slices.Clone(followers), late) {
				if got := homeIDs(t, s, f.ID); !slices.Equal(got, want) {
					t.Errorf("home of %s = %v, want %v", f.Login, got, want)
				}
			}
			for _, key := range []string{s.keys.home(author.ID), s.keys.profile(author.ID), s.keys.global()} {
				if got := zsetIDs(t, s, key); !slices.Equal(got, want) {
					t.Errorf("%s = %v, want %v", key, got, want)
				}
			}

			events := eventsSoFar(t, sub)
			for _, f := range append(slices.Clone(followers), author) {
				got := ofType(events[s.UserChannel(f.ID)], protocol.TypeStatus)
				if got := eventIDs(got); !slices.Equal(got, want) {
					t.Errorf("%s was told of statuses %v, want %v", f.Login, got, want)
				}
			}
			if got := events[s.UserChannel(late.ID)]; len(got) != 0 {
				t.Errorf("the job told one who followed after the post of %v", eventIDs(got))
			}
		})
	}
}
