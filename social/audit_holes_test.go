package social

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// errAuditInjected is the error auditFailHook makes commands fail with.
var errAuditInjected = errors.New("injected redis failure")

// auditFailHook fails, while on, every command whose name and string
// arguments, printed in lower case, match; a pipeline holding one fails
// whole.
type auditFailHook struct {
	on    atomic.Bool
	match func(line string) bool
}

func (h *auditFailHook) fails(c redis.Cmder) bool {
	if !h.on.Load() {
		return false
	}
	line := strings.ToLower(c.Name())
	for _, a := range c.Args()[1:] {
		if s, ok := a.(string); ok {
			line += " " + strings.ToLower(s)
		}
	}
	return h.match(line)
}

func (h *auditFailHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *auditFailHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if h.fails(c) {
			c.SetErr(errAuditInjected)
			return errAuditInjected
		}
		return next(ctx, c)
	}
}

func (h *auditFailHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if h.fails(c) {
				for _, c := range cmds {
					c.SetErr(errAuditInjected)
				}
				return errAuditInjected
			}
		}
		return next(ctx, cmds)
	}
}

// auditFailing is a Service with admins root and root2 whose Redis
// commands fail, while h is on, where match says.
func auditFailing(t *testing.T, opts Options, match func(line string) bool) (*Service, *auditFailHook) {
	t.Helper()
	base, prefix := redistest.Backend(t)
	h := &auditFailHook{match: match}
	opts.Prefix, opts.BcryptCost, opts.Admins = prefix, 4, []string{"root", "root2"}
	return New(redistest.WithHook(t, base, h), opts), h
}

// containing matches the lines that contain every one of parts.
func containing(parts ...string) func(string) bool {
	return func(line string) bool {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				return false
			}
		}
		return true
	}
}

// auditEntries returns the audit log's entries of action, as the admin
// uid reads them.
func auditEntries(t *testing.T, s *Service, admin int64, action string) []AuditEntry {
	t.Helper()
	es, err := s.AuditLog(ctxT(t), admin, Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []AuditEntry
	for _, e := range es {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// wantAudit fails the test unless the audit log holds exactly one entry of
// action, by admin, on target.
func wantAudit(t *testing.T, s *Service, reader int64, action, admin, target string) {
	t.Helper()
	es := auditEntries(t, s, reader, action)
	if len(es) != 1 {
		t.Fatalf("audit log holds %d %s entries (%+v), want 1", len(es), action, es)
	}
	if es[0].Admin != admin || es[0].Target != target {
		t.Errorf("audit entry %+v, want %s by %s on %s", es[0], action, admin, target)
	}
}

// wantNoAuditLeft fails the test if key's hash still holds an intent or a
// pending record.
func wantNoAuditLeft(t *testing.T, s *Service, key string) {
	t.Helper()
	fields, err := s.rdb.HKeys(ctxT(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if strings.HasPrefix(f, "audit_intent:") || strings.HasPrefix(f, "audit_pending:") {
			t.Errorf("%s still holds %s", key, f)
		}
	}
}

// A suspension whose request ends once its script ran is carried out, and
// logged: the steps after the change do not heed the request's end.
func TestAuditSuspendLoggedThoughCancelled(t *testing.T) {
	s, _ := newService(t, Options{Admins: []string{"root"}})
	root, bob := signUp(t, s, "root"), signUp(t, s, "bob")
	ctx, cancel := context.WithCancel(ctxT(t))
	s.afterSuspendScript = func() { s.afterSuspendScript = nil; cancel() }
	if err := s.AdminSuspend(ctx, root.ID, "bob"); err != nil {
		t.Logf("AdminSuspend cancelled: %v", err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob") // with no retry
	if err := s.AdminSuspend(ctxT(t), root.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob")
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// A suspension and its lifting whose audit writes fail are each logged
// once, by the admin's retry, which finds nothing to change.
func TestAuditSuspendLoggedByRetryAfterLogFails(t *testing.T) {
	s, h := auditFailing(t, Options{}, containing("audit:log"))
	ctx := ctxT(t)
	root, bob := signUp(t, s, "root"), signUp(t, s, "bob")
	for _, c := range []struct {
		change func(context.Context, int64, string) error
		action string
	}{{s.AdminSuspend, AuditSuspend}, {s.AdminUnsuspend, AuditUnsuspend}} {
		h.on.Store(true)
		err := c.change(ctx, root.ID, "bob")
		h.on.Store(false)
		if !errors.Is(err, errAuditInjected) {
			t.Fatalf("%s with the audit log failing: %v", c.action, err)
		}
		if err := c.change(ctx, root.ID, "bob"); err != nil {
			t.Fatalf("%s retried: %v", c.action, err)
		}
		wantAudit(t, s, root.ID, c.action, "root", "bob")
	}
	if es, _ := s.AuditLog(ctx, root.ID, Page{Limit: 10}); len(es) != 2 || es[0].Action != AuditUnsuspend {
		t.Errorf("audit log %+v, want the lifting, then the suspension", es)
	}
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// A suspension whose settling fails, after the change, leaves its intent,
// which the retry logs, with the first call's admin.
func TestAuditSuspendIntentLoggedByRetry(t *testing.T) {
	s, h := auditFailing(t, Options{}, containing(strings.ToLower(auditSettleScript.Hash())))
	ctx := ctxT(t)
	root, _, bob := signUp(t, s, "root"), signUp(t, s, "root2"), signUp(t, s, "bob")
	h.on.Store(true)
	err := s.AdminSuspend(ctx, root.ID, "bob")
	h.on.Store(false)
	if !errors.Is(err, errAuditInjected) {
		t.Fatalf("AdminSuspend with its settling failing: %v", err)
	}
	root2, err := s.UID(ctx, "root2")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AdminSuspend(ctx, root2, "bob"); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob")
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// A record pushed to the log whose clearing then fails is pushed again by
// the retry, and found there: the log holds it once.
func TestAuditPushedOnceThoughClearingFails(t *testing.T) {
	s, h := auditFailing(t, Options{}, containing("hdel", "audit_pending:"))
	ctx := ctxT(t)
	root, bob := signUp(t, s, "root"), signUp(t, s, "bob")
	h.on.Store(true)
	err := s.AdminSuspend(ctx, root.ID, "bob")
	h.on.Store(false)
	if !errors.Is(err, errAuditInjected) {
		t.Fatalf("AdminSuspend with its clearing failing: %v", err)
	}
	if err := s.AdminSuspend(ctx, root.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob")
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// Two admins asking for one change at once, both intents recorded before
// it, log it once: with the admin whose call settles first, whatever the
// order the intents are read in. Each round is a change, the suspension
// and its lifting in turn.
func TestAuditRacingIntentsLogOneChange(t *testing.T) {
	s, _ := newService(t, Options{Admins: []string{"root", "root2"}})
	ctx := ctxT(t)
	root, _, bob := signUp(t, s, "root"), signUp(t, s, "root2"), signUp(t, s, "bob")
	for round := range 8 {
		suspend := round%2 == 0
		action := map[bool]string{true: AuditSuspend, false: AuditUnsuspend}[suspend]
		first := map[bool]string{true: "root", false: "root2"}[round%4 < 2]
		intents := map[string]string{}
		for _, admin := range []string{"root2", "root"} {
			ref, record, err := newAuditRecord(AuditEntry{Admin: admin, Action: action, Target: "bob"})
			if err != nil {
				t.Fatal(err)
			}
			intents[admin] = auditIntentField(ref)
			if err := s.recordIntent(ctx, bob.ID, suspend, intents[admin], record); err != nil {
				t.Fatal(err)
			}
		}
		if changed, err := s.setSuspended(ctx, bob.ID, suspend); err != nil || !changed {
			t.Fatalf("round %d: %s: %v %v", round, action, changed, err)
		}
		second := map[string]string{"root": "root2", "root2": "root"}[first]
		for _, admin := range []string{first, second} {
			if err := s.flushAudit(ctx, s.keys.user(bob.ID), intents[admin]); err != nil {
				t.Fatal(err)
			}
		}
		es, err := s.AuditLog(ctx, root.ID, Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != round+1 || es[0].Action != action || es[0].Admin != first {
			t.Fatalf("round %d: audit log %+v, want %d entries, the newest %s by %s", round, es, round+1, action, first)
		}
		wantNoAuditLeft(t, s, s.keys.user(bob.ID))
	}
}

// A suspension whose script fails leaves no intent behind to be taken for
// a later admin's change.
func TestAuditFailedChangeLeavesNoIntent(t *testing.T) {
	s, h := auditFailing(t, Options{}, containing(strings.ToLower(suspendScript.Hash())))
	ctx := ctxT(t)
	root, _, bob := signUp(t, s, "root"), signUp(t, s, "root2"), signUp(t, s, "bob")
	root2, err := s.UID(ctx, "root2")
	if err != nil {
		t.Fatal(err)
	}
	h.on.Store(true)
	err = s.AdminSuspend(ctx, root2, "bob")
	h.on.Store(false)
	if !errors.Is(err, errAuditInjected) {
		t.Fatalf("AdminSuspend with its script failing: %v", err)
	}
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
	if err := s.AdminSuspend(ctx, root.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob")
}

// A report resolved while the audit log fails is logged by the retry.
func TestAuditResolveLoggedByRetryAfterLogFails(t *testing.T) {
	s, h := auditFailing(t, Options{}, containing("audit:log"))
	ctx := ctxT(t)
	root, _, carol := signUp(t, s, "root"), signUp(t, s, "bob"), signUp(t, s, "carol")
	id, err := s.FileReport(ctx, carol.ID, "bob", nil, "rude")
	if err != nil {
		t.Fatal(err)
	}
	h.on.Store(true)
	err = s.AdminResolveReport(ctx, root.ID, id)
	h.on.Store(false)
	if !errors.Is(err, errAuditInjected) {
		t.Fatalf("resolve with the audit log failing: %v", err)
	}
	if err := s.AdminResolveReport(ctx, root.ID, id); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditResolveReport, "root", "bob")
	wantNoAuditLeft(t, s, s.keys.report(id))
}

// Two like changes (two reports of one account resolved by one admin, in
// one millisecond) are two records, both logged: each has a reference of
// its own.
func TestAuditLikeChangesStayTwo(t *testing.T) {
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	var records []any
	var at time.Time
	for i := range 2 {
		_, record, err := newAuditRecord(AuditEntry{Admin: "root", Action: AuditResolveReport, Target: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		var r auditRecord
		if err := json.Unmarshal([]byte(record), &r); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			at = r.At
		}
		r.At = at
		raw, _ := json.Marshal(r)
		records = append(records, string(raw))
	}
	args := append([]any{MaxAuditEntries}, records...)
	if err := auditPushScript.Run(ctx, rdb, []string{s.keys.auditLog()}, args...).Err(); err != nil {
		t.Fatal(err)
	}
	if n := rdb.LLen(ctx, s.keys.auditLog()).Val(); n != 2 {
		t.Errorf("audit log holds %d entries of two like changes, want 2", n)
	}
}

// An approval whose last round trips fail is finished, and logged, by the
// retry.
func TestAuditApproveLoggedByRetryAfterLogFails(t *testing.T) {
	s, h := auditFailing(t, Options{Registrations: RegistrationsApproval}, containing("audit:log"))
	ctx := ctxT(t)
	root := signUp(t, s, "root")
	newbie, _, err := s.SignUp(ctx, "newbie", "N", "password-newbie")
	if err != nil {
		t.Fatal(err)
	}
	h.on.Store(true)
	err = s.Approve(ctx, root.ID, "newbie")
	h.on.Store(false)
	if !errors.Is(err, errAuditInjected) {
		t.Fatalf("approve with the audit log failing: %v", err)
	}
	if err := s.Approve(ctx, root.ID, "newbie"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SignIn(ctx, "newbie", "password-newbie", "192.0.2.1"); err != nil {
		t.Errorf("sign-in once approved: %v", err)
	}
	wantAudit(t, s, root.ID, AuditApprove, "root", "newbie")
	wantNoAuditLeft(t, s, s.keys.user(newbie.ID))
}

// The audit log keeps its newest entries, as many as it is told.
func TestAuditPushKeepsTheNewest(t *testing.T) {
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	key := s.keys.auditLog()
	for _, r := range []string{"a", "b", "c", "d", "b"} {
		if err := auditPushScript.Run(ctx, rdb, []string{key}, 3, r).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := rdb.LRange(ctx, key, 0, -1).Val(); strings.Join(got, "") != "dcb" {
		t.Errorf("audit log %q, want d c b", got)
	}
}

// A report of a suspended account, or of one being deleted, is answered
// as its profile is, not found; a status hidden by a suspension is refused
// as one that is not there.
func TestAuditReportOfHiddenAccountNotFound(t *testing.T) {
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	bad, gone, carol := signUp(t, s, "bad"), signUp(t, s, "gone"), signUp(t, s, "carol")
	st := post(t, s, bad.ID, "spam")
	if _, err := s.Suspend(ctx, bad.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserByLogin(ctx, "bad"); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("profile of a suspended account: %v", err)
	}
	if _, err := s.FileReport(ctx, carol.ID, "bad", []int64{st.ID}, "spam"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("report of a suspended account: %v, want %v", err, ErrUserNotFound)
	}
	if err := rdb.HSet(ctx, s.keys.user(gone.ID), "deleted", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FileReport(ctx, carol.ID, "gone", nil, "spam"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("report of an account being deleted: %v, want %v", err, ErrUserNotFound)
	}

	// The suspension lifted, a status still hidden (its job not past it
	// yet) reads as not there, and is reported as one that is not.
	if _, err := s.Unsuspend(ctx, bad.ID); err != nil {
		t.Fatal(err)
	}
	if err := hideStatusScript.Run(ctx, rdb, []string{s.keys.status(st.ID)}, "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(ctx, st.ID); !errors.Is(err, ErrStatusNotFound) {
		t.Fatalf("hidden status read: %v", err)
	}
	_, none := s.FileReport(ctx, carol.ID, "bad", []int64{st.ID + 1000}, "spam")
	_, hidden := s.FileReport(ctx, carol.ID, "bad", []int64{st.ID}, "spam")
	if hidden == nil || none == nil || hidden.Error() != none.Error() {
		t.Errorf("report of a hidden status: %v; of one not there: %v; want the same refusal", hidden, none)
	}
	if _, err := s.FileReport(ctx, carol.ID, "bad", nil, "spam"); err != nil {
		t.Errorf("report of the account once its suspension is lifted: %v", err)
	}
}
