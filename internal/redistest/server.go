package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// CPU returns the CPU time the redis-server behind rdb has used, user
// and system: what its single thread can spare bounds what it can do.
func CPU(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	tb.Helper()
	ctx := context.Background()
	var d time.Duration
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			one, err := cpuUsed(ctx, m)
			mu.Lock()
			d += one
			mu.Unlock()
			return err
		})
	} else {
		d, err = cpuUsed(ctx, rdb)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// cpuUsed reads the CPU time one Redis server has used.
func cpuUsed(ctx context.Context, rdb redis.Cmdable) (time.Duration, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		name, value, _ := strings.Cut(line, ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", line, err)
			}
			total += v
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// FlushScripts empties the script cache of rdb's Redis, or of each master
// of its cluster, as a restart of Redis would.
func FlushScripts(ctx context.Context, rdb redis.UniversalClient) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.ScriptFlush(ctx).Err() })
	}
	return rdb.ScriptFlush(ctx).Err()
}
