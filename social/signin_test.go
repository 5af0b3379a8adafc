package social

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// Guesses spread over many addresses, each under its own limit, meet the
// user's ceiling: only SignInAccountLimit of them reach bcrypt, the right
// password from a new address after that is refused like the others, and the
// owner still signs in from the address they signed in from before.
func TestSignInCeilingOverAddresses(t *testing.T) {
	t.Parallel()
	const perAddress, ceiling = 10, 20
	s, rdb := newService(t, Options{SignInFailures: perAddress, SignInAccountLimit: ceiling, PasswordHashers: 2, HashWait: time.Minute})
	ctx := ctxT(t)
	const right, home = "the-right-password", "198.51.100.7"
	victim, _, err := s.SignUp(ctx, "victim", "V", right)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SignIn(ctx, "victim", right, home); err != nil {
		t.Fatalf("the owner at home: %v", err)
	}
	checksBefore := s.Counters().PasswordChecks.Load()

	// 20 addresses x 10 guesses, each address under its own limit.
	const addresses = 20
	errs := make(chan error, addresses*perAddress)
	var wg sync.WaitGroup
	for a := range addresses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range perAddress {
				_, _, err := s.SignIn(ctx, "victim", fmt.Sprintf("guess-%02d-%02d", a, g), fmt.Sprintf("203.0.113.%d", a))
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	wrong, ceilinged := 0, 0
	for err := range errs {
		var rl *RateLimitError
		switch {
		case errors.Is(err, ErrInvalidCredentials):
			wrong++
		case errors.As(err, &rl) && rl.Account && rl.RetryAfter > 0 && rl.RetryAfter <= s.opts.SignInAccountWindow:
			ceilinged++
		default:
			t.Fatalf("a guess: %v, want invalid credentials or the account's ceiling", err)
		}
	}
	if wrong != ceiling || ceilinged != addresses*perAddress-ceiling {
		t.Errorf("%d guesses checked and %d refused by the ceiling, want %d and %d", wrong, ceilinged, ceiling, addresses*perAddress-ceiling)
	}
	if got := s.Counters().PasswordChecks.Load() - checksBefore; got != ceiling {
		t.Errorf("%d passwords compared, want %d: a refused guess costs no bcrypt work", got, ceiling)
	}
	if got := s.Counters().SignInsCeiling.Load(); got != int64(ceilinged) {
		t.Errorf("SignInsCeiling = %d, want %d", got, ceilinged)
	}
	var rl *RateLimitError
	if _, _, err := s.SignIn(ctx, "victim", right, "192.0.2.200"); !errors.As(err, &rl) || !rl.Account {
		t.Fatalf("the right password from a new address after the ceiling: %v, want the account's ceiling", err)
	}
	if _, _, err := s.SignIn(ctx, "victim", right, home); err != nil {
		t.Fatalf("the owner at home after the attack: %v", err)
	}
	// The owner's address is kept hashed, not as it is.
	known, err := rdb.ZRange(ctx, s.keys.signInKnown(victim.ID), 0, -1).Result()
	if err != nil || len(known) != 1 || known[0] != addressID(home) {
		t.Fatalf("known addresses %v (%v), want only the hash of %s", known, err, home)
	}
}

// A right password from a new address takes its attempt back from the
// ceiling and makes the address known; a user keeps its newest
// knownAddresses addresses only, each under its expiry.
func TestSignInKnownAddresses(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{SignInAccountLimit: 3})
	ctx := ctxT(t)
	const right = "the-right-password"
	u, _, err := s.SignUp(ctx, "traveller", "T", right)
	if err != nil {
		t.Fatal(err)
	}
	const n = knownAddresses + 5
	for i := range n {
		if _, _, err := s.SignIn(ctx, "traveller", right, fmt.Sprintf("192.0.2.%d", i)); err != nil {
			t.Fatalf("sign-in %d from a new address: %v", i, err)
		}
	}
	if got, _ := rdb.Get(ctx, s.keys.signInUnknown(u.ID)).Int(); got != 0 {
		t.Errorf("unknown addresses' count after %d right passwords = %d, want 0", n, got)
	}
	known, err := rdb.ZRange(ctx, s.keys.signInKnown(u.ID), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := n - knownAddresses; i < n; i++ {
		want = append(want, addressID(fmt.Sprintf("192.0.2.%d", i)))
	}
	slices.Sort(known)
	slices.Sort(want)
	if !slices.Equal(known, want) {
		t.Errorf("known addresses %v, want the hashes of the newest %d", known, knownAddresses)
	}
	if ttl := rdb.PTTL(ctx, s.keys.signInKnown(u.ID)).Val(); ttl <= 0 || ttl > knownAddressTTL {
		t.Errorf("known addresses expire in %v, want within %v", ttl, knownAddressTTL)
	}
	// The oldest, no longer known, meets the ceiling again; the newest do
	// not count towards it.
	for range 3 {
		if _, _, err := s.SignIn(ctx, "traveller", "wrong-password", "192.0.2.0"); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("wrong password from a forgotten address: %v", err)
		}
	}
	var rl *RateLimitError
	if _, _, err := s.SignIn(ctx, "traveller", right, "192.0.2.0"); !errors.As(err, &rl) || !rl.Account {
		t.Fatalf("a forgotten address past the ceiling: %v, want the account's ceiling", err)
	}
	if _, _, err := s.SignIn(ctx, "traveller", "wrong-password", fmt.Sprintf("192.0.2.%d", n-1)); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password from a known address past the ceiling: %v, want invalid credentials", err)
	}
}
