package social

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"chorus/protocol"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The embedded store runs the same scripts: a whole life of statuses on it.
func TestScriptsOnEmbeddedStore(t *testing.T) {
	t.Parallel()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	s := New(rdb, Options{Prefix: "e:", BcryptCost: 4, FanoutPassSize: 2, RefillBelow: 5, JobClaimIdle: 100 * time.Millisecond})
	ctx := ctxT(t)
	go s.NewWorker("embedded", slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)

	author := signUp(t, s, "author")
	if _, _, err := s.SignIn(ctx, "author", "not-the-password", "192.0.2.1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("sign in with a wrong password: %v", err)
	}
	if _, _, err := s.SignIn(ctx, "author", "password-author", "192.0.2.1"); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	var fans []User
	for i := range 5 {
		f := signUp(t, s, fmt.Sprintf("fan%d", i))
		if _, _, err := s.Follow(ctx, f.ID, "author"); err != nil {
			t.Fatal(err)
		}
		fans = append(fans, f)
	}
	st, err := s.Post(ctx, author.ID, "on the embedded store")
	if err != nil {
		t.Fatal(err)
	}
	homeIDs := func(uid int64) []int64 {
		page, err := s.HomeTimeline(ctx, uid, Cursor{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, st := range page.Statuses {
			ids = append(ids, st.ID)
		}
		return ids
	}
	waitFor(t, func() bool {
		for _, f := range fans {
			if h := homeIDs(f.ID); len(h) != 1 || h[0] != st.ID {
				return false
			}
		}
		return true
	})
	if err := s.DeleteStatus(ctx, author.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		for _, f := range fans {
			if n, _ := rdb.ZCard(ctx, s.keys.home(f.ID)).Result(); n != 0 {
				return false
			}
		}
		return true
	})
	// Unfollow leaves fan0's home short: refilled from the other followee.
	other := signUp(t, s, "other")
	kept, err := s.Post(ctx, other.ID, "still here")
	if err != nil {
		t.Fatal(err)
	}
	s.Follow(ctx, fans[0].ID, "other")
	s.Post(ctx, author.ID, "soon gone from fan0")
	if _, err := s.Unfollow(ctx, fans[0].ID, "author"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { h := homeIDs(fans[0].ID); return len(h) == 1 && h[0] == kept.ID })
	waitFor(t, func() bool { return jobsLeft(t, ctx, rdb, s.keys) == 0 })

	// A post job whose maker died before marking it ready: the worker
	// adopts it once JobClaimIdle has gone, and runs it to its end.
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: kept})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.queueJob(ctx, rdb, job{kind: jobPost, uid: other.ID, sid: kept.ID, payload: string(payload)}, inputsPending).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return jobsLeft(t, ctx, rdb, s.keys) == 0 && rdb.Exists(ctx, s.keys.job(postJobID(kept.ID))).Val() == 0
	})
	if h := homeIDs(fans[0].ID); len(h) != 1 || h[0] != kept.ID {
		t.Fatalf("fan0's home after the redone post = %v, want [%d]", h, kept.ID)
	}
}

func waitFor(tb testing.TB, ok func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
