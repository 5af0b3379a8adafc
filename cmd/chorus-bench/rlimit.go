//go:build unix

package main

import "syscall"

// raiseFileLimit lifts the soft limit of open files to the hard limit: each
// held connection is a file.
func raiseFileLimit() (before, after uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, err
	}
	before = lim.Cur
	if lim.Cur >= lim.Max {
		return before, lim.Cur, nil
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return before, before, err
	}
	return before, lim.Cur, nil
}
