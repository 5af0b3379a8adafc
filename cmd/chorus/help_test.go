package main

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"chorus/internal/testio"
	"chorus/internal/version"
)

// runOnce runs chorus with args and no environment, as a command that
// returns at once (help, version, a bad flag).
func runOnce(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut testio.Buffer
	err = run(context.Background(), args, func(string) string { return "" }, &out, &errOut, nil)
	return out.String(), errOut.String(), err
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"-addr", ":9000", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, err := runOnce(t, args...)
			if err != nil || stderr != "" {
				t.Fatalf("run %v: %v, stderr %q; want nil and nothing on stderr", args, err, stderr)
			}
			first, _, _ := strings.Cut(stdout, "\n")
			if !strings.HasPrefix(first, "Chorus is a real-time presence and feed server") {
				t.Errorf("first line %q: want the one-line description", first)
			}
			flags := strings.Index(stdout, "  -addr")
			if flags < 0 {
				t.Fatalf("no flag list in:\n%s", stdout)
			}
			for _, want := range []string{"docs/API.md", "docs/OPERATIONS.md", "README"} {
				if i := strings.Index(stdout, want); i < 0 || i > flags {
					t.Errorf("help does not name %s above the flags:\n%s", want, stdout)
				}
			}
			for _, want := range []string{"-redis-url", "REDIS_URL", "-version", "-trusted-proxies"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("help does not list %s", want)
				}
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	stdout, stderr, err := runOnce(t, "-version")
	if err != nil || stderr != "" {
		t.Fatalf("run -version: %v, stderr %q", err, stderr)
	}
	if want := version.Current().String(); stdout != want {
		t.Errorf("-version printed\n%s\nwant\n%s", stdout, want)
	}
	if !strings.HasPrefix(stdout, "chorus ") || !strings.Contains(stdout, runtime.Version()) {
		t.Errorf("-version printed %q: want the module version and %s", stdout, runtime.Version())
	}
}

func TestBadFlag(t *testing.T) {
	stdout, stderr, err := runOnce(t, "-nope")
	if !errors.Is(err, errUsage) {
		t.Fatalf("run -nope: %v, want errUsage", err)
	}
	if stdout != "" || !strings.Contains(stderr, "-nope") || !strings.Contains(stderr, "chorus -h") {
		t.Errorf("run -nope: stdout %q, stderr %q; want the error and a pointer to -h on stderr", stdout, stderr)
	}
}
