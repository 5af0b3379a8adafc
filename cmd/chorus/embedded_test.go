package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"

	"github.com/redis/go-redis/v9"
)

func startEmbeddedT(tb testing.TB) (*embeddedStore, *redis.Client) {
	tb.Helper()
	e, err := startEmbedded()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	opts, err := redis.ParseURL(e.url)
	if err != nil {
		tb.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	tb.Cleanup(func() { _ = rdb.Close() })
	return e, rdb
}

// The embedded store listens on a loopback port: without its password,
// another process of the machine can do nothing with it.
func TestEmbeddedStoreAsksForItsPassword(t *testing.T) {
	ctx := context.Background()
	e, rdb := startEmbeddedT(t)
	if err := rdb.Set(ctx, "session:x", "1", 0).Err(); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	stranger := redis.NewClient(&redis.Options{Addr: e.m.Addr(), MaxRetries: -1})
	defer stranger.Close()
	if v, err := stranger.Get(ctx, "session:x").Result(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("without the password: %q, %v; want NOAUTH", v, err)
	}
	guess := redis.NewClient(&redis.Options{Addr: e.m.Addr(), Password: "guess", MaxRetries: -1})
	defer guess.Close()
	if err := guess.Set(ctx, "session:y", "1", 0).Err(); err == nil {
		t.Fatal("a wrong password wrote")
	}
	if n, _ := rdb.Exists(ctx, "session:y").Result(); n != 0 {
		t.Fatal("a wrong password's write is there")
	}
	if other, _ := startEmbeddedT(t); other.url == e.url {
		t.Fatal("two starts made the same password")
	}
}

// TTLs pass in real time, with no command to move them on.
func TestEmbeddedStoreExpires(t *testing.T) {
	ctx := context.Background()
	_, rdb := startEmbeddedT(t)
	if err := rdb.Set(ctx, "lock", "1", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "kept", "1", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	testio.Eventually(t, 30*time.Second, func() string {
		if n, err := rdb.Exists(ctx, "lock").Result(); err != nil || n != 0 {
			return fmt.Sprintf("the 300 ms key is still there (%d, %v)", n, err)
		}
		return ""
	})
	ttl, err := rdb.PTTL(ctx, "kept").Result()
	if err != nil || ttl <= 50*time.Minute || ttl > time.Hour {
		t.Fatalf("the hour's key: TTL %s, %v", ttl, err)
	}
}

// BenchmarkEmbeddedGet is one command on an embedded store of 20,000 keys
// with a TTL, a trial site of some thousands of statuses and sessions.
func BenchmarkEmbeddedGet(b *testing.B) {
	ctx := context.Background()
	_, rdb := startEmbeddedT(b)
	for first := 0; first < 20_000; first += 100 {
		pipe := rdb.Pipeline()
		for i := first; i < first+100; i++ {
			pipe.Set(ctx, fmt.Sprintf("k%d", i), "v", time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := rdb.Get(ctx, fmt.Sprintf("k%d", i%20_000)).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
