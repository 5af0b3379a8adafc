//go:build unix

package main

import "syscall"

// fileLimit is the process's limit of open files (Go raises the soft limit
// to the hard one at start), or 0 when it cannot be read.
func fileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Cur
}
