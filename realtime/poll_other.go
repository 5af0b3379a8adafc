//go:build !linux

package realtime

import "net"

// pollWait is a socket watched by the instance's poller, which this
// platform has not: each stream waits for its client on a goroutine of its
// own (see poll_linux.go).
type pollWait struct{}

// pollSocket reports that nc cannot be watched: nil.
func pollSocket(net.Conn, bool, func()) *pollWait { return nil }

func (*pollWait) rearm() bool { return false }

func (*pollWait) close() {}

// IdleReaders is how many goroutines the process keeps idle for the next
// streams' reads: none here, where each stream reads on its own.
func IdleReaders() int64 { return 0 }
