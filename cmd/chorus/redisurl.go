package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisTarget is the Redis -redis-url names: one server or a cluster.
type redisTarget struct {
	single  *redis.Options        // redis:// and rediss://
	cluster *redis.ClusterOptions // redis+cluster:// and rediss+cluster://
}

// parseRedisURL reads -redis-url. A cluster is named by its seed nodes,
// comma-separated: redis+cluster://[user:password@]host:port[,host:port...][?options],
// with the options go-redis's ParseClusterURL takes.
func parseRedisURL(raw string) (redisTarget, error) {
	t, err := parseRedisTarget(raw)
	if err != nil && holdsSecret(raw) {
		err = withoutURL(err)
	}
	return t, err
}

// holdsSecret reports whether a Redis URL may hold a password: in its
// user part, or as an option.
func holdsSecret(raw string) bool {
	return strings.Contains(raw, "@") || strings.Contains(strings.ToLower(raw), "password")
}

// withoutURL is the error to show for err, from the reading of a URL that
// may hold a password: one that quotes none of it. Where the URL is cut
// cannot be told from a URL that failed to parse (a / or ? left unescaped
// in a password moves it), so any error but a bad escape is told in
// general terms.
func withoutURL(err error) error {
	var escape url.EscapeError
	if errors.As(err, &escape) {
		return errors.New("a % in it is not followed by two hex digits (a % in a password is written %25)")
	}
	return errors.New("it cannot be read (the error is not shown: it would quote the URL, password and all); " +
		"write it as redis://[user:password@]host:port/db, or redis+cluster://[user:password@]host:port,host:port, " +
		"with / ? # @ % in the password written %2F %3F %23 %40 %25")
}

func parseRedisTarget(raw string) (redisTarget, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !strings.HasSuffix(scheme, "+cluster") {
		opt, err := redis.ParseURL(raw)
		return redisTarget{single: opt}, err
	}
	base := strings.TrimSuffix(scheme, "+cluster")
	if base != "redis" && base != "rediss" {
		return redisTarget{}, fmt.Errorf("unknown scheme %q: use redis+cluster:// or rediss+cluster://", scheme)
	}
	// go-redis takes the first seed in the host and the others as addr
	// query parameters.
	authority, query, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(authority, "/")
	if path != "" {
		return redisTarget{}, fmt.Errorf("a Redis Cluster has only database 0: drop /%s from the URL", path)
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	seeds := strings.Split(hosts, ",")
	q, err := url.ParseQuery(query)
	if err != nil {
		return redisTarget{}, fmt.Errorf("cluster URL options: %w", err)
	}
	for _, s := range seeds {
		if s == "" || !strings.Contains(s, ":") {
			return redisTarget{}, fmt.Errorf("cluster seed %q is not host:port", s)
		}
	}
	for _, s := range seeds[1:] {
		q.Add("addr", s)
	}
	u := base + "://" + userinfo + seeds[0]
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	opt, err := redis.ParseClusterURL(u)
	if err != nil {
		return redisTarget{}, err
	}
	return redisTarget{cluster: opt}, nil
}

// clusterStateReload is how often a cluster client reads the slot map again
// while it is used. go-redis reads it on a redirect, and otherwise once a
// minute: after a failover, commands for the dead master's slots would fail
// until then, as nothing redirects them. One CLUSTER SLOTS every 2 s per
// instance is nothing to Redis.
const clusterStateReload = 2 * time.Second

// client makes the target's client. A request's own deadline bounds its
// Redis calls (/readyz's 2 s, say), not only the client's read and write
// timeouts.
func (t redisTarget) client() redis.UniversalClient {
	if t.cluster != nil {
		t.cluster.ContextTimeoutEnabled = true
		if t.cluster.ClusterStateReloadInterval == 0 {
			t.cluster.ClusterStateReloadInterval = clusterStateReload
		}
		return redis.NewClusterClient(t.cluster)
	}
	t.single.ContextTimeoutEnabled = true
	return redis.NewClient(t.single)
}

// addr is the address that names the target in logs (never the URL, which
// may hold a password): the server's, or the cluster's seeds.
func (t redisTarget) addr() string {
	if t.cluster != nil {
		return "cluster " + strings.Join(t.cluster.Addrs, ",")
	}
	return t.single.Addr
}

// firstAddr is one server to probe when the first PING fails.
func (t redisTarget) firstAddr() string {
	if t.cluster != nil {
		return t.cluster.Addrs[0]
	}
	return t.single.Addr
}

func (t redisTarget) tls() *tls.Config {
	if t.cluster != nil {
		return t.cluster.TLSConfig
	}
	return t.single.TLSConfig
}
