package realtime

import "sync/atomic"

// pool runs functions on goroutines that wait for the next once done, where
// one is idle, else on a new one. A stream's reader or writer goes deep
// enough (a frame read, or a write through the socket's poller) to grow a
// new goroutine's stack; an idle one of the pool has grown already, and
// takes the next without a start or a copy of its stack.
type pool struct {
	work chan func() // unbuffered: a send succeeds only to an idle goroutine
	idle atomic.Int32
}

// maxIdle bounds the goroutines a pool keeps idle for the next functions,
// whatever the streams held.
const maxIdle = 64

// run runs f on an idle goroutine of the pool, or on a new one.
func (p *pool) run(f func()) {
	select {
	case p.work <- f:
	default:
		go p.serve(f)
	}
}

// serve runs f, then waits for the next, as one of at most maxIdle idle
// goroutines.
func (p *pool) serve(f func()) {
	for {
		f()
		if !p.becomeIdle() {
			return
		}
		f = <-p.work
		p.idle.Add(-1)
	}
}

// becomeIdle counts one more idle goroutine, unless maxIdle are: the count
// never passes maxIdle, not even for a moment (IdleWriters reads it).
func (p *pool) becomeIdle() bool {
	for {
		n := p.idle.Load()
		if n >= maxIdle {
			return false
		}
		if p.idle.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// writerPool runs the streams' writers (conn.drain), each while frames
// wait for its stream.
var writerPool = pool{work: make(chan func())}

// IdleWriters is how many goroutines the process keeps idle now for the
// next streams' writes (at most maxIdle).
func IdleWriters() int64 { return int64(writerPool.idle.Load()) }
