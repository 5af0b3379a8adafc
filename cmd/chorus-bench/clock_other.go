//go:build !linux

package main

import "time"

// monoNow is the wall-clock time in unix nanoseconds where the tool does
// not read CLOCK_MONOTONIC (clock_linux.go): a clock step during a run
// shifts the latencies spanning it.
func monoNow() int64 { return time.Now().UnixNano() }
