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
	_, record, err := newAuditRecord(AuditEntry{Admin: admin.Login, Action: AuditResolveReport, Target: target})
	if err != nil {
		return err
	}
	if _, err := s.resolveReport(ctx, uid, id, record); err != nil {
		return err
	}
	return s.flushAudit(ctx, s.keys.report(id), "")
}

// AdminSuspend suspends the account login (Suspend), by the admin uid. An
// admin cannot suspend themselves.
func (s *Service) AdminSuspend(ctx context.Context, uid int64, login string) error {
	return s.adminSetSuspended(ctx, uid, login, true)
}

// AdminUnsuspend lifts the suspension of the account login (Unsuspend), by
// the admin uid.
func (s *Service) AdminUnsuspend(ctx context.Context, uid int64, login string) error {
	return s.adminSetSuspended(ctx, uid, login, false)
}

// adminSetSuspended records the admin's intent in the account's hash
// before the change (audit_intent.lua): the suspension's script is not
// the audit's to extend, and an intent that outlives a failed call is
// logged by the retry once the change it asked for took place.
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
	action := AuditUnsuspend
	if suspend {
		action = AuditSuspend
	}
	ref, record, err := newAuditRecord(AuditEntry{Admin: admin.Login, Action: action, Target: login})
	if err != nil {
		return err
	}
	intent := auditIntentField(ref)
	if err := s.recordIntent(ctx, target, suspend, intent, record); err != nil {
		return err
	}
	// Flushed whatever became of the change: an intent whose change did
	// not take place is dropped, one whose change did is logged.
	_, err = s.setSuspended(ctx, target, suspend)
	if ferr := s.flushAudit(ctx, s.keys.user(target), intent); err == nil {
		err = ferr
	}
	return err
}

// recordIntent records, in uid's hash, the intent of a suspension (or its
// lifting) about to be asked for, with its audit record; nothing when the
// account is so already.
func (s *Service) recordIntent(ctx context.Context, uid int64, suspend bool, intent, record string) error {
	flag := "0"
	if suspend {
		flag = "1"
	}
	n, err := auditIntentScript.Run(ctx, s.rdb, []string{s.keys.user(uid)}, flag, intent, record).Int()
	switch {
	case err != nil:
		return fmt.Errorf("suspension of %d: %w", uid, err)
	case n < 0:
		return ErrUserNotFound
	}
	return nil
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
