package realtime

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// giveUpUnacked has the kernel end nc once what was written to it has gone
// unacknowledged for d (TCP_USER_TIMEOUT): a client that vanished without
// closing (its network gone, its machine asleep) then fails the next
// write, as an event stream, which has no pong to miss, would otherwise
// find only when the kernel gives up on its own, some 15 minutes later. It
// reports whether the option was set.
func giveUpUnacked(nc net.Conn, d time.Duration) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	}); err != nil {
		return false
	}
	return serr == nil
}
