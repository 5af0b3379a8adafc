package presence

import (
	"context"
	"encoding/json"
	"fmt"

	"chorus/bus"
	"chorus/protocol"
)

// AnnounceFriendship tells a and b, on every instance, each other's
// presence: a follow has just made them friends, and their friends lists
// would otherwise learn of it only at the other's next coming or going.
// The social core calls it, through the function it is given at wiring,
// once the follow that made the friendship stands.
func (t *Tracker) AnnounceFriendship(ctx context.Context, a, b int64) error {
	uids := []int64{a, b}
	ps, err := t.Presences(ctx, uids)
	if err != nil {
		return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
	}
	msgs := make([]bus.Message, 2)
	for i, uid := range uids {
		user := protocol.UserRef{ID: uid}
		if t.opts.Profile != nil {
			if user.Login, user.Name, err = t.opts.Profile(ctx, uid); err != nil {
				return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
			}
		}
		frame, err := json.Marshal(protocol.PresenceFrame{
			Type: protocol.TypePresence, User: user, Online: ps[i].Online, LastSeen: ps[i].LastSeen,
		})
		if err != nil {
			return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
		}
		// The frame about one goes to the other.
		msgs[i] = bus.Message{Channel: t.bus.UserChannel(uids[1-i]), Payload: frame}
	}
	if err := t.bus.PublishBatch(ctx, msgs); err != nil {
		return fmt.Errorf("announce friendship of %d and %d: %w", a, b, err)
	}
	return nil
}
