package web

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
)

// DefaultMaxConnsPerAddress is the most connections one client address
// holds at once when ConnGuardOptions says nothing: far above what a
// browser opens (six per origin, and a stream), room for a few dozen
// people behind one NAT.
const DefaultMaxConnsPerAddress = 256

// ConnStats count what a ConnGuard did, for /metrics (Config.ConnStats).
type ConnStats struct {
	// Refused counts connections closed at once because their address
	// held as many as one may.
	Refused atomic.Int64
	// KeepAlivesOff counts the times keep-alives were turned off because
	// connections ran short.
	KeepAlivesOff atomic.Int64
}

// ConnGuardOptions configure a ConnGuard.
type ConnGuardOptions struct {
	// MaxConnections is the server's cap on open connections: beyond it,
	// Accept waits for one to close, and the new ones wait in the kernel's
	// backlog. Zero or less: no cap.
	MaxConnections int
	// PerAddress is the most connections one client address holds (an
	// IPv6 address counted by its /64, as the limits count it). Zero:
	// DefaultMaxConnsPerAddress; negative: no cap.
	PerAddress int
	// TrustedProxies are exempt from PerAddress: each carries many
	// clients.
	TrustedProxies []netip.Prefix
	Stats          *ConnStats // nil: counted nowhere
}

// ConnGuard is the listener of the HTTP server that keeps one client from
// holding every connection. It closes a new connection at once when its
// TCP peer's address holds PerAddress already; the peer is what it knows
// before any request, so behind a proxy it is the proxy, which is exempt
// when trusted (then the limits per client address apply to each request).
// It holds at most MaxConnections open, as netutil.LimitListener would,
// but its connections are the sockets' own, unwrapped for what reads them:
// a stream's socket can be watched by realtime's poller (SyscallConn).
// And while more than three quarters of MaxConnections are open, it turns
// the server's keep-alives off, which closes the idle ones at once and
// every other after its answer, so that a client holding idle
// connections cannot keep a new one waiting for -idle-timeout; once fewer
// than half are open, keep-alives are on again.
type ConnGuard struct {
	net.Listener
	srv   *http.Server
	opts  ConnGuardOptions
	stats *ConnStats

	slots chan struct{} // one per open connection, up to MaxConnections; nil: no cap

	mu     sync.Mutex
	open   int
	byAddr map[netip.Prefix]int

	// changed wakes the goroutine that turns keep-alives on and off, the
	// only one that does: turning them off closes idle connections, whose
	// Close must not wait for whoever turns them.
	changed chan struct{}
	done    chan struct{}
	closing sync.Once
}

// NewConnGuard guards the connections ln accepts for srv, which must serve
// from the guard.
func NewConnGuard(ln net.Listener, srv *http.Server, opts ConnGuardOptions) *ConnGuard {
	if opts.PerAddress == 0 {
		opts.PerAddress = DefaultMaxConnsPerAddress
	}
	if opts.Stats == nil {
		opts.Stats = &ConnStats{}
	}
	g := &ConnGuard{
		Listener: ln, srv: srv, opts: opts, stats: opts.Stats,
		byAddr:  map[netip.Prefix]int{},
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	if opts.MaxConnections > 0 {
		g.slots = make(chan struct{}, opts.MaxConnections)
	}
	go g.keepAlives()
	return g
}

// Accept returns the next connection whose address holds fewer than
// PerAddress, closing those over it.
func (g *ConnGuard) Accept() (net.Conn, error) {
	for {
		if g.slots != nil {
			select {
			case g.slots <- struct{}{}:
			case <-g.done:
				return nil, net.ErrClosed
			}
		}
		c, err := g.Listener.Accept()
		if err != nil {
			g.release()
			return nil, err
		}
		addr, counted := g.addressOf(c.RemoteAddr())
		g.mu.Lock()
		if counted && g.opts.PerAddress > 0 && g.byAddr[addr] >= g.opts.PerAddress {
			g.mu.Unlock()
			g.stats.Refused.Add(1)
			_ = c.Close() // refused unanswered
			g.release()
			continue
		}
		if counted {
			g.byAddr[addr]++
		}
		g.open++
		g.mu.Unlock()
		g.wake()
		return &guardedConn{Conn: c, guard: g, addr: addr, counted: counted}, nil
	}
}

// Close closes the listener and stops the guard's goroutine; the
// connections accepted stay open.
func (g *ConnGuard) Close() error {
	g.closing.Do(func() { close(g.done) })
	return g.Listener.Close()
}

// addressOf is the address a connection is counted under, and whether it
// is counted: not for a trusted proxy, nor for a peer that is no IP.
func (g *ConnGuard) addressOf(a net.Addr) (netip.Prefix, bool) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ip = ip.Unmap()
	for _, p := range g.opts.TrustedProxies {
		if p.Contains(ip) {
			return netip.Prefix{}, false
		}
	}
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p, true
}

// release frees a connection's slot.
func (g *ConnGuard) release() {
	if g.slots != nil {
		<-g.slots
	}
}

func (g *ConnGuard) wake() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// keepAlives turns the server's keep-alives off while more than three
// quarters of MaxConnections are open, and on again below half.
func (g *ConnGuard) keepAlives() {
	on := true
	for {
		select {
		case <-g.done:
			return
		case <-g.changed:
		}
		g.mu.Lock()
		open := g.open
		g.mu.Unlock()
		switch {
		case g.opts.MaxConnections <= 0: // no cap: never short of connections
		case on && open*4 > g.opts.MaxConnections*3:
			on = false
			g.stats.KeepAlivesOff.Add(1)
			g.srv.SetKeepAlivesEnabled(false)
		case !on && open*2 < g.opts.MaxConnections:
			on = true
			g.srv.SetKeepAlivesEnabled(true)
		}
	}
}

// guardedConn is a connection a ConnGuard counts until it is closed,
// hijacked (a stream) or not.
type guardedConn struct {
	net.Conn
	guard   *ConnGuard
	addr    netip.Prefix
	counted bool
	once    sync.Once
}

func (c *guardedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		g := c.guard
		g.mu.Lock()
		g.open--
		if c.counted {
			if g.byAddr[c.addr]--; g.byAddr[c.addr] <= 0 {
				delete(g.byAddr, c.addr)
			}
		}
		g.mu.Unlock()
		g.release()
		g.wake()
	})
	return err
}

// SyscallConn is the socket's, for what watches it (realtime's poller): the
// guard reads and buffers nothing of its own. It fails for a connection
// that is no plain socket.
func (c *guardedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errNoSocket
	}
	return sc.SyscallConn()
}

// CloseWrite half-closes the socket, so that a stream failed for a bad
// frame lingers for its close frame to arrive (realtime's meteredConn).
func (c *guardedConn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errNoSocket
	}
	return cw.CloseWrite()
}

var errNoSocket = errors.New("not a socket")
