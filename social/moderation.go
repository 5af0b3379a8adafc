package social

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// The admins' side of reports and suspensions: each checks that uid is an
// admin (ErrNotAdmin), and every change it makes is written to the audit
// log.

// AdminReports is Reports, for the admin uid.
func (s *Service) AdminReports(ctx context.Context, uid int64, offset, limit int) ([]Report, error) {
	if _, err := s.requireAdmin(ctx, uid); err != nil {
		return nil, err
	}
	return s.Reports(ctx, offset, limit)
}

// AdminResolveReport resolves report id, by the admin uid; resolving it
// again changes nothing and logs nothing.
func (s *Service) AdminResolveReport(ctx context.Context, uid, id int64) error {
	admin, err := s.requireAdmin(ctx, uid)
	if err != nil {
		return err
	}
	resolved, err := s.ResolveReport(ctx, uid, id)
	if err != nil || !resolved {
		return err
	}
	account, err := s.rdb.HGet(ctx, s.keys.report(id), "account").Int64()
	if err != nil {
		return fmt.Errorf("resolve report %d: %w", id, err)
	}
	target := "#" + strconv.FormatInt(account, 10)
	if u, err := s.usersByIDAll(ctx, []int64{account}); err == nil && len(u) == 1 {
		target = u[0].Login
	}
	return s.writeAudit(ctx, AuditEntry{Admin: admin.Login, Action: AuditResolveReport, Target: target})
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
	changed, err := s.setSuspended(ctx, target, suspend)
	if err != nil || !changed {
		return err
	}
	action := AuditUnsuspend
	if suspend {
		action = AuditSuspend
	}
	u, err := s.usersByIDAll(ctx, []int64{target})
	if err == nil && len(u) == 1 {
		login = u[0].Login
	}
	return s.writeAudit(ctx, AuditEntry{Admin: admin.Login, Action: action, Target: login})
}

// AdminSuspended is Suspended, for the admin uid.
func (s *Service) AdminSuspended(ctx context.Context, uid int64, p Page) ([]User, error) {
	if _, err := s.requireAdmin(ctx, uid); err != nil {
		return nil, err
	}
	return s.Suspended(ctx, p)
}

// writeAudit writes one entry to the audit log, stamped now.
func (s *Service) writeAudit(ctx context.Context, e AuditEntry) error {
	e.At = time.Now().UTC().Truncate(time.Millisecond)
	pipe := s.rdb.Pipeline()
	if err := s.audit(ctx, pipe, e); err != nil {
		return err
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}
