package protocol

import "time"

// User is a user's public profile.
type User struct {
	ID        int64     `json:"id"`
	Login     string    `json:"login"`
	Name      string    `json:"name"`
	Bio       string    `json:"bio"` // plain text, "" for none; never HTML
	Followers int64     `json:"followers"`
	Following int64     `json:"following"`
	Posts     int64     `json:"posts"`
	Signup    time.Time `json:"signup"`

	// Suspended is set on an account an admin suspended, as admins read
	// it; no one else reads a suspended account.
	Suspended bool `json:"suspended,omitempty"`
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
	Blocking   *bool `json:"blocking,omitempty"` // the signed-in viewer blocks them
	Muting     *bool `json:"muting,omitempty"`   // the signed-in viewer mutes them
}

// OnlineFriend is one item of a user's online friends: in the ready frame
// and in GET /friends/online.
type OnlineFriend struct {
	User     UserRef   `json:"user"`
	LastSeen time.Time `json:"last_seen"`
}

// Status is one posted message, or a repost: a timeline entry of its own
// (its own id, the reposter's uid, login and time, no message) carrying the
// status reposted in RepostOf.
type Status struct {
	ID       int64      `json:"id"`
	UID      int64      `json:"uid"`
	Login    string     `json:"login"`
	Name     string     `json:"name,omitempty"` // the author's, as it was at posting
	Message  string     `json:"message"`
	Posted   time.Time  `json:"posted"`
	ReplyTo  *StatusRef `json:"reply_to"` // the status answered, null for none; it may be deleted since
	Mentions []Mention  `json:"mentions"` // the users @mentioned, never null
	Replies  int64      `json:"replies"`
	Likes    int64      `json:"likes"`
	Reposts  int64      `json:"reposts"`

	// Liked and Reposted are the viewer's own state, for a signed-in viewer
	// only (left out otherwise).
	Liked    *bool `json:"liked,omitempty"`
	Reposted *bool `json:"reposted,omitempty"`

	RepostOf *Status `json:"repost_of,omitempty"` // a repost's original
}

// StatusRef names a status and its author: what a reply answers.
type StatusRef struct {
	ID    int64  `json:"id"`
	UID   int64  `json:"uid"`
	Login string `json:"login"`
}

// Mention is a user @mentioned in a status.
type Mention struct {
	UID   int64  `json:"uid"`
	Login string `json:"login"`
}

// The kinds of notification.
const (
	NotifyFollowed  = "followed"
	NotifyMentioned = "mentioned"
	NotifyReplied   = "replied"
	NotifyLiked     = "liked"
	NotifyReposted  = "reposted"
)

// Notification is something that happened to a user: someone followed
// them, mentioned them, replied to, liked or reposted their status. Status
// is the status concerned (the reply or the mention for those kinds, the
// user's own status for likes and reposts), null for a follow.
type Notification struct {
	ID      int64     `json:"id"`
	Type    string    `json:"type"`
	From    User      `json:"from"`
	Status  *Status   `json:"status"`
	Created time.Time `json:"created"`
}
