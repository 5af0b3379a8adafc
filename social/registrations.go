package social

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Who may sign up (Options.Registrations).
const (
	RegistrationsOpen     = "open"     // anyone
	RegistrationsApproval = "approval" // anyone, signing in once an admin approves
	RegistrationsClosed   = "closed"   // nobody
)

// ValidRegistrations reports whether mode is one of the Registrations
// constants.
func ValidRegistrations(mode string) bool {
	return mode == RegistrationsOpen || mode == RegistrationsApproval || mode == RegistrationsClosed
}

var (
	//go:embed approve.lua
	approveSource string
	approveScript = newScript(approveSource)
)

// requireAdmin returns uid's user when uid is one of Options.Admins, else
// ErrNotAdmin. An admin is named by login, read afresh on every call: one
// HMGET of the user's hash.
func (s *Service) requireAdmin(ctx context.Context, uid int64) (User, error) {
	if len(s.opts.Admins) == 0 {
		return User{}, ErrNotAdmin
	}
	u, err := s.UserByID(ctx, uid)
	if errors.Is(err, ErrUserNotFound) {
		return User{}, ErrNotAdmin
	}
	if err != nil {
		return User{}, err
	}
	if !s.adminLogin(u.Login) {
		return User{}, ErrNotAdmin
	}
	return u, nil
}

// adminLogin reports whether login is one of Options.Admins.
func (s *Service) adminLogin(login string) bool {
	return slices.ContainsFunc(s.opts.Admins, func(a string) bool { return strings.EqualFold(a, login) })
}

// AdminLogin reports whether login is one of Options.Admins, without
// asking Redis: for a user already read.
func (s *Service) AdminLogin(login string) bool {
	return s.adminLogin(login)
}

// IsAdmin reports whether uid is one of Options.Admins.
func (s *Service) IsAdmin(ctx context.Context, uid int64) (bool, error) {
	_, err := s.requireAdmin(ctx, uid)
	if errors.Is(err, ErrNotAdmin) {
		return false, nil
	}
	return err == nil, err
}

// PendingUsers pages through the accounts that wait for approval, oldest
// sign-up first, for the admin uid (ErrNotAdmin for anyone else).
func (s *Service) PendingUsers(ctx context.Context, uid int64, p Page) ([]User, error) {
	if _, err := s.requireAdmin(ctx, uid); err != nil {
		return nil, err
	}
	ids, err := s.rdb.ZRange(ctx, s.keys.pendingUsers(), int64(p.Offset), int64(p.Offset+p.Limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("pending users: %w", err)
	}
	users, err := s.usersByID(ctx, parseIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("pending users: %w", err)
	}
	return s.dropUnclaimed(ctx, users)
}

// dropUnclaimed leaves out of pending users those whose login leads to no
// one or to another user: a sign-up listed for approval whose claim of the
// login then lost (the same login, in another case, claimed first), or
// that its instance died before. A page may then hold fewer than its
// limit. Those older than unclaimedAfter, whose claim no sign-up still
// makes, are taken out of the set, so that they do not stay ahead of the
// others for good. One round trip more (the login index), and one to
// take any out.
func (s *Service) dropUnclaimed(ctx context.Context, users []User) ([]User, error) {
	if len(users) == 0 {
		return users, nil
	}
	logins := make([]string, len(users))
	for i, u := range users {
		logins[i] = strings.ToLower(u.Login)
	}
	owners, err := s.rdb.HMGet(ctx, s.keys.loginIndex(), logins...).Result()
	if err != nil {
		return nil, fmt.Errorf("pending users: %w", err)
	}
	var stale []any
	kept := users[:0]
	for i, u := range users {
		if owner, _ := owners[i].(string); owner == itoa(u.ID) {
			kept = append(kept, u)
		} else if time.Since(u.Signup) > unclaimedAfter {
			stale = append(stale, itoa(u.ID))
		}
	}
	if len(stale) > 0 {
		if err := s.rdb.ZRem(ctx, s.keys.pendingUsers(), stale...).Err(); err != nil {
			return nil, fmt.Errorf("pending users: %w", err)
		}
	}
	return kept, nil
}

// unclaimedAfter is how long after its sign-up a pending account whose
// login leads elsewhere is taken out of the pending accounts: far past any
// sign-up's claim, which follows its listing within a request.
const unclaimedAfter = 10 * time.Minute

// Approve lets the account login, which waits for approval, sign in, for
// the admin uid (ErrNotAdmin for anyone else; ErrUserNotFound for no such
// login). The account becomes searchable, and the approval goes into the
// audit log. Approving an account that waits for nothing changes nothing
// and logs nothing, but finishes a call that approved it and failed part
// way: its later steps, and its record (flushAudit).
func (s *Service) Approve(ctx context.Context, uid int64, login string) error {
	admin, err := s.requireAdmin(ctx, uid)
	if err != nil {
		return err
	}
	target, err := s.UID(ctx, login)
	if err != nil {
		return err
	}
	targetLogin, err := s.auditTarget(ctx, target)
	if err != nil {
		return fmt.Errorf("approve %q: %w", login, err)
	}
	record, err := newAuditRecord(AuditEntry{Admin: admin.Login, Action: AuditApprove, Target: targetLogin})
	if err != nil {
		return err
	}
	k := s.keys
	approved, err := approveScript.Run(ctx, s.rdb, []string{k.user(target)}, record).Slice()
	if errors.Is(err, redis.Nil) {
		return ErrUserNotFound
	}
	if err != nil {
		return fmt.Errorf("approve %q: %w", login, err)
	}
	// From the approval on, the call runs though the client goes.
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := s.indexApproved(ctx, target, approved); err != nil {
		return fmt.Errorf("approve %q: %w", login, err)
	}
	return s.flushAudit(ctx, k.user(target))
}

// indexApproved takes the account target out of the pending list and
// indexes it for search, as approveScript's reply (approved) names it: on
// every call, so that a retry of one cut short finishes it.
func (s *Service) indexApproved(ctx context.Context, target int64, approved []any) error {
	k := s.keys
	targetLogin, _ := approved[1].(string)
	name, _ := approved[2].(string)
	entries := searchEntries(target, targetLogin, name)
	members := make([]redis.Z, len(entries))
	for i, e := range entries {
		members[i] = redis.Z{Member: e}
	}
	pipe := s.rdb.Pipeline()
	pipe.ZRem(ctx, k.pendingUsers(), target)
	pipe.ZAdd(ctx, k.searchIndex(), members...)
	_, err := pipe.Exec(ctx)
	return err
}
