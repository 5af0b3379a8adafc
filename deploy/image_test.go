package deploy_test

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"chorus/internal/version"
)

// TestDockerfile checks what the image promises beyond its build: the Go
// version of go.mod, a non-root user, the port, the health check, the
// entry point.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	dockerfile, gomod := readRepoFile(t, "Dockerfile"), readRepoFile(t, "go.mod")
	goVersion := regexp.MustCompile(`(?m)^go\s+(\S+)$`).FindStringSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	for _, want := range []string{
		"ARG GO_VERSION=" + goVersion[1] + "\n",
		"FROM golang:${GO_VERSION} AS build\n",
		"COPY go.mod go.sum ./\nRUN go mod download",
		"FROM gcr.io/distroless/static-debian12:nonroot\n",
		"COPY --from=build /out/chorus /out/healthcheck /\n",
		"USER 65532:65532\n",
		"EXPOSE 8080\n",
		`CMD ["/healthcheck"]`,
		`ENTRYPOINT ["/chorus"]`,
	} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("Dockerfile does not contain %q", want)
		}
	}
	for _, want := range []string{"CHORUS_ADDR=:8080", "CHORUS_LOG_FORMAT=json"} {
		if !regexp.MustCompile(`(?m)^ENV\b(.*\\\n)*.*\b` + regexp.QuoteMeta(want) + `\b`).MatchString(dockerfile) {
			t.Errorf("Dockerfile does not set ENV %s", want)
		}
	}
}

// TestStaticBinaries checks that the Dockerfile's recipe makes binaries
// that run on distroless/static: statically linked, stripped, and free of
// this machine's paths.
func TestStaticBinaries(t *testing.T) {
	t.Parallel()
	// Built in a copy of the build context, like docker build's /src.
	context := filepath.Join(binDir, "context")
	for _, name := range []string{"chorus", "healthcheck"} {
		t.Run(name, func(t *testing.T) {
			path := binary(t, name)
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("%s has a %s program header: it is dynamically linked", name, p.Type)
				}
			}
			if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
				t.Errorf("%s needs shared libraries %v", name, libs)
			}
			if f.Section(".symtab") != nil {
				t.Errorf("%s keeps its symbol table: not built with -ldflags=-s", name)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte(context+"/")) {
				t.Errorf("%s contains the path %s: not built with -trimpath", name, context)
			}
		})
	}
}

// TestImageServes runs the binary as the image would, without Redis (the
// embedded store), and its health check against it.
func TestImageServes(t *testing.T) {
	t.Parallel()
	base := startChorus(t, "chorus", baseEnv())
	for _, c := range []struct{ path, contentType, body string }{
		{"/healthz", "", ""},
		{"/", "text/html", "<html"},
		{"/static/app.js", "javascript", ""},
	} {
		res, body := get(t, base+c.path)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", c.path, res.Status)
		}
		if ct := res.Header.Get("Content-Type"); !strings.Contains(ct, c.contentType) {
			t.Errorf("GET %s: Content-Type %q, want %s", c.path, ct, c.contentType)
		}
		if !strings.Contains(strings.ToLower(body), c.body) {
			t.Errorf("GET %s: body does not contain %s:\n%.300s", c.path, c.body, body)
		}
	}

	port := base[strings.LastIndex(base, ":")+1:]
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	cases := []struct {
		name string
		env  []string
		args []string
		want int
	}{
		{"image default address", []string{"CHORUS_ADDR=:" + port}, nil, 0},
		{"every interface", []string{"CHORUS_ADDR=0.0.0.0:" + port}, nil, 0},
		{"loopback address", []string{"CHORUS_ADDR=127.0.0.1:" + port}, nil, 0},
		{"nothing listening", []string{"CHORUS_ADDR=:" + itoa(freePort(t))}, nil, 1},
		{"not 200", nil, []string{failing.URL + "/healthz"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := runHealthcheck(t, c.env, c.args...); got != c.want {
				t.Errorf("healthcheck %v %v: exit %d, want %d", c.env, c.args, got, c.want)
			}
		})
	}
}

// runHealthcheck runs the health-check binary and returns its exit code.
func runHealthcheck(t *testing.T, env []string, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "healthcheck"), args...)
	cmd.Env = baseEnv(env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && ctx.Err() == nil:
		t.Logf("healthcheck said: %s", out)
		return exit.ExitCode()
	default:
		t.Fatalf("healthcheck: %v\n%s", err, out)
		return -1
	}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

// TestBinaryHelpAndVersion runs the image's binary as a person would to
// learn what it is: -h and -version answer on stdout and exit 0, and
// -version reports what the build recorded in the binary.
func TestBinaryHelpAndVersion(t *testing.T) {
	t.Parallel()
	path := binary(t, "chorus")
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg  string
		want []string
	}{
		{"-h", []string{"Chorus is a real-time presence and feed server", "docs/API.md", "docs/OPERATIONS.md", "  -addr"}},
		{"-help", []string{"Chorus is a real-time presence and feed server", "  -redis-url"}},
		{"-version", []string{version.FromBuildInfo(bi).String()}},
	} {
		t.Run(c.arg, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, path, c.arg)
			cmd.Env = baseEnv()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("chorus %s: %v, stderr %q; want exit 0 and nothing on stderr", c.arg, err, stderr.String())
			}
			for _, want := range c.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("chorus %s printed\n%s\nwant it to contain\n%s", c.arg, out, want)
				}
			}
		})
	}
}
