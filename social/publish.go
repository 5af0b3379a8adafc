package social

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// publish queues (or sends) payload to channel on c: PUBLISH on one Redis,
// SPUBLISH on a cluster, where the realtime hub subscribes with SSUBSCRIBE
// and channels live in the slot of their hash tag.
func (s *Service) publish(ctx context.Context, c redis.Cmdable, channel string, payload any) *redis.IntCmd {
	if s.keys.cluster {
		return c.SPublish(ctx, channel, payload)
	}
	return c.Publish(ctx, channel, payload)
}

// publishCommand is the command a script publishes with, passed in ARGV:
// its channel must be in the slot of the script's keys on a cluster.
func (s *Service) publishCommand() string {
	if s.keys.cluster {
		return "SPUBLISH"
	}
	return "PUBLISH"
}
