package social

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// scanKeys returns every key under the service's prefix, from every
// master on a cluster.
func scanKeys(tb testing.TB, s *Service, rdb redis.UniversalClient) []string {
	tb.Helper()
	return redistest.Keys(tb, rdb, s.keys.prefix+"*")
}

// Concurrent guesses are counted before any password is checked: only the
// first SignInFailures reach bcrypt, the right password among the rest is
// refused like the others, and the owner elsewhere signs in all along.
func TestSignInThrottlesGuessesFromOneAddress(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{PasswordHashers: 2, HashWait: time.Minute})
	ctx := ctxT(t)
	const right = "the-right-password"
	victim, _, err := s.SignUp(ctx, "victim", "V", right)
	if err != nil {
		t.Fatal(err)
	}
	const attacker, owner = "203.0.113.9", "198.51.100.7"
	counter := s.keys.signInFailures(victim.ID, attacker)
	window := s.opts.SignInFailureWindow

	const guesses = 200
	start := make(chan struct{})
	errs := make([]error, guesses)
	var wg sync.WaitGroup
	for i := range guesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			password := fmt.Sprintf("wrong-guess-%03d", i)
			if i == guesses-1 {
				// The right guess comes once the limit is reached, so that
				// it is not one of the attempts that may be checked.
				for n, _ := rdb.Get(ctx, counter).Int(); n < s.opts.SignInFailures; n, _ = rdb.Get(ctx, counter).Int() {
					time.Sleep(time.Millisecond)
				}
				password = right
			}
			_, _, errs[i] = s.SignIn(ctx, "VICTIM", password, attacker)
		}()
	}
	close(start)
	// The owner, elsewhere, signs in while the guesses come.
	if _, _, err := s.SignIn(ctx, "victim", right, owner); err != nil {
		t.Fatalf("the owner from another address during the attack: %v", err)
	}
	wg.Wait()

	invalid, limited := 0, 0
	for i, err := range errs {
		var rl *RateLimitError
		switch {
		case errors.Is(err, ErrInvalidCredentials):
			invalid++
		case errors.As(err, &rl) && errors.Is(err, ErrRateLimited):
			limited++
			if rl.RetryAfter <= 0 || rl.RetryAfter > window {
				t.Errorf("guess %d: retry after %v, want within (0, %v]", i, rl.RetryAfter, window)
			}
		default:
			t.Errorf("guess %d: %v, want invalid credentials or rate limited", i, err)
		}
	}
	if errs[guesses-1] == nil || !errors.Is(errs[guesses-1], ErrRateLimited) {
		t.Errorf("the right password past the limit: %v, want rate limited", errs[guesses-1])
	}
	limit := s.opts.SignInFailures
	if invalid != limit || limited != guesses-limit {
		t.Errorf("%d invalid and %d rate limited, want %d and %d", invalid, limited, limit, guesses-limit)
	}
	if n, err := rdb.Get(ctx, counter).Int(); err != nil || n != guesses {
		t.Errorf("attempt counter = %d (%v), want %d: every attempt counted", n, err, guesses)
	}
	if ttl := rdb.PTTL(ctx, counter).Val(); ttl <= 0 || ttl > window {
		t.Errorf("attempt counter expires in %v, want within (0, %v]", ttl, window)
	}
	st := s.Counters()
	// The attacker's first `limit` guesses and the owner's sign-in.
	if got, want := st.PasswordChecks.Load(), int64(limit+1); got != want {
		t.Errorf("%d passwords checked, want %d", got, want)
	}
	if got, want := st.SignInsThrottled.Load(), int64(guesses-limit); got != want {
		t.Errorf("%d sign-ins throttled, want %d", got, want)
	}
	if n := rdb.Exists(ctx, s.keys.signInFailures(victim.ID, owner)).Val(); n != 0 {
		t.Error("the owner's right password left a counter for their address")
	}
	if _, _, err := s.SignIn(ctx, "victim", right, owner); err != nil {
		t.Errorf("the owner after the attack: %v", err)
	}
}

// A right password clears its address's count; a wrong one after it starts
// a new count.
func TestSignInRightPasswordClearsItsCount(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{SignInFailures: 3})
	ctx := ctxT(t)
	u, _, err := s.SignUp(ctx, "forgetful", "F", "password-f")
	if err != nil {
		t.Fatal(err)
	}
	const addr = "2001:db8::1"
	counter := s.keys.signInFailures(u.ID, addr)
	for range 3 {
		if _, _, err := s.SignIn(ctx, "forgetful", "not-it-at-all", addr); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	if _, _, err := s.SignIn(ctx, "forgetful", "password-f", addr); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("fourth attempt with a limit of 3: %v, want rate limited", err)
	}
	rdb.Del(ctx, counter) // the window ends
	if _, _, err := s.SignIn(ctx, "forgetful", "not-it-at-all", addr); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, _, err := s.SignIn(ctx, "forgetful", "password-f", addr); err != nil {
		t.Fatalf("right password: %v", err)
	}
	if n := rdb.Exists(ctx, counter).Val(); n != 0 {
		t.Fatal("the counter outlived a right password")
	}
	if _, _, err := s.SignIn(ctx, "forgetful", "not-it-at-all", addr); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	if n, _ := rdb.Get(ctx, counter).Int(); n != 1 {
		t.Fatalf("counter after a wrong password = %d, want 1", n)
	}
}

// Failed sign-ins for logins that do not exist write nothing, and each costs
// one bcrypt comparison, as a known login's does.
func TestSignInUnknownLogins(t *testing.T) {
	t.Parallel()
	t.Run("one comparison", func(t *testing.T) {
		t.Parallel()
		s, _ := newService(t, Options{})
		if _, _, err := s.SignIn(ctxT(t), "nobody", "some-password", "192.0.2.1"); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("unknown login: %v, want invalid credentials", err)
		}
		if got := s.Counters().PasswordChecks.Load(); got != 1 {
			t.Fatalf("%d passwords checked for an unknown login, want 1", got)
		}
	})
	t.Run("no keys", func(t *testing.T) {
		t.Parallel()
		s, rdb := newService(t, Options{PasswordHashers: 2, HashWait: time.Minute})
		// Each sign-in checks a password: on a busy machine under the race
		// detector that is slow, so the deadline is far past the work.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		const n, workers = 400, 4
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					_, _, err := s.SignIn(ctx, fmt.Sprintf("ghost%04d", i), "password-guess", fmt.Sprintf("192.0.2.%d", i%256))
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if !errors.Is(err, ErrInvalidCredentials) {
				t.Fatalf("unknown login: %v, want invalid credentials", err)
			}
		}
		if keys := scanKeys(t, s, rdb); len(keys) != 0 {
			t.Fatalf("%d failed sign-ins for unknown logins left %d keys, e.g. %q", n, len(keys), keys[0])
		}
		if got := s.Counters().PasswordChecks.Load(); got != n {
			t.Fatalf("%d passwords checked for %d unknown logins, want %d", got, n, n)
		}
	})
}
