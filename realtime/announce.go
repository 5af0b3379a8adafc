package realtime

import (
	"context"
	"encoding/json"
	"fmt"

	"chorus/protocol"
	"chorus/social"
)

// AnnounceFriendship tells a and b, on every instance, each other's
// presence: a follow has just made them friends, and their friends lists
// would otherwise learn of it only at the other's next coming or going.
func (h *Hub) AnnounceFriendship(ctx context.Context, a, b int64) error {
	return h.announcePair(ctx, a, b, func(u social.User) (any, error) {
		online, lastSeen, err := h.presence.UserPresence(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		return protocol.PresenceFrame{Type: protocol.TypePresence, User: u.Ref(), Online: online, LastSeen: lastSeen}, nil
	})
}

// AnnounceFriendshipEnded tells a and b, on every instance, that an
// unfollow has ended their friendship: each leaves the other's friends list.
func (h *Hub) AnnounceFriendshipEnded(ctx context.Context, a, b int64) error {
	return h.announcePair(ctx, a, b, func(u social.User) (any, error) {
		return protocol.FriendRemoved{Type: protocol.TypeFriendRemoved, User: u.Ref()}, nil
	})
}

// announcePair publishes to each of a and b the frame about the other.
func (h *Hub) announcePair(ctx context.Context, a, b int64, about func(social.User) (any, error)) error {
	users, err := h.feed.Users(ctx, []int64{a, b})
	if err != nil {
		// A failure to read is no missing user: it stays what it is.
		return fmt.Errorf("announce to %d and %d: %w", a, b, err)
	}
	if len(users) != 2 {
		return fmt.Errorf("announce to %d and %d: %w", a, b, social.ErrUserNotFound)
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
		h.publish(ctx, pipe, h.feed.UserChannel(users[1-i].ID), raw)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("announce to %d and %d: %w", a, b, err)
	}
	return nil
}
