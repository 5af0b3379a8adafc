package social

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// A master killed in the middle of a fan-out, the one that holds the job,
// loses nothing and duplicates nothing: once its replica takes over, the
// worker carries the job on from where its last pass left it, every
// follower's home timeline ends with the status, and each connected
// follower gets its frame once.
func TestFanoutSurvivesFailover(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 1)
	// As chorus's own client, the slot map read again every 2 s, so the
	// failover is seen without waiting for a redirect.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ClusterStateReloadInterval: 2 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	const followers, passSize = 600, 20
	s := New(rdb, Options{
		Prefix: redistest.Prefix(), BcryptCost: 4, FanoutPassSize: passSize,
		JobClaimIdle: time.Second, ConnectedKey: "",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := s.keys
	const author = 1
	seedUser(t, s, rdb, author, "author", "password-author")
	first := int64(1000)
	pipe := rdb.Pipeline()
	for i := range int64(followers) {
		pipe.ZAdd(ctx, k.followers(author), redis.Z{Score: float64(i + 1), Member: first + i})
		pipe.ZAdd(ctx, k.following(first+i), redis.Z{Score: float64(i + 1), Member: author})
	}
	pipe.Set(ctx, k.followSeq(), followers, 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	// The victim is the master of the job's slot.
	victim, err := rdb.MasterForKey(ctx, k.jobs())
	if err != nil {
		t.Fatal(err)
	}
	victimAddr := victim.Options().Addr

	// Listen to followers whose channels are on the other masters: the
	// victim's subscribers lose their connection with it.
	var heard []string
	for uid := first; uid < first+followers && len(heard) < 30; uid++ {
		m, err := rdb.MasterForKey(ctx, s.bus.UserChannel(uid))
		if err != nil {
			t.Fatal(err)
		}
		if m.Options().Addr != victimAddr {
			heard = append(heard, s.bus.UserChannel(uid))
		}
	}
	sub := listen(t, s, rdb, heard...)

	var passes atomic.Int64
	killed := make(chan struct{})
	w := s.NewWorker("survivor", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.afterPass = func() {
		if passes.Add(1) == 5 {
			for _, n := range cluster.Nodes {
				if n.Addr == victimAddr {
					n.Stop()
				}
			}
			close(killed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(wctx)
	}()
	defer func() {
		stop()
		<-done
	}()

	st := post(t, s, author, "through a failover")
	select {
	case <-killed:
	case <-time.After(20 * time.Second):
		t.Fatal("the fan-out never reached its fifth pass")
	}
	// The job is gone once its last pass ran on the promoted replica.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := rdb.Exists(ctx, k.job(postJobID(st.ID))).Result()
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the post job is still there 30 s after the failover (err %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pipe = rdb.Pipeline()
	scores := make([]*redis.FloatCmd, followers)
	for i := range int64(followers) {
		scores[i] = pipe.ZScore(ctx, k.home(first+i), itoa(st.ID))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	missing := 0
	for _, c := range scores {
		if c.Err() != nil {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d followers lack the status after the failover", missing, followers)
	}
	events := eventsSoFar(t, sub)
	for _, ch := range heard {
		got := 0
		for _, ev := range events[ch] {
			if ev.Status != nil && ev.Status.ID == st.ID {
				got++
			}
		}
		if got != 1 {
			raw, _ := json.Marshal(events[ch])
			t.Errorf("%s got the status %d times, want once: %s", ch, got, raw)
		}
	}
	t.Logf("%d passes after the inline one; master %s killed after the fifth", passes.Load(), victimAddr)
}
