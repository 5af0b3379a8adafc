package social

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The admins' side of reports and suspensions: each checks that uid is an
// admin (ErrNotAdmin), and every change it makes is written to the audit
// log, once, though the call fail part way (flushAudit).

// AdminReports is Reports, for the admin uid.
func (s *Service) AdminReports(ctx context.Context, uid int64, offset, limit int) ([]Report, error) {
	if _, err := s.requireAdmin(ctx, uid); err != nil {
		return nil, err
	}
	return s.Reports(ctx, offset, limit)
}

// AdminResolveReport resolves report id, by the admin uid; resolving it
// again changes nothing and logs nothing, but for the record of a call
// that resolved it and failed before its record reached the log: that
// record is logged then.
func (s *Service) AdminResolveReport(ctx context.Context, uid, id int64) error {
	admin, err := s.requireAdmin(ctx, uid)
	if err != nil {
		return err
	}
	account, err := s.rdb.HGet(ctx, s.keys.report(id), "account").Int64()
	if errors.Is(err, redis.Nil) {
		return ErrReportNotFound
	}
	if err != nil {
		return fmt.Errorf("resolve report %d: %w", id, err)
	}
	target, err := s.auditTarget(ctx, account)
	if err != nil {
		return fmt.Errorf("resolve report %d: %w", id, err)
	}
	record, err := newAuditRecord(AuditEntry{Admin: admin.Login, Action: AuditResolveReport, Target: target})
	if err != nil {
		return err
	}
	if _, err := s.resolveReport(ctx, uid, id, record); err != nil {
		return err
	}
	return s.flushAudit(ctx, s.keys.report(id))
}

// AdminSuspend suspends the account login (Suspend), by the admin uid. An
// admin cannot suspend themselves, nor another admin (ErrSuspendAdmin):
// one admin could otherwise shut every other out, and only the operator,
// who names the admins (Options.Admins), takes one out. Lifting an admin's
// suspension (one made before this rule) is allowed.
func (s *Service) AdminSuspend(ctx context.Context, uid int64, login string) error {
	return s.adminSetSuspended(ctx, uid, login, true)
}

// AdminUnsuspend lifts the suspension of the account login (Unsuspend), by
// the admin uid.
func (s *Service) AdminUnsuspend(ctx context.Context, uid int64, login string) error {
	return s.adminSetSuspended(ctx, uid, login, false)
}

// adminSetSuspended makes the change with its audit record, which the
// change's own script writes (suspend.lua), then flushes the records
// pending in the account's hash to the log: its own, and any a call cut
// short left (whose retry finds nothing to change and comes here too).
func (s *Service) adminSetSuspended(ctx context.Context, uid int64, login string, suspend bool) error {
	admin, err := s.requireAdmin(ctx, uid)
	if err != nil {
		return err
	}
	target, err := s.UID(ctx, login)
	if err != nil {
		return err
	}
	if target == uid {
		return invalid("login", "must not be your own")
	}
	if login, err = s.auditTarget(ctx, target); err != nil {
		return fmt.Errorf("suspension of %d: %w", target, err)
	}
	if suspend && s.adminLogin(login) {
		return ErrSuspendAdmin
	}
	action := AuditUnsuspend
	if suspend {
		action = AuditSuspend
	}
	record, err := newAuditRecord(AuditEntry{Admin: admin.Login, Action: action, Target: login})
	if err != nil {
		return err
	}
	_, err = s.setSuspended(ctx, target, suspend, record)
	if errors.Is(err, ErrUserNotFound) {
		return err
	}
	if ferr := s.flushAudit(ctx, s.keys.user(target)); err == nil {
		err = ferr
	}
	return err
}

// auditTarget is the login of account uid, as the audit log names it: its
// id ("#7") once the account is gone.
func (s *Service) auditTarget(ctx context.Context, uid int64) (string, error) {
	u, err := s.usersByIDAll(ctx, []int64{uid})
	if err != nil {
		return "", err
	}
	if len(u) == 1 {
		return u[0].Login, nil
	}
	return "#" + strconv.FormatInt(uid, 10), nil
}

// AdminSuspended is Suspended, for the admin uid.
func (s *Service) AdminSuspended(ctx context.Context, uid int64, p Page) ([]User, error) {
	if _, err := s.requireAdmin(ctx, uid); err != nil {
		return nil, err
	}
	return s.Suspended(ctx, p)
}
