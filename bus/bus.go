// Package bus carries every live frame between Chorus's instances on Redis
// pub/sub: it names the channels (hash-tagged on a Redis Cluster, in the
// slot of the user's keys), publishes on them (PUBLISH on one Redis,
// SPUBLISH on a cluster, or the command a Lua script is given to publish
// with itself), and subscribes to them (one connection, or sharded pub/sub
// with a connection per master). No other package knows whether Redis is a
// cluster when it publishes or subscribes.
//
// The packages whose data changed publish what follows from it (social,
// presence); realtime's hub alone subscribes, and routes what comes to its
// connections (the "hub" in this package's comments), and publishes only
// the frames a client posts by REST for one of its streams. It imports only
// internal/slots and go-redis.
package bus

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"chorus/internal/slots"

	"github.com/redis/go-redis/v9"
)

// Bus is the pub/sub of one deployment: its channels under a key prefix, on
// one Redis or a Redis Cluster.
type Bus struct {
	rdb     redis.UniversalClient
	prefix  string
	cluster bool // sharded pub/sub, and hash tags in the channel names
}

// New returns the bus on rdb, its channels under prefix.
func New(rdb redis.UniversalClient, prefix string) *Bus {
	return &Bus{rdb: rdb, prefix: prefix, cluster: slots.Cluster(rdb)}
}

// UserChannel is the channel of every frame for uid's streams, published
// by whichever instance makes it, and subscribed to by the instances that
// hold uid's streams. On a cluster it is in the slot of uid's keys
// ("events:user:{42}"), so a script on them can publish on it.
func (b *Bus) UserChannel(uid int64) string {
	return b.prefix + userChannel + slots.Tag(b.cluster, strconv.FormatInt(uid, 10))
}

// userChannel is what a user's channel holds between the prefix and the
// user's id (UserChannel, UserChannelStart, AppendUserChannel).
const userChannel = "events:user:"

// AuthorChannel is the channel of a pulled author's statuses and their
// deletions, published once each for all their followers: the instances
// subscribe to it on behalf of their streams' users who follow uid.
func (b *Bus) AuthorChannel(uid int64) string {
	return b.prefix + "events:author:" + slots.Tag(b.cluster, strconv.FormatInt(uid, 10))
}

// GlobalChannel is the channel of the global timeline's new statuses and
// deletions, published once each for the whole site: the instances
// subscribe to it while any of their streams watches the global timeline.
// On a cluster it is one channel, so its messages go through the master of
// its slot alone.
func (b *Bus) GlobalChannel() string {
	return b.prefix + "events:" + slots.Tag(b.cluster, "global")
}

// ThreadChannel is the channel of a conversation's new replies and
// deletions, thread its first status's id: the instances subscribe to it
// while any of their streams watches the thread. On a cluster its slot is
// the thread id's (hash-tagged), so threads spread over the masters.
func (b *Bus) ThreadChannel(thread int64) string {
	return b.prefix + threadChannel + slots.Tag(b.cluster, strconv.FormatInt(thread, 10))
}

// threadChannel is what a thread's channel holds between the prefix and
// the thread's id.
const threadChannel = "events:thread:"

// IsThreadChannel reports whether channel is a ThreadChannel.
func (b *Bus) IsThreadChannel(channel string) bool {
	rest, ok := strings.CutPrefix(channel, b.prefix)
	return ok && strings.HasPrefix(rest, threadChannel)
}

// FramesChannel is, on one Redis, the channel of a frame for many users at
// once: a fan-out's status frame, published once for a whole call of its
// push script rather than once on each follower's channel. A message names
// the users, then carries the frame (SplitFrames), and every instance's hub
// subscribes to it before any user's channel, and hands the frame to those
// of the users it holds streams of, as if it had come on their channels.
// On a cluster, where each user's channel is in their slot, it is "": each
// frame goes on its user's channel.
func (b *Bus) FramesChannel() string {
	if b.cluster {
		return ""
	}
	return b.prefix + "events:frames"
}

// FramesReadersKey names, on one Redis, the sorted set of the instances
// whose hub reads FramesChannel (presence's instance id -> until when its
// mark holds, unix ms, Redis's clock): a fan-out sends a frame for many
// users there only while every instance in presence's set (those that
// hold streams) is marked in it (an instance of a build before the
// channel reads only users' channels). A hub that shut down marks itself
// for long past its lease: it reads nothing more, so no frame is lost to
// it. "" on a cluster.
func (b *Bus) FramesReadersKey() string {
	if b.cluster {
		return ""
	}
	return b.prefix + "events:frames:readers"
}

// SplitFrames reads a message of FramesChannel: the users it is for, their
// ids separated by single spaces, a newline, and the frame. ok is false for
// a message not made that way.
func SplitFrames(msg string) (uids, frame string, ok bool) {
	uids, frame, ok = strings.Cut(msg, "\n")
	return uids, frame, ok && uids != "" && frame != ""
}

// UserChannelStart is, on one Redis, what every UserChannel starts with,
// the user's id ending it: a script that publishes by ids (FramesChannel)
// names the channels with it. "" on a cluster.
func (b *Bus) UserChannelStart() string {
	if b.cluster {
		return ""
	}
	return b.prefix + userChannel
}

// AppendUserChannel appends to dst the name of UserChannel(uid), uid given
// in decimal: a hub names the channels of a FramesChannel message's users
// with it, in a buffer of its own.
func (b *Bus) AppendUserChannel(dst []byte, uid string) []byte {
	dst = append(dst, b.prefix...)
	dst = append(dst, userChannel...)
	return append(dst, slots.Tag(b.cluster, uid)...)
}

// Command is what a Lua script publishes with, passed to it in ARGV beside
// the channel: PUBLISH, or SPUBLISH on a cluster, where the channel must be
// in the slot of the script's keys.
func (b *Bus) Command() string {
	if b.cluster {
		return "SPUBLISH"
	}
	return "PUBLISH"
}

// Publish sends payload to the subscribers of channel on every instance.
func (b *Bus) Publish(ctx context.Context, channel string, payload any) error {
	if err := b.Queue(ctx, b.rdb, channel, payload).Err(); err != nil {
		return fmt.Errorf("publish on %s: %w", channel, err)
	}
	return nil
}

// Queue publishes payload on channel through c: the bus's client, or a
// pipeline of it, where the publish waits for the pipeline's Exec and a
// cluster's pipeline sends it to the master of the channel's slot.
func (b *Bus) Queue(ctx context.Context, c redis.Cmdable, channel string, payload any) *redis.IntCmd {
	if b.cluster {
		return c.SPublish(ctx, channel, payload)
	}
	return c.Publish(ctx, channel, payload)
}

// Message is one payload for one channel, in a batch.
type Message struct {
	Channel string
	Payload any // a []byte or string of JSON, as the frame goes on the wire
}

// PublishBatch publishes msgs in one pipeline: on a cluster, one per master
// of their channels' slots, which the client sends side by side.
func (b *Bus) PublishBatch(ctx context.Context, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	pipe := b.rdb.Pipeline()
	for _, m := range msgs {
		b.Queue(ctx, pipe, m.Channel, m.Payload)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish on %d channels: %w", len(msgs), err)
	}
	return nil
}
