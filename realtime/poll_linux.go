package realtime

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The instance's poller: one goroutine that waits, with epoll, for the
// sockets of idle streams to become readable, and starts a goroutine for a
// stream only when its client has sent something. An idle stream then
// holds no goroutine, and no stack, of its own: a goroutine waiting in a
// read would keep at least 4 KiB of stack, and the collector's room for it
// as much again, for the stream's whole life (docs/BENCHMARKS.md).
//
// Go's runtime watches the same sockets in its own epoll set, edge-
// triggered, for the reads and writes of the streams' goroutines; this set
// watches them level-triggered and one-shot, so that a socket is handed to
// one goroutine at a time and handed again if bytes are left unread when
// it is armed again.
type poller struct {
	epfd int
	// file is epfd as the runtime's own poller waits on it: an epoll set
	// is readable while it holds ready sockets. Waiting there rather than
	// in epoll_wait keeps the process free of a thread blocked in a
	// system call, which the runtime's monitor would check on every 20 µs
	// while the poller woke often.
	file *os.File

	mu      sync.Mutex
	watched map[int32]*pollWait // by file descriptor
	gen     int32               // the last registration's generation
}

// pollWait is one socket's registration with the poller. Its epoll
// changes go through raw.Control, which holds the descriptor open
// meanwhile: one closed already (the kernel then dropped it from the set)
// is never changed, nor a later socket's that took its number.
type pollWait struct {
	p     *poller
	raw   syscall.RawConn
	fd    int32
	gen   int32  // this registration's among those of the descriptor, in its events
	ready func() // run on a goroutine of its own when the socket is readable

	mu    sync.Mutex
	state pollState
}

type pollState uint8

const (
	pollArmed   pollState = iota // the poller waits for the socket
	pollRunning                  // ready runs; the socket is not watched
	pollClosed                   // the socket is closing; never watched again
)

// thePoller is the process's poller, started on first use; nil where epoll
// cannot be had (the streams then wait on goroutines of their own).
var thePoller = sync.OnceValue(func() *poller {
	p, err := newPoller()
	if err != nil {
		slog.Warn("no epoll: each stream waits for its client on a goroutine of its own", "err", err)
		return nil
	}
	go p.loop()
	return p
})

func newPoller() (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	// Non-blocking, the descriptor is the runtime poller's to wait on; a
	// file it cannot wait on takes no deadline.
	file := os.NewFile(uintptr(epfd), "epoll")
	if err := file.SetReadDeadline(time.Time{}); err != nil {
		file.Close()
		return nil, err
	}
	return &poller{epfd: epfd, file: file, watched: map[int32]*pollWait{}}, nil
}

const pollEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// pollSocket has ready run, on a goroutine of its own, once nc is readable
// (at once when pending), and reports whether it will: not when nc is no
// plain socket, whose descriptor the poller cannot watch (a connection
// that buffers what it reads, as TLS does, would hide bytes from it).
func pollSocket(nc net.Conn, pending bool, ready func()) *pollWait {
	p := thePoller()
	sc, ok := nc.(syscall.Conn)
	if p == nil || !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var fd int32 = -1
	if raw.Control(func(s uintptr) { fd = int32(s) }) != nil || fd < 0 {
		return nil
	}
	w := &pollWait{p: p, raw: raw, fd: fd, ready: ready, state: pollArmed}
	if pending {
		w.state = pollRunning
	}
	p.mu.Lock()
	p.gen++
	w.gen = p.gen
	p.watched[fd] = w
	p.mu.Unlock()
	events := uint32(pollEvents)
	if pending {
		// Registered disarmed (one-shot, of no event but a hang-up's,
		// which fire finds running): ready runs now and arms it after.
		events = unix.EPOLLONESHOT
	}
	if err := w.ctl(unix.EPOLL_CTL_ADD, events); err != nil {
		p.forget(w)
		return nil
	}
	if pending {
		readerPool.run(ready)
	}
	return w
}

// rearm has the poller watch the socket again, after ready read what was
// pending. It reports false when the socket is closing: the caller reads
// on, and finds it closed.
func (w *pollWait) rearm() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != pollRunning {
		return false
	}
	w.state = pollArmed
	if err := w.ctl(unix.EPOLL_CTL_MOD, pollEvents); err != nil {
		w.state = pollRunning
		return false
	}
	return true
}

// ctl changes the socket's registration in the epoll set, while the
// socket is open.
func (w *pollWait) ctl(op int, events uint32) error {
	var err error
	cerr := w.raw.Control(func(fd uintptr) {
		err = unix.EpollCtl(w.p.epfd, op, int(fd), &unix.EpollEvent{Events: events, Fd: w.fd, Pad: w.gen})
	})
	if cerr != nil {
		return cerr
	}
	return err
}

// close takes the socket out of the poller, before it closes: its
// descriptor may be another socket's next. When the poller was waiting for
// it, ready runs once more, to find the connection closed.
func (w *pollWait) close() {
	w.mu.Lock()
	was := w.state
	w.state = pollClosed
	if was != pollClosed {
		_ = w.ctl(unix.EPOLL_CTL_DEL, 0) // an error: closed already, and out of the set
		w.p.forget(w)
	}
	w.mu.Unlock()
	if was == pollArmed {
		readerPool.run(w.ready)
	}
}

// fire runs ready for a socket found readable, unless it was handed over
// or closed meanwhile.
func (w *pollWait) fire() {
	w.mu.Lock()
	armed := w.state == pollArmed
	if armed {
		w.state = pollRunning
	}
	w.mu.Unlock()
	if armed {
		readerPool.run(w.ready)
	}
}

func (p *poller) forget(w *pollWait) {
	p.mu.Lock()
	if p.watched[w.fd] == w {
		delete(p.watched, w.fd)
	}
	p.mu.Unlock()
}

// loop hands each readable socket to its stream, for the process's life.
// It takes what is ready without blocking, and waits in the runtime's
// poller while nothing is.
func (p *poller) loop() {
	raw, err := p.file.SyscallConn()
	if err != nil {
		panic("realtime: epoll: " + err.Error()) // an *os.File's never fails
	}
	events := make([]unix.EpollEvent, 256)
	for {
		var n int
		var werr error
		err := raw.Read(func(uintptr) bool {
			n, werr = unix.EpollWait(p.epfd, events, 0)
			if errors.Is(werr, unix.EINTR) {
				werr = nil
			}
			return n > 0 || werr != nil // else wait until the set is readable
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			// Not expected of a valid epoll descriptor: the streams it
			// watches would wait for good.
			panic("realtime: epoll_wait: " + err.Error())
		}
		for _, ev := range events[:n] {
			p.mu.Lock()
			w := p.watched[ev.Fd]
			p.mu.Unlock()
			// An event of a registration gone since, whose descriptor is
			// another socket's now, is not that socket's.
			if w != nil && w.gen == ev.Pad {
				w.fire()
			}
		}
	}
}

// readerPool runs the poller's readers: on a goroutine that waits for the
// next, where one is idle, else on a new one. A stream's reader stack
// grows past the new goroutine's size as it reads a frame; an idle one has
// grown already, and is handed the next stream's read without a start.
var readerPool = pool{work: make(chan func())}

// IdleReaders is how many goroutines the process keeps idle now for the
// next streams' reads (at most maxIdle, whatever the streams held).
func IdleReaders() int64 { return int64(readerPool.idle.Load()) }
