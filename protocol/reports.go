package protocol

import "time"

// Report is a complaint about an account, as admins read it: who filed it,
// the account, the statuses it points at (those still there), why, and,
// once resolved, when and by whom.
type Report struct {
	ID       int64   `json:"id"`
	Reporter UserRef `json:"reporter"`
	Account  UserRef `json:"account"`
	// AccountSuspended says whether Account is suspended now.
	AccountSuspended bool       `json:"account_suspended"`
	Statuses         []Status   `json:"statuses"`
	Reason           string     `json:"reason"`
	Created          time.Time  `json:"created"`
	Resolved         *time.Time `json:"resolved"`
	ResolvedBy       *UserRef   `json:"resolved_by"`
}
