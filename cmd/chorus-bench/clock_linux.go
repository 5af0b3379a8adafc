//go:build linux

package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// monoNow is the time in nanoseconds on CLOCK_MONOTONIC, the clock every
// moment the tool compares is read on: sends, answers, ready frames,
// frames received, closes. A step of the wall clock during a run (NTP, an
// operator) would shift a difference of wall-clock times by the step; the
// monotonic clock only counts up. It is the machine's, so the times of
// the worker processes compare with the coordinator's.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// Every Linux has it; a time on another clock would compare wrongly.
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err))
	}
	return ts.Nano()
}
