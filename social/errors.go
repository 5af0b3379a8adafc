package social

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors the edge maps to API error codes.
var (
	ErrUserNotFound       = errors.New("no such user")
	ErrStatusNotFound     = errors.New("no such status")
	ErrLoginTaken         = errors.New("login taken")
	ErrInvalidCredentials = errors.New("invalid credentials")
	ErrRateLimited        = errors.New("too many failed sign-ins")
	ErrBusy               = errors.New("busy checking passwords; try again shortly")
	ErrNotOwner           = errors.New("not the owner")
	ErrUnauthenticated    = errors.New("unknown or expired session")
	ErrSelfFollow         = errors.New("cannot follow yourself")
	ErrListNotFound       = errors.New("no such list")
	ErrTooManyLists       = fmt.Errorf("a user may own at most %d lists", MaxListsPerUser)
	ErrListFull           = fmt.Errorf("a list may hold at most %d members", MaxListMembers)
	ErrNotFollowing       = errors.New("only accounts the owner follows can be put in their lists")
	ErrSelfBlock          = errors.New("cannot block or mute yourself")
	ErrBlocked            = errors.New("one of the two blocks the other")
	ErrTooManyBlocks      = fmt.Errorf("a user may block at most %d accounts", MaxBlocks)
	ErrTooManyMutes       = fmt.Errorf("a user may mute at most %d accounts", MaxMutes)
	ErrTooManyFollowing   = errors.New("a user may follow at most Options.MaxFollowing accounts")

	ErrRegistrationsClosed = errors.New("registrations are closed")
	ErrApprovalPending     = errors.New("the account waits for an admin's approval")
	ErrNotAdmin            = errors.New("not an admin")
	ErrSuspendAdmin        = errors.New("an admin cannot be suspended")
)

// ErrNotListOwner refuses a change to someone else's list; errors.Is(err,
// ErrNotOwner) matches it too.
var ErrNotListOwner = fmt.Errorf("%w of the list", ErrNotOwner)

// InvalidError reports an input that breaks a rule; Field names the input.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Message) }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// RateLimitError refuses a sign-in after too many attempts for one user from
// one address, or (Account) from the addresses it has not signed in from
// lately; errors.Is(err, ErrRateLimited) matches it.
type RateLimitError struct {
	RetryAfter time.Duration // until the attempts' window ends
	Account    bool          // the user's ceiling over unknown addresses refused it, not the address's own count
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%v: retry after %v", ErrRateLimited, e.RetryAfter)
}

// Unwrap makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }
