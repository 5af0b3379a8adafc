package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// unworkable tells, from the error of the first PING, a Redis setting that
// can never work (a wrong password, a database that does not exist, TLS
// against a plain server, a host that does not exist) from a Redis that is
// not up yet, which the client keeps trying. It returns what to tell the
// operator, or "" when waiting may help.
func unworkable(err error) string {
	var dnsErr *net.DNSError
	var recordErr tls.RecordHeaderError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var certErr x509.CertificateInvalidError
	switch {
	case err == nil:
		return ""
	// HasErrorPrefix looks past Redis's "ERR ".
	case redis.HasErrorPrefix(err, "WRONGPASS"), redis.HasErrorPrefix(err, "NOAUTH"),
		redis.HasErrorPrefix(err, "AUTH"), redis.HasErrorPrefix(err, "invalid password"):
		return "Redis refused the credentials: check the user and password in -redis-url"
	case redis.HasErrorPrefix(err, "DB index is out of range"), redis.HasErrorPrefix(err, "invalid DB index"):
		return "Redis has no such database: check the /db number in -redis-url"
	case redis.HasErrorPrefix(err, "This instance has cluster support disabled"):
		return "this Redis is not a Redis Cluster: use redis:// (or rediss://) rather than redis+cluster://"
	case errors.As(err, &recordErr):
		return "the server at -redis-url does not speak TLS: use redis:// rather than rediss://"
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &certErr):
		return "Redis's TLS certificate is not trusted for this address"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "the Redis host in -redis-url does not exist"
	}
	return ""
}

// clusterNode reports whether the one Redis of rdb is a node of a Redis
// Cluster, which a client of one server cannot use: most keys' commands
// would be answered MOVED. A Redis that will not say (INFO renamed away, as
// some hosted ones do) is taken as not one.
func clusterNode(ctx context.Context, rdb redis.UniversalClient) bool {
	info, err := rdb.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}

// speaksPlainRedis reports whether addr answers a plain-text PING, as a
// Redis without TLS does. A TLS client's hello gets no answer from such a
// server (it waits for the end of a line that never comes), so a rediss://
// URL pointed at it times out rather than failing.
func speaksPlainRedis(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return false
	}
	reply := make([]byte, 1)
	if _, err := io.ReadFull(c, reply); err != nil {
		return false
	}
	return reply[0] == '+' || reply[0] == '-' // a RESP status or error
}
