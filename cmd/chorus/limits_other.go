//go:build !unix

package main

// fileLimit is unknown here: no automatic cap on streams.
func fileLimit() uint64 { return 0 }
