// Package social keeps users, sessions, follows, statuses and timelines in
// Redis: push fan-out to followers' home timelines, as in "Redis in Action"
// chapter 8 and Retwis. It knows nothing of HTTP or WebSockets.
package social

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"chorus/bus"
	"chorus/internal/slots"
	"chorus/protocol"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
)

// Defaults for Options fields left zero.
const (
	DefaultHomeSize            = 1000
	DefaultGlobalSize          = 1000
	DefaultFanoutPassSize      = 1000
	DefaultRefillBelow         = 750
	DefaultRefillStep          = 50
	DefaultRefillPassStatuses  = 250
	DefaultSessionTTL          = 30 * 24 * time.Hour
	DefaultJobClaimIdle        = 30 * time.Second
	DefaultConsumerIdle        = 10 * time.Minute
	DefaultBcryptCost          = 10
	DefaultSignInFailures      = 10
	DefaultSignInFailureWindow = 10 * time.Minute
	DefaultSignInAccountLimit  = 100
	DefaultSignInAccountWindow = time.Hour
	DefaultHashWait            = 2 * time.Second
	DefaultInactiveAfter       = 7 * 24 * time.Hour
	DefaultPullThreshold       = 10_000
	DefaultPulledStatuses      = 20_000
	DefaultMaxSessionsPerUser  = 100
	DefaultMaxFollowing        = 5_000
)

// DefaultPasswordHashers is the default of Options.PasswordHashers: half the
// processors, so that password hashing cannot take them all.
func DefaultPasswordHashers() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// Options tune a Service. Each default is the Default constant of the
// field's name, applied by fill to a field left zero (or, where the field
// says so, negative); cmd/chorus takes its flags' defaults from the same
// constants.
type Options struct {
	Prefix             string        // key prefix, "chorus:" in production; empty: none
	HomeSize           int           // statuses kept in a home timeline; 0: DefaultHomeSize
	GlobalSize         int           // statuses kept in the global timeline; 0: DefaultGlobalSize
	FanoutPassSize     int           // followers reached per fan-out pass; 0: DefaultFanoutPassSize
	RefillBelow        int           // a home timeline smaller than this after an unfollow is refilled; 0: DefaultRefillBelow
	RefillStep         int           // most followees one refill pass looks at; 0: DefaultRefillStep
	RefillPassStatuses int           // most statuses one refill pass copies; 0: DefaultRefillPassStatuses
	SessionTTL         time.Duration // lifetime of a session token; 0: DefaultSessionTTL
	JobClaimIdle       time.Duration // a job untouched this long is taken over by another worker; 0: DefaultJobClaimIdle
	ConsumerIdle       time.Duration // a job-group consumer idle this long, with nothing pending, is removed; 0: DefaultConsumerIdle
	BcryptCost         int           // cost of password hashes; 0: DefaultBcryptCost

	// SignInFailures is how many sign-ins for one user from one address
	// have their password checked within SignInFailureWindow, counted from
	// the first; later ones are refused with a *RateLimitError until the
	// window ends, and a right password starts the count again. Zero:
	// DefaultSignInFailures in DefaultSignInFailureWindow.
	SignInFailures      int
	SignInFailureWindow time.Duration

	// SignInAccountLimit is how many sign-ins for one user, from all the
	// addresses it has not signed in from lately together, have their
	// password checked within SignInAccountWindow, counted from the first;
	// later ones from such addresses are refused with a *RateLimitError
	// (Account set) until the window ends, while the addresses it signed in
	// from lately (see knownAddresses) may still sign in. A right password
	// takes its attempt back. Zero: DefaultSignInAccountLimit in
	// DefaultSignInAccountWindow.
	SignInAccountLimit  int
	SignInAccountWindow time.Duration

	// PasswordHashers is how many bcrypt hashes or comparisons run at once
	// (zero: DefaultPasswordHashers()); a request waits up to HashWait (zero:
	// DefaultHashWait) for a turn, then gets ErrBusy.
	PasswordHashers int
	HashWait        time.Duration

	// PullThreshold is the follower count, or count of lists holding them,
	// from which an author's statuses are no longer pushed to followers'
	// home timelines or to lists: readers pull them from the author's
	// profile timeline, merged by id. An author who reaches it stays
	// pulled. Zero: DefaultPullThreshold; negative: never.
	PullThreshold int

	// PulledStatuses is how many of the newest statuses of pulled authors
	// the site keeps in one sorted set, which the home reads of those who
	// follow more than a few pulled authors scan (see HomeTimeline): older
	// ones stay in their authors' profiles but leave those readers' home
	// timelines. Zero: DefaultPulledStatuses.
	PulledStatuses int

	// Registrations says who may sign up: RegistrationsOpen (""),
	// RegistrationsApproval (an account waits for an admin's approval
	// before it can sign in) or RegistrationsClosed (nobody).
	Registrations string

	// Admins are the logins (matched ignoring case) that may act as
	// admins: approve sign-ups, read the audit log. Empty: nobody.
	Admins []string

	// MaxSessionsPerUser is how many sessions one user holds at once: a
	// sign-in past it ends the oldest (after taking out those that ended).
	// It bounds the index a password change reads. Zero:
	// DefaultMaxSessionsPerUser.
	MaxSessionsPerUser int

	// MaxFollowing is how many accounts one user may follow: a follow past
	// it is refused (ErrTooManyFollowing). It bounds what grows with a
	// user's follows: their friends (whom each presence change and name
	// change of theirs reaches), the pulled authors their streams listen
	// to, the rebuild of their home. Zero: DefaultMaxFollowing.
	MaxFollowing int

	// InactiveAfter is how long a user may go without activity (a signed-in
	// request, or a connection presence holds) before posts stop being
	// pushed to their home timeline; the first request when they come back
	// rebuilds it. Zero: DefaultInactiveAfter; negative: never.
	InactiveAfter time.Duration

	// ConnectedKey is presence's sorted set of the users connected now: a
	// fan-out publishes live frames to those only, and counts them active.
	// Empty: every follower counts as connected.
	ConnectedKey string

	// InstancesKey is presence's sorted set of the instances that hold
	// streams: on one Redis a fan-out sends its frames for many users in one
	// message only while each of them is marked as reading the frames
	// channel (bus.FramesReadersKey; an instance of an older build is not).
	// Empty: whenever the instances reading it are few enough (push.lua).
	InstancesKey string

	// FriendsMirror names presence's copy of uid's friend set, which
	// follows and unfollows keep equal to the friend set (FriendsKey): on a
	// Redis Cluster presence reads the mirror, in its own slot
	// (presence.FriendsMirrorKey). Nil: there is no mirror (one Redis,
	// where presence reads the friend set itself).
	FriendsMirror func(uid int64) string

	// Befriended is told of each follow that makes two users friends, once
	// it stands, to introduce them to each other's streams (the wiring
	// gives presence's AnnounceFriendship). Its failure is logged: the
	// follow stands. Nil: nobody is told.
	Befriended func(ctx context.Context, a, b int64) error

	// ProfileChanged is told of a user's new name, with the profile frame
	// that tells of it, to pass the frame on to the user's friends
	// connected now (the wiring gives presence's AnnounceProfile). Its
	// failure is logged: the name is changed. Nil: nobody is told.
	ProfileChanged func(ctx context.Context, user protocol.UserRef, frame []byte) error

	// AccountDeleted is told of an account whose deletion is finishing, to
	// forget its presence (the wiring gives presence's Forget). Its failure
	// fails the deletion's pass, which a worker runs again. Nil: nobody is
	// told.
	AccountDeleted func(ctx context.Context, uid int64) error

	// Logger takes the failures of work nobody waits for (an inline
	// fan-out pass a worker will retry, a frame that tells of a change
	// made); nil is slog.Default().
	Logger *slog.Logger
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
	if o.PullThreshold == 0 {
		o.PullThreshold = DefaultPullThreshold
	}
	def(&o.PulledStatuses, DefaultPulledStatuses)
	def(&o.MaxSessionsPerUser, DefaultMaxSessionsPerUser)
	def(&o.MaxFollowing, DefaultMaxFollowing)
	def(&o.RefillStep, DefaultRefillStep)
	def(&o.RefillPassStatuses, DefaultRefillPassStatuses)
	def(&o.BcryptCost, DefaultBcryptCost)
	def(&o.SignInFailures, DefaultSignInFailures)
	def(&o.SignInAccountLimit, DefaultSignInAccountLimit)
	def(&o.PasswordHashers, DefaultPasswordHashers())
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur(&o.SessionTTL, DefaultSessionTTL)
	defDur(&o.JobClaimIdle, DefaultJobClaimIdle)
	defDur(&o.ConsumerIdle, DefaultConsumerIdle)
	defDur(&o.SignInFailureWindow, DefaultSignInFailureWindow)
	defDur(&o.SignInAccountWindow, DefaultSignInAccountWindow)
	defDur(&o.HashWait, DefaultHashWait)
	if o.InactiveAfter == 0 {
		o.InactiveAfter = DefaultInactiveAfter
	}
}

// sessionUsersKept bounds the sessions whose user an instance remembers
// (about 100 bytes each): past it the least recently used is forgotten,
// its next post reads the session first, and its next request that notes
// its user's activity notes it in a round trip after the session's.
const sessionUsersKept = 65_536

// Service is the social core on one Redis.
type Service struct {
	rdb       redis.UniversalClient
	bus       *bus.Bus // the live frames' channels, and their publishing
	opts      Options
	keys      keys
	dummyHash []byte // compared against for unknown logins
	hashers   hashers
	touches   *touches
	stats     Stats
	// sessionUsers remembers whose each session seen lately is (session id
	// -> uid), which never changes while the session lives: a post checks
	// the session in the round trip that reads for it (PostAs), and on one
	// Redis a request notes its user's activity in the round trip that
	// checks the session (Authenticate, queueNote).
	sessionUsers *lru.Cache[string, int64]

	// afterQueue, when set, runs between queuing a post's or a deletion's
	// jobs (a status's or an account's) and writing it; tests use it to
	// widen that window. On one Redis, where a post's jobs are queued in
	// the round trip that writes its status, it runs before that round
	// trip.
	afterQueue func()
	// afterWrite, when set, runs between the round trip of a post that
	// wrote its status and sent its first page's frames (the second on
	// one Redis, the third on a cluster) and the next (on one Redis, the
	// pushes that follow them); tests use it to delete the status there.
	afterWrite func()
	// beforeRewrite, when set, runs between a post job's read and its
	// redo's writes (rewriteUnlessDeleted); tests use it to delete the
	// status there.
	beforeRewrite func(job)
	// afterRewrite, when set, runs after those writes; an error it returns
	// is the redo's, as a failed Redis call would be.
	afterRewrite func() error
	// afterUnclaim, when set, runs between the two steps of a repost's
	// take-back (dropRepostClaim) or of an unlike: the claim or the like,
	// then the notification.
	afterUnclaim func()
	// afterSuspendScript, when set, runs between a suspension's (or its
	// lifting's) script and its write of the admins' list.
	afterSuspendScript func()
	// beforeLikeWrites, when set, runs in a like between its reads (the
	// status, the liker) and its writes.
	beforeLikeWrites func()
	// afterLikeWrites, when set, runs after a like's or an unlike's writes
	// of the likes and the liker's index, before it reads the likes again.
	afterLikeWrites func()
	// betweenFollowReads, when set, runs in a follow between its first
	// read (the followee there, not deleted) and its writes.
	betweenFollowReads func()
	// betweenFollowSides, when set, runs in a follow between its
	// follower's side and its followee's.
	betweenFollowSides func()
	// betweenRelationReads, when set, runs in a mute between its read of
	// the muted user and its write.
	betweenRelationReads func()
	// betweenBlockSides, when set, runs in a block's or an unblock's sync
	// of the blocked user's side, between its read of the blocker's side
	// and its write (syncBlockedBy).
	betweenBlockSides func()
	// beforeTakeBack, when set, runs in notifyWhile between a look that
	// found the notification's cause gone and the notification's
	// take-back.
	beforeTakeBack func()
	pulledScan     int // pulled statuses one home read scans a round (see mergePulled)
}

// New returns a Service using rdb under the options' key prefix.
func New(rdb redis.UniversalClient, opts Options) *Service {
	opts.fill()
	dummy, err := bcrypt.GenerateFromPassword([]byte("no such user"), opts.BcryptCost)
	if err != nil {
		panic(fmt.Sprintf("social: bcrypt cost %d: %v", opts.BcryptCost, err))
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Service{
		rdb: rdb, bus: bus.New(rdb, opts.Prefix), opts: opts, keys: keys{prefix: opts.Prefix, cluster: slots.Cluster(rdb)}, dummyHash: dummy,
		hashers: newHashers(opts.PasswordHashers, opts.HashWait), pulledScan: defaultPulledScan,
	}
	s.touches = newTouches(s.touchEvery())
	s.sessionUsers, _ = lru.New[string, int64](sessionUsersKept)
	return s
}

// Stats are counters a Service keeps for the edge to export as metrics.
type Stats struct {
	PasswordChecks   atomic.Int64 // bcrypt comparisons run (sign-ins, unknown logins included)
	PasswordHashes   atomic.Int64 // bcrypt hashes made (sign-ups)
	HashesRefused    atomic.Int64 // sign-ups and sign-ins answered ErrBusy
	SignInsThrottled atomic.Int64 // sign-ins answered with a *RateLimitError for their address
	SignInsCeiling   atomic.Int64 // sign-ins answered with a *RateLimitError for their account (Account set)
	SessionsEvicted  atomic.Int64 // sessions ended because their user signed in past MaxSessionsPerUser
}

// Counters returns the service's live counters.
func (s *Service) Counters() *Stats { return &s.stats }

// UserChannel is the bus's channel of live frames for one user (see
// bus.Bus.UserChannel), for those who listen outside the hub: tools, tests.
func (s *Service) UserChannel(uid int64) string { return s.bus.UserChannel(uid) }

// GlobalChannel is the channel of the global timeline's new statuses and
// deletions (bus.Bus.GlobalChannel).
func (s *Service) GlobalChannel() string { return s.bus.GlobalChannel() }

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

// Pipeline is a pipeline on the service's Redis, for a caller that counts
// keys of its own there in one round trip (the edge's rate limits).
func (s *Service) Pipeline() redis.Pipeliner { return s.rdb.Pipeline() }

// MaxFollowing is how many accounts one user may follow (Options).
func (s *Service) MaxFollowing() int { return s.opts.MaxFollowing }
