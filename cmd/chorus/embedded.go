package main

import (
	"crypto/rand"
	"fmt"
	"net/url"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// expiryEvery is how often the embedded store's TTLs pass, at least: a key
// expires up to this late.
const expiryEvery = 250 * time.Millisecond

// embeddedStore is the in-process Redis-compatible store used when no Redis
// is configured.
type embeddedStore struct {
	m    *miniredis.Miniredis
	url  string // for the Redis client: its address and password
	stop chan struct{}
	done chan struct{}
}

// startEmbedded starts the embedded store.
//
// It listens on a loopback port, the only way miniredis serves a client
// that is not a test, so it asks for a password, made afresh at each start:
// any process of the machine could else read and write every account
// (sessions, password hashes) and stall the store.
//
// Its TTLs pass in real time, as Redis's do, moved on by a clock of its
// own (passTime). miniredis's ClockTTL would move them on at every command
// instead, and each move sorts every key: a command then costs
// O(keys·log keys), and a store of some tens of thousands of keys answers
// pages in seconds.
func startEmbedded() (*embeddedStore, error) {
	m := miniredis.NewMiniRedis()
	password := rand.Text()
	m.RequireAuth(password)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded store: %w", err)
	}
	e := &embeddedStore{
		m:    m,
		url:  (&url.URL{Scheme: "redis", User: url.UserPassword("default", password), Host: m.Addr()}).String(),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go e.passTime()
	return e, nil
}

// passTime moves the store's TTLs on by the time passed, every expiryEvery,
// or ten times as long as a move takes, whichever is longer: a move holds
// the store for the whole of it, and must leave it free most of the time.
func (e *embeddedStore) passTime() {
	defer close(e.done)
	last := time.Now()
	timer := time.NewTimer(expiryEvery)
	defer timer.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-timer.C:
		}
		now := time.Now()
		e.m.FastForward(now.Sub(last))
		last = now
		timer.Reset(max(expiryEvery, 10*time.Since(now)))
	}
}

// Close stops the store; what it held is lost.
func (e *embeddedStore) Close() {
	close(e.stop)
	<-e.done
	e.m.Close()
}
