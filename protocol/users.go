package protocol

import "time"

// User is a user's public profile.
type User struct {
	ID        int64     `json:"id"`
	Login     string    `json:"login"`
	Name      string    `json:"name"`
	Followers int64     `json:"followers"`
	Following int64     `json:"following"`
	Posts     int64     `json:"posts"`
	Signup    time.Time `json:"signup"`
}

// UserRef is the short form of a user, in frames about someone:
// {id, login, name}.
type UserRef struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name"`
}

// Ref is u's short form.
func (u User) Ref() UserRef { return UserRef{ID: u.ID, Login: u.Login, Name: u.Name} }

// Presence is whether a user is online, and when they were last active;
// LastSeen is nil (JSON null, never missing) for a user never seen.
type Presence struct {
	Online   bool       `json:"online"`
	LastSeen *time.Time `json:"last_seen"`
}

// UserView is a user as the API shows it to one viewer: the profile, and,
// where the viewer may see them, the user's presence (to the user and their
// friends only) and the follows between the two (to a signed-in viewer).
// Fields left nil are left out.
type UserView struct {
	User
	*Presence
	YouFollow  *bool `json:"you_follow,omitempty"`
	FollowsYou *bool `json:"follows_you,omitempty"`
}

// OnlineFriend is one item of a user's online friends: in the ready frame
// and in GET /friends/online.
type OnlineFriend struct {
	User     UserRef   `json:"user"`
	LastSeen time.Time `json:"last_seen"`
}

// Status is one posted message.
type Status struct {
	ID      int64     `json:"id"`
	UID     int64     `json:"uid"`
	Login   string    `json:"login"`
	Name    string    `json:"name,omitempty"` // the author's, as it was at posting
	Message string    `json:"message"`
	Posted  time.Time `json:"posted"`
}
