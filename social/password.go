package social

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// bcryptMaxBytes is the most of a password bcrypt reads; Go's bcrypt refuses
// longer ones.
const bcryptMaxBytes = 72

// bcryptInput is what bcrypt is given for password: the password itself when
// bcrypt reads all of it, else base64(SHA-256(password)), so that every byte
// of a long password counts. Passwords of 72 bytes or fewer are hashed as
// they always were, so hashes made before keep matching.
func bcryptInput(password string) []byte {
	if len(password) <= bcryptMaxBytes {
		return []byte(password)
	}
	sum := sha256.Sum256([]byte(password))
	return []byte(base64.StdEncoding.EncodeToString(sum[:]))
}

// hashers bounds the bcrypt work running at once: bcrypt is made to be slow,
// and unbounded it takes every processor from everything else.
type hashers struct {
	slots chan struct{}
	wait  time.Duration

	// busy and peak count the calls inside a slot now and at most; tests
	// read peak to see the bound hold.
	busy, peak atomic.Int64
	// inSlot, when set, runs inside every slot; tests use it to hold one.
	inSlot func()
}

func newHashers(n int, wait time.Duration) hashers {
	return hashers{slots: make(chan struct{}, n), wait: wait}
}

// withHasher runs fn in a slot, waiting up to h.wait for one; it answers ErrBusy when
// none came free in time, or ctx's error when ctx ended first.
func (s *Service) withHasher(ctx context.Context, fn func()) error {
	h := &s.hashers
	select {
	case h.slots <- struct{}{}:
	default:
		t := time.NewTimer(h.wait)
		defer t.Stop()
		select {
		case h.slots <- struct{}{}:
		case <-t.C:
			s.stats.HashesRefused.Add(1)
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-h.slots }()
	n := h.busy.Add(1)
	defer h.busy.Add(-1)
	for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
	}
	if h.inSlot != nil {
		h.inSlot()
	}
	fn()
	return nil
}

// hashPassword makes the bcrypt hash of password on the bounded pool.
func (s *Service) hashPassword(ctx context.Context, password string) ([]byte, error) {
	var hash []byte
	var herr error
	err := s.withHasher(ctx, func() {
		s.stats.PasswordHashes.Add(1)
		hash, herr = bcrypt.GenerateFromPassword(bcryptInput(password), s.opts.BcryptCost)
	})
	if err != nil {
		return nil, err
	}
	if herr != nil {
		return nil, fmt.Errorf("hash password: %w", herr)
	}
	return hash, nil
}

// passwordMatches compares password with hash on the bounded pool.
func (s *Service) passwordMatches(ctx context.Context, hash []byte, password string) (bool, error) {
	var match bool
	err := s.withHasher(ctx, func() {
		s.stats.PasswordChecks.Add(1)
		match = bcrypt.CompareHashAndPassword(hash, bcryptInput(password)) == nil
	})
	return match, err
}
