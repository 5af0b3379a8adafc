package social

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxAuditEntries is how many admin actions the audit log keeps: the
// newest.
const MaxAuditEntries = 10_000

// Admin actions, as the audit log names them.
const (
	AuditApprove       = "approve"        // a sign-up approved
	AuditResolveReport = "resolve_report" // a report resolved; the target is the account reported
	AuditSuspend       = "suspend"        // an account suspended
	AuditUnsuspend     = "unsuspend"      // an account's suspension lifted
)

// AuditEntry is one admin action: who did what to whom, and when.
type AuditEntry struct {
	Admin  string    `json:"admin"`  // the admin's login
	Action string    `json:"action"` // one of the Audit constants
	Target string    `json:"target"` // the login acted on
	At     time.Time `json:"at"`
}

// audit queues entry in pipe: pushed at the head of the audit log, which
// keeps the newest MaxAuditEntries. Every admin action writes its entry
// with the pipeline of its own change, so that no change goes unlogged
// (on a cluster the log is in a slot of its own: the two are not one
// step, and the entry goes with the change's last write).
func (s *Service) audit(ctx context.Context, pipe redis.Pipeliner, entry AuditEntry) error {
	raw, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	pipe.LPush(ctx, s.keys.auditLog(), raw)
	pipe.LTrim(ctx, s.keys.auditLog(), 0, MaxAuditEntries-1)
	return nil
}

// AuditLog pages through the audit log, newest first, for the admin uid
// (ErrNotAdmin for anyone else).
func (s *Service) AuditLog(ctx context.Context, uid int64, p Page) ([]AuditEntry, error) {
	if _, err := s.requireAdmin(ctx, uid); err != nil {
		return nil, err
	}
	raws, err := s.rdb.LRange(ctx, s.keys.auditLog(), int64(p.Offset), int64(p.Offset+p.Limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	entries := make([]AuditEntry, 0, len(raws))
	for _, raw := range raws {
		var e AuditEntry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			continue // not an entry this version wrote; nothing to show of it
		}
		e.At = e.At.UTC()
		entries = append(entries, e)
	}
	return entries, nil
}
