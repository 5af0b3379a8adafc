// Package social keeps users, sessions, follows, statuses and timelines in
// Redis: push fan-out to followers' home timelines, as in "Redis in Action"
// chapter 8 and Retwis. It knows nothing of HTTP or WebSockets.
package social

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
)

// Defaults for Options fields left zero.
const (
	DefaultHomeSize       = 1000
	DefaultGlobalSize     = 1000
	DefaultFanoutPassSize = 1000
	DefaultRefillBelow    = 750
	DefaultRefillStep     = 50
	DefaultSessionTTL     = 30 * 24 * time.Hour
	DefaultJobClaimIdle   = 30 * time.Second
	DefaultBcryptCost     = 10
	maxLoginFailures      = 10
	loginFailureWindow    = 10 * time.Minute
)

// Options tune a Service. The zero value of every field means its default.
type Options struct {
	Prefix         string        // key prefix, "chorus:" in production
	HomeSize       int           // statuses kept in a home timeline
	GlobalSize     int           // statuses kept in the global timeline
	FanoutPassSize int           // followers reached per fan-out pass
	RefillBelow    int           // a home timeline smaller than this after an unfollow is refilled
	RefillStep     int           // followees read per refill pass
	SessionTTL     time.Duration // lifetime of a session token
	JobClaimIdle   time.Duration // a job untouched this long is taken over by another worker
	BcryptCost     int           // cost of password hashes
}

func (o *Options) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.HomeSize, DefaultHomeSize)
	def(&o.GlobalSize, DefaultGlobalSize)
	def(&o.FanoutPassSize, DefaultFanoutPassSize)
	def(&o.RefillBelow, DefaultRefillBelow)
	def(&o.RefillStep, DefaultRefillStep)
	def(&o.BcryptCost, DefaultBcryptCost)
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.JobClaimIdle <= 0 {
		o.JobClaimIdle = DefaultJobClaimIdle
	}
}

// Service is the social core on one Redis.
type Service struct {
	rdb       redis.UniversalClient
	opts      Options
	keys      keys
	dummyHash []byte // compared against for unknown logins
}

// New returns a Service using rdb under the options' key prefix.
func New(rdb redis.UniversalClient, opts Options) *Service {
	opts.fill()
	dummy, err := bcrypt.GenerateFromPassword([]byte("no such user"), opts.BcryptCost)
	if err != nil {
		panic(fmt.Sprintf("social: bcrypt cost %d: %v", opts.BcryptCost, err))
	}
	return &Service{rdb: rdb, opts: opts, keys: keys{prefix: opts.Prefix}, dummyHash: dummy}
}

// UserChannel is the pub/sub channel that carries live events for one user:
// every frame published there goes to each of that user's open connections.
func (s *Service) UserChannel(uid int64) string { return s.keys.userChannel(uid) }

// FriendsKey is the sorted set of uid's friends (mutual follows), for the
// presence script to intersect with.
func (s *Service) FriendsKey(uid int64) string { return s.keys.friends(uid) }

// Ping reports whether Redis answers.
func (s *Service) Ping(ctx context.Context) error {
	return s.rdb.Ping(ctx).Err()
}

func unixMilli(s string) time.Time {
	ms, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(ms).UTC()
}

// now reads the clock from Redis so that instances with skewed clocks agree.
func (s *Service) now(ctx context.Context) (time.Time, error) {
	t, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("redis time: %w", err)
	}
	return t.UTC(), nil
}
