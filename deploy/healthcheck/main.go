// Command healthcheck asks a Chorus server on this host whether it is alive,
// for container images with no shell, curl or wget (HEALTHCHECK CMD
// ["/healthcheck"]). It exits 0 when GET /healthz answers 200 within two
// seconds, else 1.
//
// The target follows the server's own setting: the port of CHORUS_ADDR
// (":8080" when unset) on the loopback address. An argument, a full URL,
// overrides it.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	target := healthURL(os.Getenv("CHORUS_ADDR"))
	if len(os.Args) > 1 {
		target = os.Args[1]
	}
	if err := check(target, 2*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}

// healthURL turns a listen address (":8080", "0.0.0.0:8080",
// "10.0.0.5:8080") into the URL of its /healthz; a server listening on every
// interface is asked on the loopback.
func healthURL(addr string) string {
	if addr == "" {
		addr = ":8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = "", "8080"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz"
}

func check(target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	// No proxy: the server is on this host, whatever HTTP_PROXY says.
	client := &http.Client{Transport: &http.Transport{}}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", target, res.Status)
	}
	return nil
}
