package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"chorus/internal/redistest"
)

func TestParseRedisURL(t *testing.T) {
	for _, c := range []struct {
		url      string
		single   string   // the server's address
		seeds    []string // or the cluster's
		user     string
		password string
		tls      bool
	}{
		{url: "redis://127.0.0.1:6379/0", single: "127.0.0.1:6379"},
		{url: "rediss://:pw@db:6380", single: "db:6380", password: "pw", tls: true},
		{url: "redis+cluster://a:7000", seeds: []string{"a:7000"}},
		{url: "redis+cluster://a:7000,b:7001,c:7002", seeds: []string{"a:7000", "b:7001", "c:7002"}},
		{url: "redis+cluster://u:p@a:7000,b:7001?dial_timeout=3s", seeds: []string{"a:7000", "b:7001"}, user: "u", password: "p"},
		{url: "rediss+cluster://:p@a:7000,b:7001", seeds: []string{"a:7000", "b:7001"}, password: "p", tls: true},
	} {
		t.Run(c.url, func(t *testing.T) {
			target, err := parseRedisURL(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if c.single != "" {
				if target.cluster != nil || target.single.Addr != c.single || target.single.Password != c.password {
					t.Fatalf("got %+v, want the server %s", target, c.single)
				}
			} else {
				o := target.cluster
				if o == nil || !slices.Equal(o.Addrs, c.seeds) || o.Username != c.user || o.Password != c.password {
					t.Fatalf("got %+v, want the cluster %v (user %q password %q)", o, c.seeds, c.user, c.password)
				}
			}
			if (target.tls() != nil) != c.tls {
				t.Fatalf("TLS %v, want %v", target.tls() != nil, c.tls)
			}
			if strings.Contains(target.addr(), c.password) && c.password != "" {
				t.Fatalf("addr %q shows the password", target.addr())
			}
		})
	}
	for _, bad := range []string{
		"redis+cluster://a:7000/1",    // a cluster has no databases
		"redis+cluster://a:7000,,b:1", // an empty seed
		"redis+cluster://a",           // no port
		"http+cluster://a:7000",
		"redis+cluster://a:7000?dial_timeout=soon",
		"redis://a:6379/notanumber",
	} {
		if _, err := parseRedisURL(bad); err == nil {
			t.Errorf("parseRedisURL(%q) accepted it", bad)
		}
	}
}

// A key prefix with braces is refused on a cluster: it would take over the
// keys' hash tags.
func TestRunRefusesBracesOnCluster(t *testing.T) {
	args := []string{"-addr", "127.0.0.1:0", "-redis-url", "redis+cluster://127.0.0.1:1", "-key-prefix", "a{b}:"}
	err := run(t.Context(), args, func(string) string { return "" }, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "must not contain { or }") {
		t.Errorf("run %v = %v, want an error about the braces", args, err)
	}
}

// A URL that cannot be parsed is refused without being quoted: it may hold
// a password.
func TestParseRedisURLHidesThePassword(t *testing.T) {
	for _, bad := range []string{
		"redis://:S3cr%t@127.0.0.1:6379/0",
		"rediss://user:S3cret@[::1:6379/0",
		"redis+cluster://user:S3cr%zz@127.0.0.1:7000,127.0.0.1:7001",
		"redis://user:S3cret@host:port/0",
		"redis://:S3cr/xY9@h:6379/0",              // a / left unescaped in the password
		"redis+cluster://:S3cr/xY9@h:7000,h:7001", // the same on a cluster
		"redis+cluster://:S3cr?xY9@h:7000",        // and a ?
	} {
		_, err := parseRedisURL(bad)
		if err == nil {
			t.Errorf("parseRedisURL(%q) accepted it", bad)
		} else if strings.Contains(err.Error(), "S3cr") || strings.Contains(err.Error(), "xY9") {
			t.Errorf("parseRedisURL(%q) = %q, which shows the password", bad, err)
		}
	}
}

// A redis:// URL naming a node of a Redis Cluster, or a redis+cluster://
// URL naming a Redis that is not one, stops the start with a message
// saying so: either would start an instance whose every request fails.
func TestRunRefusesTheWrongKindOfRedis(t *testing.T) {
	node := redistest.ClusterAddrs(t)[0]
	single := strings.TrimPrefix(redistest.URL(t), "redis://")
	for _, tc := range []struct{ url, want string }{
		{"redis://" + node, "is a node of a Redis Cluster: use redis+cluster://"},
		{"redis+cluster://" + strings.SplitN(single, "/", 2)[0], "is not a Redis Cluster: use redis://"},
	} {
		args := []string{"-addr", "127.0.0.1:0", "-redis-url", tc.url}
		err := run(t.Context(), args, func(string) string { return "" }, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run with %s = %v, want an error saying %q", tc.url, err, tc.want)
		}
	}
}
