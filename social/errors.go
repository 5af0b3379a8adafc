package social

import (
	"errors"
	"fmt"
)

// Sentinel errors the edge maps to API error codes.
var (
	ErrNotFound           = errors.New("not found")
	ErrLoginTaken         = errors.New("login taken")
	ErrInvalidCredentials = errors.New("invalid credentials")
	ErrRateLimited        = errors.New("too many failed sign-ins")
	ErrNotOwner           = errors.New("not the owner")
	ErrUnauthenticated    = errors.New("unknown or expired session")
	ErrSelfFollow         = errors.New("cannot follow yourself")
)

// InvalidError reports an input that breaks a rule; Field names the input.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Message) }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}
