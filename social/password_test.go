package social

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// With one hasher, sign-ups hash one at a time; those that wait past
// HashWait are refused with ErrBusy and leave nothing behind.
func TestPasswordHashingIsBounded(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PasswordHashers: 1, HashWait: 20 * time.Millisecond})
	ctx := ctxT(t)

	// The first hash holds its slot until a sign-up has been refused; the
	// hook counts how many are inside a slot at once.
	var inside, most atomic.Int64
	var first sync.Once
	release := make(chan struct{})
	var releaseOnce sync.Once
	s.hashers.inSlot = func() {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		first.Do(func() {
			select {
			case <-release:
			case <-time.After(10 * time.Second): // no refusal came: the checks below fail
			}
		})
	}

	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = s.SignUp(ctx, fmt.Sprintf("rush%02d", i), "R", "password-rush")
			if errors.Is(errs[i], ErrBusy) {
				releaseOnce.Do(func() { close(release) })
			}
		}()
	}
	wg.Wait()

	if got := most.Load(); got != 1 {
		t.Errorf("%d hashing at once, want at most 1", got)
	}
	if got := s.hashers.peak.Load(); got != 1 {
		t.Errorf("the pool saw %d at once, want 1", got)
	}
	ok, busy := 0, 0
	for i, err := range errs {
		login := fmt.Sprintf("rush%02d", i)
		indexed := rdb.HExists(ctx, s.keys.loginIndex(), strings.ToLower(login)).Val()
		switch {
		case err == nil:
			ok++
			if !indexed {
				t.Errorf("%s signed up but is not in the login index", login)
			}
		case errors.Is(err, ErrBusy):
			busy++
			if indexed {
				t.Errorf("%s was refused but is in the login index", login)
			}
		default:
			t.Errorf("sign up %s: %v, want success or ErrBusy", login, err)
		}
	}
	if busy == 0 || ok == 0 {
		t.Fatalf("%d signed up and %d refused, want some of each", ok, busy)
	}
	users := 0
	for _, k := range scanKeys(t, s, rdb) {
		if strings.HasPrefix(k, s.keys.userPrefix()) && k != s.keys.userSeq() {
			users++
		}
	}
	if users != ok {
		t.Errorf("%d user hashes for %d sign-ups that succeeded", users, ok)
	}
	if n := rdb.HLen(ctx, s.keys.loginIndex()).Val(); n != int64(ok) {
		t.Errorf("login index holds %d, want %d", n, ok)
	}
	st := s.Counters()
	if got := st.HashesRefused.Load(); got != int64(busy) {
		t.Errorf("HashesRefused = %d, want %d", got, busy)
	}
	if got := st.PasswordHashes.Load(); got != int64(ok) {
		t.Errorf("PasswordHashes = %d, want %d", got, ok)
	}
}

// Passwords over bcrypt's 72 bytes work, every byte of them counts, and
// shorter ones are hashed as before.
func TestLongPasswords(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	long100 := strings.Repeat("0123456789", 10)
	long128 := strings.Repeat("abcdefgh", 16)
	for _, tc := range []struct{ login, password string }{
		{"long100", long100},
		{"long128", long128},
	} {
		if _, _, err := s.SignUp(ctx, tc.login, "L", tc.password); err != nil {
			t.Fatalf("sign up with %d bytes: %v", len(tc.password), err)
		}
		if _, _, err := s.SignIn(ctx, tc.login, tc.password, ""); err != nil {
			t.Fatalf("sign in with %d bytes: %v", len(tc.password), err)
		}
	}
	sameStart := long100[:72] + strings.Repeat("x", 28)
	if _, _, err := s.SignIn(ctx, "long100", sameStart, ""); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("another 100-byte password with the same first 72 bytes: %v, want invalid credentials", err)
	}
	if _, _, err := s.SignIn(ctx, "long100", long100[:72], ""); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("the first 72 bytes alone: %v, want invalid credentials", err)
	}

	// 72 bytes or fewer: plain bcrypt, as users made before have it.
	short := strings.Repeat("s", 72)
	u, _, err := s.SignUp(ctx, "short72", "S", short)
	if err != nil {
		t.Fatal(err)
	}
	hash := rdb.HGet(ctx, s.keys.user(u.ID), "password").Val()
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(short)); err != nil {
		t.Fatalf("a 72-byte password's hash is not plain bcrypt of it: %v", err)
	}
}
