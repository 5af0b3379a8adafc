package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"chorus/presence"
	"chorus/social"
)

// presenceFrame is the presence frame as the hub sends it about a user who
// may never have been seen (LastSeen nil).
type presenceFrame struct {
	Type     string     `json:"type"`
	User     FriendUser `json:"user"`
	Online   bool       `json:"online"`
	LastSeen *time.Time `json:"last_seen"`
}

// AnnounceFriendship tells a and b, on every instance, each other's
// presence: a follow has just made them friends, and their friends lists
// would otherwise learn of it only at the other's next coming or going.
func (h *Hub) AnnounceFriendship(ctx context.Context, a, b int64) error {
	return h.announcePair(ctx, a, b, func(u social.User) (any, error) {
		online, lastSeen, err := h.presence.UserPresence(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		return presenceFrame{Type: presence.EventType, User: friendUser(u), Online: online, LastSeen: lastSeen}, nil
	})
}

// AnnounceFriendshipEnded tells a and b, on every instance, that an
// unfollow has ended their friendship: each leaves the other's friends list.
func (h *Hub) AnnounceFriendshipEnded(ctx context.Context, a, b int64) error {
	return h.announcePair(ctx, a, b, func(u social.User) (any, error) {
		return friendRemovedFrame{Type: "friend_removed", User: friendUser(u)}, nil
	})
}

type friendRemovedFrame struct {
	Type string     `json:"type"`
	User FriendUser `json:"user"`
}

func friendUser(u social.User) FriendUser { return FriendUser{ID: u.ID, Login: u.Login, Name: u.Name} }

// announcePair publishes to each of a and b the frame about the other.
func (h *Hub) announcePair(ctx context.Context, a, b int64, about func(social.User) (any, error)) error {
	users, err := h.feed.Users(ctx, []int64{a, b})
	if err != nil || len(users) != 2 {
		return fmt.Errorf("announce to %d and %d: %w", a, b, errors.Join(err, social.ErrNotFound))
	}
	pipe := h.rdb.Pipeline()
	for i, u := range users {
		frame, err := about(u)
		if err != nil {
			return fmt.Errorf("announce to %d and %d: %w", a, b, err)
		}
		raw, err := json.Marshal(frame)
		if err != nil {
			return fmt.Errorf("announce to %d and %d: %w", a, b, err)
		}
		pipe.Publish(ctx, h.feed.UserChannel(users[1-i].ID), raw)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("announce to %d and %d: %w", a, b, err)
	}
	return nil
}
