// Command chorus-bench is a load client for a Chorus deployment. It speaks
// only the public API: it signs up users and makes a follow graph over
// REST, holds WebSocket connections to /api/v1/stream with heartbeats, posts
// at a rate, and reports what reached whom and how fast: connections held,
// frames, deliveries expected, lost and duplicated, post-to-delivery
// latency, and, for a local server, its memory per connection.
//
// Large runs spread connections over worker processes (the tool runs
// itself with the hidden -worker argument) and over local source addresses.
//
//	chorus-bench -url http://127.0.0.1:8080 -conns 10000 -authors 100 \
//	    -followers-per-author 100 -rate 100 -duration 30s -users-file users.json
//
// With -storm it measures a reconnect storm instead: it holds movers on the
// first instance and their friends, the observers, on the others, kills
// the first instance's process, reconnects the movers to the others, and
// reports whether any observer was told a mover went offline (a flicker),
// how many presence frames the observers got, and how fast the movers were
// back.
//
//	chorus-bench -storm -url http://127.0.0.1:8081,http://127.0.0.1:8082 \
//	    -conns 10000 -observers 2000 -storm-kill-pid 1234 -users-file users.json
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	if os.Getenv(workerEnv) == "1" || (len(os.Args) > 1 && os.Args[1] == "-worker") {
		code = workerMain(ctx, os.Stdin, os.Stdout, os.Stderr)
	} else {
		code = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}

// Exit statuses of run.
const (
	exitOK     = 0
	exitFailed = 1 // the run failed, or found lost, duplicated or failed work
	exitUsage  = 2
)

const (
	progName    = "chorus-bench"
	usageSuffix = "run chorus-bench -h for the flags"
)

// run does one run of the tool and returns its exit status. The report goes
// to stdout, progress and errors to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		_, _ = fmt.Fprintf(stderr, "%s: %v (%s)\n", progName, err, usageSuffix)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if before, after, err := raiseFileLimit(); err != nil {
		log.Warn("could not raise the open-file limit", "limit", before, "err", err)
	} else if after < uint64(cfg.connCount())+256 && cfg.workerCount() == 0 {
		log.Warn("the open-file limit may be too low for this many connections in one process; use -workers", "limit", after, "conns", cfg.connCount())
	}
	exe, err := os.Executable()
	if err != nil && cfg.workerCount() > 0 {
		_, _ = fmt.Fprintf(stderr, "%s: cannot find this program to run workers: %v\n", progName, err)
		return exitFailed
	}

	measure := bench
	if cfg.Storm {
		measure = storm
	}
	res, err := measure(ctx, cfg, exe, log, stderr)
	if res != nil && res.Conns.Attempted > 0 {
		var werr error
		if cfg.JSON {
			werr = writeJSON(stdout, res)
		} else {
			werr = writeTable(stdout, res)
		}
		if werr != nil {
			_, _ = fmt.Fprintf(stderr, "%s: write report: %v\n", progName, werr)
			return exitFailed
		}
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", progName, err)
		return exitFailed
	}
	if p := res.Problems(); len(p) > 0 {
		_, _ = fmt.Fprintf(stderr, "%s: FAIL: %s\n", progName, strings.Join(p, "; "))
		return exitFailed
	}
	return exitOK
}
