package redistest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

func TestStartCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	rdb := redistest.ClusterClientOf(t, c.Addrs())
	ctx := context.Background()
	var masters, replicas atomic.Int32
	rdb.ForEachMaster(ctx, func(context.Context, *redis.Client) error { masters.Add(1); return nil })
	rdb.ForEachSlave(ctx, func(context.Context, *redis.Client) error { replicas.Add(1); return nil })
	if masters.Load() != 3 || replicas.Load() != 3 {
		t.Fatalf("cluster has %d masters and %d replicas, want 3 and 3", masters.Load(), replicas.Load())
	}
	// Keys in different slots land on different masters and read back.
	for _, k := range []string{"{a}x", "{b}x", "{c}x", "{d}x"} {
		if err := rdb.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := rdb.Get(ctx, k).Result(); err != nil || v != k {
			t.Fatalf("GET %s = %q, %v", k, v, err)
		}
	}
}
