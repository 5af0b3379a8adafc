package testio

import (
	"testing"
	"time"
)

// Eventually retries check every 20 ms until it returns "", and fails the
// test with its last answer once within has passed.
func Eventually(tb testing.TB, within time.Duration, check func() string) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %s: %s", within, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
