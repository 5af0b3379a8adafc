package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	clusterOnce  sync.Once
	clusterAddrs []string
	clusterErr   error
)

// ClusterAddrs returns the seed addresses of the shared test cluster: the
// one named by CHORUS_TEST_REDIS_CLUSTER (comma-separated host:port, which
// the test script starts), or else one the first test to ask starts.
func ClusterAddrs(tb testing.TB) []string {
	tb.Helper()
	clusterOnce.Do(func() {
		if s := os.Getenv("CHORUS_TEST_REDIS_CLUSTER"); s != "" {
			clusterAddrs = strings.Split(s, ",")
			return
		}
		var c *Cluster
		c, clusterErr = startCluster(3, 0)
		if clusterErr == nil {
			clusterAddrs = c.Addrs()
		}
	})
	if clusterErr != nil {
		tb.Fatalf("redistest: no Redis Cluster (run the tests with scripts/test.sh): %v", clusterErr)
	}
	return clusterAddrs
}

// ClusterClient returns a client of the shared test cluster, closed when the
// test ends, and a key prefix unique to the test.
func ClusterClient(tb testing.TB) (*redis.ClusterClient, string) {
	tb.Helper()
	return ClusterClientOf(tb, ClusterAddrs(tb)), Prefix()
}

// ClusterClientOf returns a client of the cluster seeded by addrs, closed
// when the test ends.
func ClusterClientOf(tb testing.TB, addrs []string) *redis.ClusterClient {
	tb.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.Ping(ctx).Err()
	}); err != nil {
		tb.Fatalf("redistest: ping cluster %v: %v", addrs, err)
	}
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Cluster is a Redis Cluster of a test's own, for tests that kill its nodes.
type Cluster struct {
	Nodes []*Server // masters first, then their replicas
}

// StartCluster starts a cluster of masters, each with replicas replicas,
// stopped when the test ends.
//
// A start that fails is made again, up to three times in all: a node's
// port, free when picked, may be taken by another process before the node
// binds it (or its cluster bus port, 10,000 above), and the node is then
// gone by the time the cluster is created, on a busy machine running many
// tests at once.
func StartCluster(tb testing.TB, masters, replicas int) *Cluster {
	tb.Helper()
	var err error
	for range 3 {
		var c *Cluster
		if c, err = startCluster(masters, replicas); err == nil {
			tb.Cleanup(c.Stop)
			return c
		}
		tb.Logf("redistest: a cluster did not start, starting another: %v", err)
	}
	tb.Fatalf("redistest: %v", err)
	return nil
}

// Addrs returns the addresses of every node.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Stop kills every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

func startCluster(masters, replicas int) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "chorus-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for range masters * (1 + replicas) {
		srv, err := start(
			"--cluster-enabled", "yes",
			"--cluster-config-file", fmt.Sprintf("%s/nodes-%d.conf", dir, len(c.Nodes)),
			"--cluster-node-timeout", "1000",
			"--dir", dir,
		)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, srv)
	}
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli not on PATH: %w", err)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitReady(masters, replicas, 30*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// waitReady waits until every node says the cluster is ok and knows every
// other node, and every master has its replicas in sync, so a client's first
// CLUSTER SLOTS sees all of it and a failover finds a replica to promote.
func (c *Cluster) waitReady(masters, replicas int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, n := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			ready := err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))+"\r")
			if ready {
				// CLUSTER SHARDS says a replica is online once the node has
				// heard it is in sync.
				var shards []redis.ClusterShard
				shards, err = rdb.ClusterShards(ctx).Result()
				ready = err == nil && len(shards) == masters
				for _, s := range shards {
					online := 0
					for _, n := range s.Nodes {
						if n.Health == "online" {
							online++
						}
					}
					ready = ready && online == 1+replicas
				}
			}
			if ready {
				break
			}
			if ctx.Err() != nil {
				_ = rdb.Close()
				return fmt.Errorf("cluster node %s not ready: %v %q", n.Addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}

// BackendEnv is the environment variable that moves the tests written
// against "the backend" onto the shared cluster: with BackendEnv=cluster,
// Backend gives ClusterClient, else Client. The test script runs the suites
// that use it once each way.
const BackendEnv = "CHORUS_TEST_BACKEND"

// OnCluster reports whether BackendEnv asks for the cluster.
func OnCluster() bool { return os.Getenv(BackendEnv) == "cluster" }

// Backend returns a client of the backend BackendEnv names, closed when the
// test ends, and a key prefix unique to the test.
func Backend(tb testing.TB) (redis.UniversalClient, string) {
	tb.Helper()
	if OnCluster() {
		return ClusterClient(tb)
	}
	return Client(tb)
}

// WithHook returns a client of rdb's Redis (one, or a cluster) of its own,
// with hook h, closed when the test ends.
func WithHook(tb testing.TB, rdb redis.UniversalClient, h redis.Hook) redis.UniversalClient {
	tb.Helper()
	var c redis.UniversalClient
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		c = redis.NewClusterClient(r.Options())
	case *redis.Client:
		c = redis.NewClient(r.Options())
	default:
		tb.Fatalf("no client like %T", rdb)
	}
	c.AddHook(h)
	tb.Cleanup(func() { c.Close() })
	return c
}

// Keys returns the keys matching pattern, scanned from every master when
// rdb is a cluster client.
func Keys(tb testing.TB, rdb redis.UniversalClient, pattern string) []string {
	tb.Helper()
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	ctx := tb.Context()
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		tb.Fatalf("redistest: keys %s: %v", pattern, err)
	}
	return keys
}
