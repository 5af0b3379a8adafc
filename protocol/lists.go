package protocol

import "time"

// List is a named list of accounts that its owner made, with a timeline of
// their statuses. Members is how many accounts it holds.
type List struct {
	ID      int64     `json:"id"`
	Name    string    `json:"name"`
	Owner   UserRef   `json:"owner"`
	Members int64     `json:"members"`
	Created time.Time `json:"created"`
}
