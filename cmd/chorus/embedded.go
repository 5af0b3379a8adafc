package main

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// startEmbedded starts the in-process Redis-compatible store used when no
// Redis is configured. Its TTLs pass in real time, as Redis's do.
func startEmbedded() (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded store: %w", err)
	}
	return m, nil
}
