//go:build !linux

package realtime

import (
	"net"
	"time"
)

// giveUpUnacked would have the kernel end nc once what was written to it
// went unacknowledged for d (see sockopt_linux.go); this platform is not
// asked, and a vanished client is found when the kernel gives up.
func giveUpUnacked(net.Conn, time.Duration) bool { return false }
