package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestDebugAddr(t *testing.T) {
	base, logs := start(t, nil, "-debug-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`msg="debug listening[^\n]*addr=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no debug address in the logs:\n%s", logs)
	}
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if code, body := get("http://" + m[1] + "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("goroutine profile on the debug address: %d %.200q", code, body)
	}
	if code, _ := get("http://" + m[1] + "/debug/pprof/cmdline"); code == http.StatusOK {
		t.Fatal("the debug address serves the command line, which may hold a Redis password")
	}
	if code, _ := get(base + "/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("the API's address serves the profiles: %d", code)
	}
}

func TestDebugAddrOffByDefault(t *testing.T) {
	_, logs := start(t, nil)
	if strings.Contains(logs.String(), "debug listening") {
		t.Fatalf("a debug listener with no -debug-addr:\n%s", logs)
	}
}

func TestDebugAddrRefused(t *testing.T) {
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-debug-addr", "256.0.0.1:1"}, func(string) string { return "" }, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "debug listen") {
		t.Fatalf("run with a debug address it cannot listen on: %v", err)
	}
}
