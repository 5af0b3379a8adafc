package social

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"time"
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

// How an admin action is logged, once and only once, though any one of its
// round trips fail (a client gone, a deadline, Redis failing for a moment):
// the change's own script, in the changed object's slot, writes the
// change's audit record into the object's hash (a field
// audit_pending:<name>), and writes none when it changes nothing.
// flushAudit then, on a context the request's end does not cut short,
// pushes the pending records to the log and clears them. On a cluster the
// log is in a slot of its own, so the push and the clearing are two steps:
// a push repeated, after a clearing that failed, finds its record in the
// log and pushes nothing (audit_push.lua). A call that fails after its
// change leaves its record in the hash, and the admin's retry, which finds
// nothing to change, flushes it; so does a suspension's job
// (settleSuspension), should no retry come.

var (
	//go:embed audit_settle.lua
	auditSettleSource string
	auditSettleScript = newScript(auditSettleSource)

	//go:embed audit_push.lua
	auditPushSource string
	auditPushScript = newScript(auditPushSource)
)

// auditRecord is an entry as the log stores it: with a reference unique to
// its change, so that a record pushed again is known for the same, and two
// like changes in one millisecond (two reports of one account resolved)
// stay two. AuditLog reads the entry and leaves the reference.
type auditRecord struct {
	AuditEntry
	Ref string `json:"ref"`
}

// newAuditRecord stamps entry now, for a change about to be made, and
// returns its record, with a reference of its own.
func newAuditRecord(entry AuditEntry) (string, error) {
	entry.At = time.Now().UTC().Truncate(time.Millisecond)
	raw, err := json.Marshal(auditRecord{AuditEntry: entry, Ref: rand.Text()})
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

// flushAudit pushes to the audit log the records pending in the hash key
// (a user's or a report's), and clears them. It runs though ctx ends: it
// comes after a change. Each record goes to the log once; one pushed late
// (by a retry) goes in at the head, so the log's order is that of the
// pushes, which may differ a little from that of the records' times.
func (s *Service) flushAudit(ctx context.Context, key string) error {
	ctx, cancel := detached(ctx)
	defer cancel()
	pairs, err := auditSettleScript.Run(ctx, s.rdb, []string{key}).StringSlice()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if len(pairs) == 0 {
		return nil
	}
	fields, records := oldestFirst(pairs)
	args := append([]any{MaxAuditEntries}, records...)
	if err := auditPushScript.Run(ctx, s.rdb, []string{s.keys.auditLog()}, args...).Err(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := s.rdb.HDel(ctx, key, fields...).Err(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// oldestFirst splits pairs (field, record, ...) into the fields and the
// records, the records in the order of their times, oldest first: pushed
// so, the newest is at the head.
func oldestFirst(pairs []string) (fields []string, records []any) {
	type pending struct {
		field, record string
		at            time.Time
	}
	ps := make([]pending, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		p := pending{field: pairs[i], record: pairs[i+1]}
		var r auditRecord
		if json.Unmarshal([]byte(p.record), &r) == nil {
			p.at = r.At
		}
		ps = append(ps, p)
	}
	slices.SortStableFunc(ps, func(a, b pending) int { return a.at.Compare(b.at) })
	for _, p := range ps {
		fields = append(fields, p.field)
		records = append(records, p.record)
	}
	return fields, records
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
