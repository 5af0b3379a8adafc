package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// workerEnv marks a process started as a worker; the tool also passes the
// hidden -worker argument, which a test binary cannot take.
const workerEnv = "CHORUS_BENCH_WORKER"

// assignment is what the coordinator gives a worker: the first line of its
// stdin. Any later input, or the end of stdin, tells it to stop.
type assignment struct {
	Conns   []connSpec   `json:"conns"`
	Options shardOptions `json:"options"`
}

// workerMain runs a worker: it holds the connections of its assignment and
// reports on stdout, one JSON message a line, until told to stop or its
// lifetime ends.
func workerMain(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	if _, _, err := raiseFileLimit(); err != nil {
		_, _ = fmt.Fprintln(stderr, "raise open-file limit:", err)
	}
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		_, _ = fmt.Fprintln(stderr, "read assignment:", err)
		return 1
	}
	var a assignment
	if err := json.Unmarshal(line, &a); err != nil {
		_, _ = fmt.Fprintln(stderr, "assignment:", err)
		return 1
	}
	if a.Options.Lifetime <= 0 || a.Options.DialTimeout <= 0 {
		_, _ = fmt.Fprintln(stderr, "assignment: lifetime and dial timeout must be positive")
		return 1
	}
	stop := make(chan struct{})
	go func() {
		_, _ = in.ReadByte() // anything, or the end of input
		close(stop)
	}()
	out := bufio.NewWriterSize(stdout, 64<<10)
	enc := json.NewEncoder(out)
	var failed error
	runShard(ctx, a.Conns, a.Options, stop, func(m message) {
		if failed != nil {
			return
		}
		if err := enc.Encode(m); err != nil {
			failed = err
			return
		}
		failed = out.Flush()
	})
	if failed != nil {
		_, _ = fmt.Fprintln(stderr, "report:", failed)
		return 1
	}
	return 0
}

// holders runs the shards of a run: one in this process, or one in each
// worker process.
type holders struct {
	count int             // shards
	stops []func()        // ask each shard to close its connections
	done  []chan struct{} // closed when each shard has ended
	errs  chan error      // a worker that failed, or reported nonsense
	procs []*exec.Cmd     // workers, to kill if they overstay
	once  []sync.Once     // each stop once
}

// startHolders starts the shards holding specs. With workers > 0 the tool
// runs itself (exe) as that many worker processes.
func startHolders(ctx context.Context, workers int, exe string, specs []connSpec, opts shardOptions, col *collector, stderr io.Writer) (*holders, error) {
	h := &holders{errs: make(chan error, max(workers, 1)*2)}
	if workers == 0 {
		stop, done := make(chan struct{}), make(chan struct{})
		h.add(func() { close(stop) }, done, nil)
		go func() {
			defer close(done)
			runShard(ctx, specs, opts, stop, func(m message) {
				if err := col.handle(m); err != nil {
					h.fail(err)
				}
			})
		}()
		return h, nil
	}
	parts := make([][]connSpec, workers)
	for i, s := range specs {
		parts[i%workers] = append(parts[i%workers], s)
	}
	for w, part := range parts {
		if err := h.startWorker(w, exe, assignment{Conns: part, Options: opts}, col, stderr); err != nil {
			_ = h.stop(5 * time.Second)
			return nil, fmt.Errorf("worker %d: %w", w, err)
		}
	}
	context.AfterFunc(ctx, h.signal) // an interrupted run still closes its connections
	return h, nil
}

func (h *holders) add(stop func(), done chan struct{}, cmd *exec.Cmd) {
	h.count++
	h.stops = append(h.stops, stop)
	h.done = append(h.done, done)
	h.procs = append(h.procs, cmd)
	h.once = append(h.once, sync.Once{})
}

func (h *holders) fail(err error) {
	select {
	case h.errs <- err:
	default:
	}
}

// startWorker runs one worker process and feeds its reports to col.
func (h *holders) startWorker(id int, exe string, a assignment, col *collector, stderr io.Writer) error {
	cmd := exec.Command(exe, "-worker")
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	cmd.Stderr = &prefixWriter{w: stderr, prefix: fmt.Sprintf("worker %d: ", id)}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	h.add(func() { _ = stdin.Close() }, done, cmd)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		finals := 0
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				h.fail(fmt.Errorf("worker %d: unreadable report: %w", id, err))
				continue
			}
			if m.Final != nil {
				finals++
			}
			if err := col.handle(m); err != nil {
				h.fail(fmt.Errorf("worker %d: %w", id, err))
			}
		}
		err := errors.Join(sc.Err(), cmd.Wait())
		if err == nil && finals == 0 {
			err = errors.New("ended without its final report")
		}
		if err != nil {
			h.fail(fmt.Errorf("worker %d: %w", id, err))
		}
	}()
	line, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("send assignment: %w", err)
	}
	return nil
}

// stop asks every shard to close its connections and waits up to timeout
// for them to end; workers that overstay are killed. Once all have ended,
// it returns at once.
func (h *holders) stop(timeout time.Duration) error {
	h.signal()
	// One deadline for all, each shard waited for until it: a channel of
	// time.After fires once, and the shards after the first late one
	// would wait on it for ever.
	deadline := time.Now().Add(timeout)
	t := time.NewTimer(timeout)
	defer t.Stop()
	var late int
	for i, d := range h.done {
		t.Reset(time.Until(deadline))
		select {
		case <-d:
		case <-t.C:
			late++
			if h.procs[i] != nil && h.procs[i].Process != nil {
				_ = h.procs[i].Process.Kill()
				<-d
			}
		}
	}
	if late > 0 {
		return fmt.Errorf("%d of %d shards did not close within %s", late, h.count, timeout)
	}
	return nil
}

// signal asks every shard to close its connections, once.
func (h *holders) signal() {
	for i := range h.stops {
		h.once[i].Do(h.stops[i])
	}
}

// prefixWriter writes whole lines, each after a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		_, _ = fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
}
