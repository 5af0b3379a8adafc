package social

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// User is a user's public profile, as the API shows it.
type User = protocol.User

// Limits on sign-up input.
const (
	MinPasswordBytes = 8
	MaxPasswordBytes = 128
	MaxNameRunes     = 64
)

var (
	loginPattern = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

	//go:embed create_user.lua
	createUserSource string
	createUserScript = newScript(createUserSource)

	//go:embed signin.lua
	signinSource string
	signinScript = newScript(signinSource)

	//go:embed signin_ok.lua
	signinOKSource string
	signinOKScript = newScript(signinOKSource)
)

var userFields = []string{"id", "login", "name", "followers", "following", "posts", "signup", "bio", "suspended", "deleted"}

// ValidLogin reports whether login has the form the API accepts.
func ValidLogin(login string) bool { return loginPattern.MatchString(login) }

func validateSignUp(login, name, password string) (string, error) {
	if !ValidLogin(login) {
		return "", invalid("login", "must be 3 to 32 letters, digits or underscores")
	}
	name, err := validateName(name, MaxNameRunes)
	if err != nil {
		return "", err
	}
	if err := validatePassword(login, password); err != nil {
		return "", err
	}
	return name, nil
}

// validatePassword checks a password about to be set for login: its length,
// and that it is neither one of the common passwords (NIST SP 800-63B) nor
// the login itself, which is the first thing anyone guesses.
func validatePassword(login, password string) error {
	switch {
	case len(password) < MinPasswordBytes || len(password) > MaxPasswordBytes:
		return invalid("password", "must be %d to %d bytes", MinPasswordBytes, MaxPasswordBytes)
	case commonPassword(password):
		return invalid("password", "is too common: it is on a list of passwords that attackers try first; choose another")
	case strings.EqualFold(password, login):
		return invalid("password", "must not be the login; choose another")
	}
	return nil
}

// validateName trims a name (a user's or a list's) and checks it: valid
// UTF-8, 1 to most characters, none forbidden.
func validateName(name string, most int) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case !utf8.ValidString(name):
		return "", invalid("name", "must be valid UTF-8")
	case name == "" || utf8.RuneCountInString(name) > most:
		return "", invalid("name", "must be 1 to %d characters", most)
	case strings.ContainsFunc(name, forbiddenInName):
		return "", invalid("name", "must not contain control characters, bidirectional formatting characters or invisible characters")
	}
	return name, nil
}

// forbiddenInName reports whether r may not appear in a name: a control
// character (C0, DEL, C1), or an invisible format character (Unicode's Cf):
// the bidirectional embeddings, overrides and isolates, which would reorder
// the text shown around the name, and the marks (U+200E, U+200F, U+061C),
// zero-width spaces (U+200B, U+2060, U+FEFF) and the like, with which one
// name would look like another. The zero-width joiner and non-joiner, which
// Persian and Indic scripts and emoji sequences need, and the tag characters
// of flag emoji stay allowed.
func forbiddenInName(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x200c || r == 0x200d || (r >= 0xe0020 && r <= 0xe007f):
		return false
	}
	return unicode.Is(unicode.Cf, r)
}

// SignUp creates a user and a first session, returning both.
//
// On a cluster the user, the login index, the session and the search index
// are in four slots, so no one script can write them all. The steps, in the
// order that keeps every login leading to a whole user:
//
//  1. the user's hash, whole, under a fresh uid, and the user_created event
//     on its channel, in one script in the user's slot (newUser);
//  2. the login claimed with HSETNX, which is what makes logins unique
//     ignoring case; a sign-up that loses deletes its hash again
//     (claimLogin);
//  3. the session, noted in the user's index of sessions (openSession),
//     then the search index entries.
//
// A crash between 1 and 2 leaves a hash no login leads to: never listed,
// nobody can sign in as it, in no index. A crash between 2 and 3 leaves a
// user whose client got an error and who can sign in, but whom search does
// not find (deleting users:search:folded has the next start index everyone
// again).
//
// Under Options.Registrations RegistrationsClosed it answers
// ErrRegistrationsClosed. Under RegistrationsApproval the hash is written
// pending and noted in users:pending (between 1 and 2), and SignUp stops
// after 2: it returns the user and no token, and the account can sign in,
// and is searchable, once an admin approves it (Approve).
func (s *Service) SignUp(ctx context.Context, login, name, password string) (User, string, error) {
	if s.opts.Registrations == RegistrationsClosed {
		return User{}, "", ErrRegistrationsClosed
	}
	// The admins named in Options.Admins are never held: under approval
	// somebody must be able to approve.
	pending := s.opts.Registrations == RegistrationsApproval && !s.adminLogin(login)
	name, err := validateSignUp(login, name, password)
	if err != nil {
		return User{}, "", err
	}
	k := s.keys
	lower := strings.ToLower(login)
	// A cheap check first spares a bcrypt hash for a login already taken; the
	// claim below is what makes the login unique.
	if taken, err := s.rdb.HExists(ctx, k.loginIndex(), lower).Result(); err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	} else if taken {
		return User{}, "", ErrLoginTaken
	}
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	now, err := s.now(ctx)
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	// From the first write on, the sign-up runs though the client goes:
	// cut short, it would leave a user no login leads to (listed for
	// approval, under -registrations approval), or an account its owner
	// cannot find by search.
	ctx, cancel := detached(ctx)
	defer cancel()
	uid, err := s.newUser(ctx, login, name, hash, now, pending)
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	if pending {
		// Listed for approval before the login leads to it: an entry whose
		// claim then lost leads to no user, and listings leave it out.
		if err := s.rdb.ZAdd(ctx, k.pendingUsers(), redis.Z{Score: float64(now.UnixMilli()), Member: uid}).Err(); err != nil {
			return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
		}
	}
	if err := s.claimLogin(ctx, lower, uid); err != nil {
		if errors.Is(err, ErrLoginTaken) {
			return User{}, "", err
		}
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	if pending {
		return User{ID: uid, Login: login, Name: name, Signup: now.Truncate(time.Millisecond)}, "", nil
	}
	token, err := s.openSession(ctx, uid, "")
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	entries := searchEntries(uid, login, name)
	members := make([]redis.Z, len(entries))
	for i, e := range entries {
		members[i] = redis.Z{Member: e}
	}
	if err := s.rdb.ZAdd(ctx, k.searchIndex(), members...).Err(); err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	u := User{ID: uid, Login: login, Name: name, Signup: now.Truncate(time.Millisecond)}
	return u, token, nil
}

// maxUIDTries bounds the uids newUser takes before it gives up: each one
// after the first was handed out before.
const maxUIDTries = 100

// newUser writes the hash of a new user under a fresh uid and returns the
// uid. A uid whose hash exists is passed over: on a cluster the counter and
// the users live on different nodes, and a failover of the counter's node
// to a replica that lags can hand out a uid again.
func (s *Service) newUser(ctx context.Context, login, name string, hash []byte, now time.Time, pending bool) (int64, error) {
	k := s.keys
	for range maxUIDTries {
		uid, err := s.rdb.Incr(ctx, k.userSeq()).Result()
		if err != nil {
			return 0, err
		}
		created, err := createUserScript.Run(ctx, s.rdb, []string{k.user(uid)},
			uid, login, name, hash, now.UnixMilli(),
			s.bus.UserChannel(uid), s.bus.Command(), userCreatedEvent, boolArg(pending)).Int()
		if err != nil {
			return 0, err
		}
		if created == 1 {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("no free user id in %d tries", maxUIDTries)
}

// claimLogin makes uid the owner of login (lower-case), or deletes the hash
// newUser wrote for uid and returns ErrLoginTaken when another user owns it.
// The hash is deleted only once the login is known to lead elsewhere, so that
// no login ever leads to a missing user: a claim whose answer was lost may
// have been made.
func (s *Service) claimLogin(ctx context.Context, lower string, uid int64) error {
	k := s.keys
	won, err := s.rdb.HSetNX(ctx, k.loginIndex(), lower, uid).Result()
	if err != nil {
		return err
	}
	if !won {
		// A claim made, its answer lost, and sent again by the client
		// answers 0 as well.
		owner, err := s.rdb.HGet(ctx, k.loginIndex(), lower).Int64()
		if err != nil {
			return err
		}
		won = owner == uid
	}
	if won {
		return nil
	}
	// Should this fail, the hash stays as after a crash before the claim:
	// no login leads to it.
	s.rdb.Del(context.WithoutCancel(ctx), k.user(uid))
	s.rdb.ZRem(context.WithoutCancel(ctx), k.pendingUsers(), uid)
	return ErrLoginTaken
}

// Known addresses: where a user signed in lately is spared the ceiling on
// sign-ins from unknown addresses, and so is a device (a browser's device
// mark, see NewDeviceMark) that signed in to the account lately, from any
// address. A user keeps the newest knownAddresses addresses and, apart,
// the newest knownDevices devices, each for knownAddressTTL after its last
// sign-in.
const (
	knownAddresses  = 10
	knownDevices    = 10
	knownAddressTTL = 90 * 24 * time.Hour
)

// DeviceMarkTTL is how long a device mark is worth keeping: as long as a
// sign-in keeps the device known.
const DeviceMarkTTL = knownAddressTTL

// MaxDeviceMarks is how many device marks one browser keeps: one for each
// account it signed in to lately (SignInDevice), the newest last.
const MaxDeviceMarks = 4

// NewDeviceMark returns a fresh device mark: 32 hex digits of randomness,
// which a browser keeps (a cookie) and shows at its next sign-in, which
// gives it another (SignInDevice).
func NewDeviceMark() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidDeviceMark reports whether mark has a device mark's shape (32 lower
// hex digits); anything else is no mark.
func ValidDeviceMark(mark string) bool {
	if len(mark) != 32 {
		return false
	}
	for _, c := range mark {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// deviceID is how the known addresses hold a device mark: its hash, told
// apart from an address's by its "d" ahead; "" for no mark.
func deviceID(mark string) string {
	if !ValidDeviceMark(mark) {
		return ""
	}
	return "d" + addressID(mark)
}

// addressID is how the known addresses hold an address: the first 16 bytes
// of its SHA-256, so that Redis keeps no list of where a user signs in from
// in the clear (a hash of an IPv4 address can be reversed by trying them
// all; it keeps addresses out of sight, it does not make them secret).
func addressID(addr string) string {
	sum := sha256.Sum256([]byte(addr))
	return hex.EncodeToString(sum[:16])
}

// SignIn checks a login and password, given from the client address addr
// ("" when unknown), and opens a new session. Every attempt on an existing
// login is counted before its password is checked, so that a refused one
// costs no bcrypt work:
//
//   - against that user and address: past SignInFailures attempts within
//     SignInFailureWindow it answers a *RateLimitError, and a right password
//     clears the count. An attack from one address leaves sign-ins from
//     others alone.
//   - unless the user signed in from addr lately (the newest
//     knownAddresses, for knownAddressTTL), against that user from every
//     such address together: past SignInAccountLimit attempts within
//     SignInAccountWindow it answers a *RateLimitError with Account set. An
//     attack spread over many addresses has a ceiling, and the owner still
//     signs in from where they did before.
//
// An unknown login costs the same bcrypt comparison as a known one and
// writes nothing.
func (s *Service) SignIn(ctx context.Context, login, password, addr string) (User, string, error) {
	u, token, _, err := s.SignInDevice(ctx, login, password, addr, nil, "")
	return u, token, err
}

// SignInDevice is SignIn from a device that shows its device marks
// (NewDeviceMark, one for each account it signed in to lately; anything
// not a mark is none, and past MaxDeviceMarks the newest count): a device
// that signed in to the account lately is spared the ceiling on attempts
// from unknown addresses, wherever it signs in from, as a known address
// is. A right password makes the device known to the account under next,
// a new mark the caller gives it ("": none), and forgets the marks it
// showed that the account knew: a mark is good for one sign-in, so one
// copied, or planted before the owner signs in, is worth nothing after.
// It returns, with the user and the session's token, the marks the device
// keeps: those it showed that other accounts know, then next. A sign-in
// refused after the password was found right (a suspended account, a
// session that could not be opened) returns them too, with its error: the
// account knows next, and no longer the mark it spent.
func (s *Service) SignInDevice(ctx context.Context, login, password, addr string, shown []string, next string) (User, string, []string, error) {
	if !ValidLogin(login) || len(password) > MaxPasswordBytes {
		return User{}, "", nil, ErrInvalidCredentials
	}
	// The login index and the user live in different slots on a cluster:
	// the uid first, then the attempt counted and the user read in one
	// script. A login never changes its uid.
	uid, err := s.rdb.HGet(ctx, s.keys.loginIndex(), strings.ToLower(login)).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		uid = 0
	case err != nil:
		return User{}, "", nil, fmt.Errorf("sign in %q: %w", login, err)
	}
	c, err := s.checkPassword(ctx, uid, password, addr, shown, next, false)
	if err != nil {
		if errors.Is(err, ErrInvalidCredentials) || errors.Is(err, ErrRateLimited) || errors.Is(err, ErrBusy) || errors.Is(err, ErrApprovalPending) {
			return User{}, "", nil, err
		}
		return User{}, "", nil, fmt.Errorf("sign in %q: %w", login, err)
	}
	if c.user.Suspended {
		return User{}, "", c.marks, ErrSuspended
	}
	token, err := s.openSession(ctx, c.user.ID, c.hash)
	if err != nil {
		if errors.Is(err, ErrInvalidCredentials) || errors.Is(err, ErrSuspended) {
			return User{}, "", c.marks, err
		}
		return User{}, "", c.marks, fmt.Errorf("sign in %q: %w", login, err)
	}
	return c.user, token, c.marks, nil
}

// deviceMarks is the device marks of shown that count: the newest
// MaxDeviceMarks valid ones, each once, in order.
func deviceMarks(shown []string) []string {
	var marks []string
	for i := len(shown) - 1; i >= 0 && len(marks) < MaxDeviceMarks; i-- {
		if ValidDeviceMark(shown[i]) && !slices.Contains(marks, shown[i]) {
			marks = append(marks, shown[i])
		}
	}
	slices.Reverse(marks)
	return marks
}

// checked is what a right password's check tells: the user, the password
// hash it matched, and the device marks the device keeps (see
// SignInDevice).
type checked struct {
	user  User
	hash  string
	marks []string
}

// checkPassword checks password against uid's (0: no user), from the
// client address addr, as a sign-in does: the attempt is counted before
// the password is checked (a *RateLimitError past the limits SignIn
// describes), a wrong one answers ErrInvalidCredentials, and a right one
// clears the address's count and makes the address known. A user that does
// not exist costs the same bcrypt comparison and writes nothing. It
// returns the user and the password hash the password matched.
//
// signedIn says the check is made on a session of uid (a password change,
// an account deletion): it counts against the address's attempts alone,
// not against the ceiling of attempts from unknown addresses, which anyone
// with a few addresses can keep full, so that the owner, signed in from a
// new address, can still change a password under attack.
func (s *Service) checkPassword(ctx context.Context, uid int64, password, addr string, shown []string, next string, signedIn bool) (checked, error) {
	if len(password) > MaxPasswordBytes {
		return checked{}, ErrInvalidCredentials
	}
	k := s.keys
	shown = deviceMarks(shown) // each one a mark: one hash each, in order
	addrID, nextID := addressID(addr), deviceID(next)
	devIDs := make([]string, len(shown))
	for i, mark := range shown {
		devIDs[i] = deviceID(mark)
	}
	var res []any
	if uid != 0 {
		args := []any{
			s.opts.SignInFailureWindow.Milliseconds(), s.opts.SignInFailures,
			s.opts.SignInAccountWindow.Milliseconds(), s.opts.SignInAccountLimit,
			addrID, knownAddressTTL.Milliseconds(), signedIn, strings.Join(devIDs, " "),
		}
		for _, f := range userFields {
			args = append(args, f)
		}
		var err error
		res, err = signinScript.Run(ctx, s.rdb,
			[]string{k.user(uid), k.signInFailures(uid, addr), k.signInUnknown(uid), k.signInKnown(uid), k.signInDevices(uid)},
			append(args, "password", "pending")...).Slice()
		if err != nil {
			return checked{}, err
		}
	}
	var (
		u       User
		hash    = s.dummyHash // spends the time a real check takes, so answers do not tell which logins exist
		counted int64
		ok      = len(res) == 3+len(userFields)+2
		pending bool
	)
	if len(res) >= 3 {
		verdict, _ := res[0].(int64)
		ttl, _ := res[1].(int64)
		counted, _ = res[2].(int64)
		switch verdict {
		case signInAddressLimited:
			s.stats.SignInsThrottled.Add(1)
			return checked{}, &RateLimitError{RetryAfter: time.Duration(ttl) * time.Millisecond}
		case signInAccountLimited:
			s.stats.SignInsCeiling.Add(1)
			return checked{}, &RateLimitError{RetryAfter: time.Duration(ttl) * time.Millisecond, Account: true}
		}
	}
	if ok {
		fields := res[3:]
		if u, ok = parseUser(fields[:len(userFields)]); ok {
			h, _ := fields[len(userFields)].(string)
			hash = []byte(h)
			pending = fields[len(userFields)+1] != nil
		}
	}
	match, err := s.passwordMatches(ctx, hash, password)
	if err != nil {
		return checked{}, err
	}
	if !ok || !match {
		return checked{}, ErrInvalidCredentials
	}
	if pending {
		// Said only to whoever knows the password: it tells nobody else
		// which logins wait for approval.
		return checked{}, ErrApprovalPending
	}
	res, err = signinOKScript.Run(ctx, s.rdb,
		[]string{k.signInFailures(u.ID, addr), k.signInUnknown(u.ID), k.signInKnown(u.ID), k.user(u.ID), k.signInDevices(u.ID)},
		addrID, counted, knownAddresses, knownAddressTTL.Milliseconds(), strings.Join(devIDs, " "), nextID, knownDevices).Slice()
	if err != nil {
		return checked{}, err
	}
	if len(res) == 0 {
		return checked{}, ErrInvalidCredentials // deleted while the password was checked
	}
	// The marks the account knew are spent; the others are other accounts'.
	forgot, _ := res[0].(string)
	c := checked{user: u, hash: string(hash)}
	for i, mark := range shown {
		if i >= len(forgot) || forgot[i] != '1' {
			c.marks = append(c.marks, mark)
		}
	}
	if next != "" {
		c.marks = append(c.marks, next)
	}
	if over := len(c.marks) - MaxDeviceMarks; over > 0 {
		c.marks = c.marks[over:]
	}
	return c, nil
}

// Verdicts of signin.lua.
const (
	signInAddressLimited = 1 // too many attempts from the address
	signInAccountLimited = 2 // too many attempts from unknown addresses
)

// SignOut ends the session of token, and tells its streams on every
// instance to close (session_ended); other sessions of the user live on.
func (s *Service) SignOut(ctx context.Context, token string) error {
	id := hashToken(token)
	uid, err := s.rdb.GetDel(ctx, s.keys.session(id)).Int64()
	if errors.Is(err, redis.Nil) {
		return nil // ended already: by a sign-out that told its streams, or expired, which a check of them finds
	}
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	// The session is gone; its entry in the index, and closing its
	// streams, on every instance, are courtesies that may fail without
	// undoing the sign-out (the index takes out ended sessions itself).
	if err := s.rdb.ZRem(ctx, s.keys.sessions(uid), id).Err(); err != nil {
		s.opts.Logger.WarnContext(ctx, "could not take a signed-out session out of its user's index", "uid", uid, "err", err)
	}
	frame, err := json.Marshal(protocol.Internal{Type: protocol.TypeSessionEnded, Session: id})
	if err == nil {
		err = s.bus.Publish(ctx, s.bus.UserChannel(uid), frame)
	}
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "could not close the signed-out session's streams", "uid", uid, "err", err)
	}
	return nil
}

var (
	//go:embed seen.lua
	seenSource string
	seenScript = newScript(seenSource)
)

// Authenticate returns the uid that token belongs to, or ErrUnauthenticated:
// also for the session of an account suspended, being deleted or gone,
// which it ends (see refuseFallen). Each use renews the session for
// another SessionTTL: a session ends after SessionTTL unused. It notes the
// user's activity (once per touchEvery at most; an instance that noted it
// lately spares the round trip, and on one Redis, one that saw the session
// before notes it in the round trip that checks the session, see
// queueNote). A user back after InactiveAfter away has their home timeline
// rebuilt (the fan-out skipped them meanwhile) before Authenticate
// returns, or, when that takes longer than rebuildWait, by a worker
// moments later.
//
// The account's standing (queueStanding) is read with the session where
// the instance knows whose it is, and else with the note that follows the
// check: one round trip more only for a session the instance has not seen
// of a user it noted lately.
func (s *Service) Authenticate(ctx context.Context, token string) (int64, error) {
	return s.AuthenticateAdmit(ctx, token, nil)
}

// Admit queues on a round trip what decides whether uid's request may go
// on now (a rate limit per user), and returns what reads its answer once
// that ran: nil lets the request go on; an error refuses it, and is
// returned as it is. Its commands' errors are its check's to read (it may
// make its call again, as a script Redis lost), not the round trip's.
type Admit func(ctx context.Context, pipe redis.Pipeliner, uid int64) func() error

// AuthenticateAdmit is Authenticate with admit (nil: none) queued in the
// round trip that reads the account's standing: the session's own for a
// session the instance saw lately, else the one after it. It costs no
// round trip of its own. A session that is gone, or an account that
// fell, is refused as such whatever admit answers (whose unit may be spent
// all the same). A request admit refuses is answered with its user and
// admit's error: the session stands.
func (s *Service) AuthenticateAdmit(ctx context.Context, token string, admit Admit) (int64, error) {
	if !tokenShaped(token) {
		return 0, ErrUnauthenticated
	}
	id := hashToken(token)
	if uid, known := s.sessionUsers.Get(id); known {
		return s.authenticateKnown(ctx, id, uid, admit)
	}
	uid, err := s.sessionOf(ctx, id)
	if err != nil {
		return 0, err
	}
	return s.authenticateFound(ctx, id, uid, admit)
}

// authenticateKnown is Authenticate on session id, which this instance saw
// lately as uid's, and may have ended since: one round trip checks it,
// reads whether uid's account stands, and, on one Redis, notes uid while
// the session still stands (queueNote), where the note would else follow
// the check in a round trip of its own (on a cluster it does, see
// checksSessionInNote).
func (s *Service) authenticateKnown(ctx context.Context, id string, uid int64, admit Admit) (int64, error) {
	pipe := s.rdb.Pipeline()
	session := s.queueSession(ctx, pipe, id)
	standing := s.queueStanding(ctx, pipe, uid)
	var note *redis.Cmd
	if s.checksSessionInNote() {
		note = s.queueNote(ctx, pipe, uid, id)
	}
	var admitted func() error
	if admit != nil {
		admitted = admit(ctx, pipe, uid)
	}
	// Each command's error is read with its answer: the session's first.
	_, _ = pipe.Exec(ctx)
	if got, err := sessionUID(session); err != nil {
		return 0, fmt.Errorf("authenticate: %w", err)
	} else if got != uid {
		s.sessionUsers.Remove(id)
		return 0, ErrUnauthenticated
	}
	if err := s.refuseFallen(ctx, id, uid, standing); err != nil {
		return 0, err
	}
	noted := s.notedBy(ctx, uid, note)
	if note == nil {
		// On a cluster, noted only once the session is known to stand; or
		// noted lately, and then nothing is sent.
		noted = s.noteActivity(ctx, uid)
	}
	if noted != nil {
		return 0, fmt.Errorf("authenticate: %w", noted)
	}
	if err := admittedBy(admitted); err != nil {
		return uid, err
	}
	return uid, nil
}

// admittedBy is the answer of an Admit's check, nil when there was none. It
// is read after the note of the user's activity, whose rebuild of a home
// timeline (a user back after long away) a refusal must not skip.
func admittedBy(check func() error) error {
	if check == nil {
		return nil
	}
	return check()
}

// authenticateFound finishes Authenticate on session id, found uid's by a
// round trip of its own (sessionOf): a second reads whether uid's account
// stands, with the note of uid's activity, which the check of the session
// had to come before.
func (s *Service) authenticateFound(ctx context.Context, id string, uid int64, admit Admit) (int64, error) {
	pipe := s.rdb.Pipeline()
	standing := s.queueStanding(ctx, pipe, uid)
	note := s.queueNote(ctx, pipe, uid, "")
	var admitted func() error
	if admit != nil {
		admitted = admit(ctx, pipe, uid)
	}
	_, _ = pipe.Exec(ctx) // as authenticateKnown
	if err := s.refuseFallen(ctx, id, uid, standing); err != nil {
		return 0, err
	}
	if err := s.notedBy(ctx, uid, note); err != nil {
		return 0, fmt.Errorf("authenticate: %w", err)
	}
	if err := admittedBy(admitted); err != nil {
		return uid, err
	}
	return uid, nil
}

// sessionUser is Authenticate but for the account's standing and the
// activity, which its caller reads and notes with what it reads next (a
// post, see readPost).
func (s *Service) sessionUser(ctx context.Context, token string) (int64, error) {
	if !tokenShaped(token) {
		return 0, ErrUnauthenticated
	}
	return s.sessionOf(ctx, hashToken(token))
}

// sessionOf is sessionUser on the session whose id is id.
func (s *Service) sessionOf(ctx context.Context, id string) (int64, error) {
	pipe := s.rdb.Pipeline()
	session := s.queueSession(ctx, pipe, id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("authenticate: %w", err)
	}
	uid, err := sessionUID(session)
	if err != nil {
		return 0, fmt.Errorf("authenticate: %w", err)
	}
	if uid == 0 {
		s.sessionUsers.Remove(id) // ended since the instance saw it, if it did
		return 0, ErrUnauthenticated
	}
	s.sessionUsers.Add(id, uid)
	return uid, nil
}

// queueSession queues on pipe the check of the session whose id is id,
// renewed for SessionTTL by the same use: one GETEX, a read that sets the
// key's expiry, where a script doing both would cost Redis more. Read the
// answer with sessionUID.
func (s *Service) queueSession(ctx context.Context, pipe redis.Pipeliner, id string) *redis.StringCmd {
	// SessionTTL is positive (see Options): GetEx with 0 would make the
	// session last for ever.
	return pipe.GetEx(ctx, s.keys.session(id), s.opts.SessionTTL)
}

// sessionUID reads queueSession's answer: the session's user, 0 when there
// is no such session.
func sessionUID(get *redis.StringCmd) (int64, error) {
	uid, err := get.Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return uid, err
}

// noteActivity writes uid's activity to users:seen, at most once per
// touchEvery, and rebuilds the home timeline of a user back after
// InactiveAfter away: the rebuild is queued before the activity is written,
// so that no failure between the two leaves it undone. Requests racing at
// the return queue it once (the job's existence guards it).
func (s *Service) noteActivity(ctx context.Context, uid int64) error {
	if s.touches.recent(uid) {
		return nil
	}
	return s.notedBy(ctx, uid, seenScript.Run(ctx, s.rdb, []string{s.keys.seen()},
		s.touchEvery().Milliseconds(), s.inactiveAfter().Milliseconds(), uid))
}

// queueNote queues on pipe the noting of uid's activity, as noteActivity
// makes it, and returns the call for notedBy; nil when this instance noted
// it lately. With session (the id of uid's session, "" for none), the call
// notes uid only while that session is theirs, as it runs: a request can
// note its user in the round trip that checks their session, and a session
// found ended notes nothing. Only on one Redis (see checksSessionInNote).
// The script goes by its text (a few hundred bytes), so that a Redis that
// lost its scripts costs no round trip more.
func (s *Service) queueNote(ctx context.Context, pipe redis.Pipeliner, uid int64, session string) *redis.Cmd {
	if s.touches.recent(uid) {
		return nil
	}
	keys := []string{s.keys.seen()}
	if session != "" {
		keys = append(keys, s.keys.session(session))
	}
	return seenScript.Eval(ctx, pipe, keys,
		s.touchEvery().Milliseconds(), s.inactiveAfter().Milliseconds(), uid)
}

// checksSessionInNote reports whether queueNote can check a session: on
// one Redis, not on a cluster, where a session's key and users' activity
// are in different slots.
func (s *Service) checksSessionInNote() bool { return !s.keys.cluster }

// notedBy finishes noting uid's activity once seen.lua ran as call
// (nothing to do for a nil call): see noted.
func (s *Service) notedBy(ctx context.Context, uid int64, call *redis.Cmd) error {
	if call == nil {
		return nil
	}
	res, err := call.Int64Slice()
	if err != nil {
		return err
	}
	if len(res) != 2 {
		return fmt.Errorf("activity script answered %v", res)
	}
	rebuild, err := s.noted(ctx, uid, res[1], res[0])
	if rebuild {
		s.rebuild(ctx, uid)
	}
	return err
}

// noteSessionGone is seen.lua's state of a user not noted, the session it
// was to check (queueNote) no longer theirs.
const noteSessionGone = 3

// noted finishes noting uid's activity once seen.lua told its state at
// now (unix ms): a user back after InactiveAfter away has the rebuild of
// their home timeline queued, then is noted. It reports whether a rebuild
// was queued, for the caller to run (rebuild) before it answers.
func (s *Service) noted(ctx context.Context, uid, state, now int64) (rebuild bool, err error) {
	if state == noteSessionGone {
		return false, nil // nothing written, nor remembered: the next request tries again
	}
	if state != 2 {
		s.touches.note(uid)
		return false, nil
	}
	k := s.keys
	queued := false
	if n, err := s.rdb.ZCard(ctx, k.following(uid)).Result(); err != nil {
		return false, err
	} else if n > 0 {
		// The rebuild is a refill with no floor, marked a rebuild so that
		// the requests racing this return leave it be; a refill queued
		// already is widened into it (widen_refill.lua), and one finished
		// meanwhile queued again.
		key, settled := k.job(refillJobID(uid)), false
		for range 3 {
			q, err := s.queueJob(ctx, s.rdb, job{kind: jobRefill, uid: uid, floor: "+inf", rebuild: true}, inputsWritten).Int()
			if err != nil {
				return false, err
			}
			if q == 1 {
				queued, settled = true, true
				break
			}
			w, err := widenRefillScript.Run(ctx, s.rdb, []string{key}).Int()
			if err != nil {
				return false, err
			}
			if w != 0 {
				queued, settled = w == 1, true
				break
			}
		}
		if !settled {
			// Not noted active: the next request tries again.
			return false, fmt.Errorf("rebuild of %d: its refill came and went three times", uid)
		}
	}
	// Only while they are there (state 2 found them): an account deleted
	// meanwhile, its user taken out of the set, is not put back.
	if err := s.rdb.ZAddArgs(ctx, k.seen(), redis.ZAddArgs{XX: true, GT: true, Members: []redis.Z{{Score: float64(now), Member: uid}}}).Err(); err != nil {
		return false, err
	}
	s.touches.note(uid)
	return queued, nil
}

// SessionOwners returns, for each session id (see SessionID), the uid that
// session belongs to, or 0 when it has ended, in two round trips: the
// sessions, then their users' standing. A session of an account suspended,
// being deleted or gone is ended as Authenticate ends it (refuseFallen),
// and answers 0: a suspension or a deletion cut short after its mark, its
// sessions not yet ended, leaves no stream open past the next check. It
// does not renew the sessions: checking a session is not using it.
func (s *Service) SessionOwners(ctx context.Context, sessionIDs []string) ([]int64, error) {
	out := make([]int64, len(sessionIDs))
	if len(sessionIDs) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(sessionIDs))
	for i, id := range sessionIDs {
		cmds[i] = pipe.Get(ctx, s.keys.session(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("session owners: %w", err)
	}
	standing := map[int64]*redis.SliceCmd{}
	pipe = s.rdb.Pipeline()
	for i, c := range cmds {
		out[i], _ = c.Int64()
		if uid := out[i]; uid > 0 && standing[uid] == nil {
			standing[uid] = s.queueStanding(ctx, pipe, uid)
		}
	}
	if len(standing) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("session owners: %w", err)
	}
	for i, uid := range out {
		if uid <= 0 {
			continue
		}
		switch err := s.refuseFallen(ctx, sessionIDs[i], uid, standing[uid]); {
		case errors.Is(err, ErrUnauthenticated):
			out[i] = 0
		case err != nil:
			return nil, fmt.Errorf("session owners: %w", err)
		}
	}
	return out, nil
}

// SessionID names a session without revealing its token: the SHA-256 of the
// token, as Redis keeps it.
func SessionID(token string) string { return hashToken(token) }

// UserByID returns one user.
func (s *Service) UserByID(ctx context.Context, uid int64) (User, error) {
	users, err := s.usersByID(ctx, []int64{uid})
	if err != nil {
		return User{}, fmt.Errorf("user %d: %w", uid, err)
	}
	if len(users) == 0 {
		return User{}, ErrUserNotFound
	}
	return users[0], nil
}

// UserByLogin returns one user, matching login ignoring case.
func (s *Service) UserByLogin(ctx context.Context, login string) (User, error) {
	uid, err := s.UID(ctx, login)
	if err != nil {
		return User{}, err
	}
	return s.UserByID(ctx, uid)
}

// shownUID returns the id of login, as UID does, when its account is shown
// to everyone: ErrUserNotFound for one suspended or being deleted, whose
// profile answers so too (UserByLogin), as its lists and statuses do.
func (s *Service) shownUID(ctx context.Context, login string) (int64, error) {
	u, err := s.UserByLogin(ctx, login)
	return u.ID, err
}

// UID returns the id of login, matched ignoring case.
func (s *Service) UID(ctx context.Context, login string) (int64, error) {
	if !ValidLogin(login) {
		return 0, ErrUserNotFound
	}
	uid, err := s.rdb.HGet(ctx, s.keys.loginIndex(), strings.ToLower(login)).Int64()
	if errors.Is(err, redis.Nil) || err == nil && uid == 0 { // 0: the login of an account deleted
		return 0, ErrUserNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("look up %q: %w", login, err)
	}
	return uid, nil
}

// usersByID reads users in one round trip, in the order given, leaving out
// those that do not exist.
func (s *Service) usersByID(ctx context.Context, ids []int64) ([]User, error) {
	users, err := s.usersByIDAll(ctx, ids)
	return slices.DeleteFunc(users, func(u User) bool { return u.Suspended }), err
}

// usersByIDAll reads users as usersByID does, suspended accounts included:
// for the admins.
func (s *Service) usersByIDAll(ctx context.Context, ids []int64) ([]User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.user(id), userFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	users := make([]User, 0, len(ids))
	for _, c := range cmds {
		if u, ok := parseUser(c.Val()); ok {
			users = append(users, u)
		}
	}
	return users, nil
}

func parseUser(vals []any) (User, bool) {
	str := func(i int) string { s, _ := vals[i].(string); return s }
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	if str(0) == "" || str(9) != "" {
		return User{}, false // none, or one being deleted
	}
	return User{
		ID: num(0), Login: str(1), Name: str(2),
		Followers: num(3), Following: num(4), Posts: num(5),
		Signup: unixMilli(str(6)), Bio: str(7), Suspended: str(8) != "",
	}, true
}

func newToken() (token, hash string) {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token)
}

// tokenShaped reports whether token may be a session's: one is never
// empty, nor longer than maxTokenLen (newToken makes 43 bytes). Any other
// is refused before it is hashed or sent to Redis.
func tokenShaped(token string) bool { return token != "" && len(token) <= maxTokenLen }

// maxTokenLen is the longest token a session is looked up by.
const maxTokenLen = 128

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Users returns the users with the given ids that exist, in the order given.
func (s *Service) Users(ctx context.Context, ids []int64) ([]User, error) {
	users, err := s.usersByID(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return users, nil
}

// Profile returns the login and name of uid, as presence events show them.
func (s *Service) Profile(ctx context.Context, uid int64) (login, name string, err error) {
	u, err := s.UserByID(ctx, uid)
	if err != nil {
		return "", "", err
	}
	return u.Login, u.Name, nil
}
