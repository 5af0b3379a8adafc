package social

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
)

// User is a public profile.
type User struct {
	ID        int64     `json:"id"`
	Login     string    `json:"login"`
	Name      string    `json:"name"`
	Followers int64     `json:"followers"`
	Following int64     `json:"following"`
	Posts     int64     `json:"posts"`
	Signup    time.Time `json:"signup"`
}

// Limits on sign-up input.
const (
	MinPasswordBytes = 8
	MaxPasswordBytes = 128
	MaxNameRunes     = 64
)

var (
	loginPattern = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

	//go:embed signup.lua
	signupSource string
	signupScript = redis.NewScript(signupSource)
)

var userFields = []string{"id", "login", "name", "followers", "following", "posts", "signup"}

// ValidLogin reports whether login has the form the API accepts.
func ValidLogin(login string) bool { return loginPattern.MatchString(login) }

func validateSignUp(login, name, password string) (string, error) {
	if !ValidLogin(login) {
		return "", invalid("login", "must be 3 to 32 letters, digits or underscores")
	}
	name = strings.TrimSpace(name)
	switch {
	case !utf8.ValidString(name):
		return "", invalid("name", "must be valid UTF-8")
	case name == "" || utf8.RuneCountInString(name) > MaxNameRunes:
		return "", invalid("name", "must be 1 to %d characters", MaxNameRunes)
	case strings.ContainsFunc(name, isControl):
		return "", invalid("name", "must not contain control characters")
	case len(password) < MinPasswordBytes || len(password) > MaxPasswordBytes:
		return "", invalid("password", "must be %d to %d bytes", MinPasswordBytes, MaxPasswordBytes)
	}
	return name, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// SignUp creates a user and a first session, returning both.
func (s *Service) SignUp(ctx context.Context, login, name, password string) (User, string, error) {
	name, err := validateSignUp(login, name, password)
	if err != nil {
		return User{}, "", err
	}
	lower := strings.ToLower(login)
	// A cheap check first spares a bcrypt hash for a login already taken; the
	// script below is what makes the login unique.
	if taken, err := s.rdb.HExists(ctx, s.keys.loginIndex(), lower).Result(); err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	} else if taken {
		return User{}, "", ErrLoginTaken
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.opts.BcryptCost)
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: hash password: %w", login, err)
	}
	uid, err := s.rdb.Incr(ctx, s.keys.userSeq()).Result()
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	now, err := s.now(ctx)
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	token, tokenHash := newToken()
	ok, err := signupScript.Run(ctx, s.rdb,
		[]string{s.keys.loginIndex(), s.keys.user(uid), s.keys.session(tokenHash)},
		lower, uid, login, name, hash, now.UnixMilli(), s.opts.SessionTTL.Milliseconds(),
		s.keys.userChannel(uid), userCreatedEvent,
	).Int()
	if err != nil {
		return User{}, "", fmt.Errorf("sign up %q: %w", login, err)
	}
	if ok == 0 {
		return User{}, "", ErrLoginTaken
	}
	u := User{ID: uid, Login: login, Name: name, Signup: now.Truncate(time.Millisecond)}
	return u, token, nil
}

// SignIn checks a login and password and opens a new session. After
// maxLoginFailures failures for one login within loginFailureWindow it
// answers ErrRateLimited without looking at the password.
func (s *Service) SignIn(ctx context.Context, login, password string) (User, string, error) {
	if !ValidLogin(login) || len(password) > MaxPasswordBytes {
		return User{}, "", ErrInvalidCredentials
	}
	lower := strings.ToLower(login)
	failKey := s.keys.loginFailures(lower)
	fails, err := s.rdb.Get(ctx, failKey).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return User{}, "", fmt.Errorf("sign in %q: %w", login, err)
	}
	if fails >= maxLoginFailures {
		return User{}, "", ErrRateLimited
	}
	u, hash, err := s.userByLoginWithPassword(ctx, lower)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return User{}, "", fmt.Errorf("sign in %q: %w", login, err)
	}
	if err != nil {
		// Spend the time a real check takes, so that answers do not tell
		// which logins exist.
		hash = s.dummyHash
	}
	if err != nil || bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		pipe := s.rdb.TxPipeline()
		pipe.Incr(ctx, failKey)
		pipe.ExpireNX(ctx, failKey, loginFailureWindow)
		if _, err := pipe.Exec(ctx); err != nil {
			return User{}, "", fmt.Errorf("sign in %q: count failure: %w", login, err)
		}
		return User{}, "", ErrInvalidCredentials
	}
	token, tokenHash := newToken()
	pipe := s.rdb.TxPipeline()
	pipe.Set(ctx, s.keys.session(tokenHash), u.ID, s.opts.SessionTTL)
	pipe.Del(ctx, failKey)
	if _, err := pipe.Exec(ctx); err != nil {
		return User{}, "", fmt.Errorf("sign in %q: %w", login, err)
	}
	return u, token, nil
}

// SignOut ends the session of token; other sessions of the user live on.
func (s *Service) SignOut(ctx context.Context, token string) error {
	if err := s.rdb.Del(ctx, s.keys.session(hashToken(token))).Err(); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	return nil
}

// Authenticate returns the uid that token belongs to, or ErrUnauthenticated.
// Each use renews the session for another SessionTTL, in the same round
// trip: a session ends after SessionTTL unused.
func (s *Service) Authenticate(ctx context.Context, token string) (int64, error) {
	if token == "" || len(token) > 128 {
		return 0, ErrUnauthenticated
	}
	uid, err := s.rdb.GetEx(ctx, s.keys.session(hashToken(token)), s.opts.SessionTTL).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, ErrUnauthenticated
	}
	if err != nil {
		return 0, fmt.Errorf("authenticate: %w", err)
	}
	return uid, nil
}

// SessionOwners returns, for each session id (see SessionID), the uid that
// session belongs to, or 0 when it has ended, in one round trip. It does not
// renew the sessions: checking a session is not using it.
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
	for i, c := range cmds {
		out[i], _ = c.Int64()
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
		return User{}, ErrNotFound
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

// UID returns the id of login, matched ignoring case.
func (s *Service) UID(ctx context.Context, login string) (int64, error) {
	if !ValidLogin(login) {
		return 0, ErrNotFound
	}
	uid, err := s.rdb.HGet(ctx, s.keys.loginIndex(), strings.ToLower(login)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("look up %q: %w", login, err)
	}
	return uid, nil
}

func (s *Service) userByLoginWithPassword(ctx context.Context, lower string) (User, []byte, error) {
	uid, err := s.UID(ctx, lower)
	if err != nil {
		return User{}, nil, err
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.user(uid), append(userFields, "password")...).Result()
	if err != nil {
		return User{}, nil, err
	}
	u, ok := parseUser(vals)
	if !ok {
		return User{}, nil, ErrNotFound
	}
	hash, _ := vals[len(userFields)].(string)
	return u, []byte(hash), nil
}

// usersByID reads users in one round trip, in the order given, leaving out
// those that do not exist.
func (s *Service) usersByID(ctx context.Context, ids []int64) ([]User, error) {
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
	if str(0) == "" {
		return User{}, false
	}
	return User{
		ID: num(0), Login: str(1), Name: str(2),
		Followers: num(3), Following: num(4), Posts: num(5),
		Signup: unixMilli(str(6)),
	}, true
}

func newToken() (token, hash string) {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token)
}

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
