package social

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// auditFailing is a Service with admins root and root2 whose Redis
// commands fail, while h is on, where match picks.
func auditFailing(t *testing.T, opts Options, match func(redis.Cmder) bool) (*Service, *failHook) {
	t.Helper()
	opts.Admins = []string{"root", "root2"}
	return failingService(t, opts, match)
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
	s, h := auditFailing(t, Options{}, allOf("audit:log"))
	ctx := ctxT(t)
	root, bob := signUp(t, s, "root"), signUp(t, s, "bob")
	for _, c := range []struct {
		change func(context.Context, int64, string) error
		action string
	}{{s.AdminSuspend, AuditSuspend}, {s.AdminUnsuspend, AuditUnsuspend}} {
		h.failing(t, c.action+" with the audit log failing", func() error { return c.change(ctx, root.ID, "bob") })
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

// A suspension whose settling fails, after the change, leaves its record,
// which another admin's call logs, with the first call's admin.
func TestAuditSuspendRecordLoggedByRetry(t *testing.T) {
	s, h := auditFailing(t, Options{}, allOf(auditSettleScript.Hash()))
	ctx := ctxT(t)
	root, _, bob := signUp(t, s, "root"), signUp(t, s, "root2"), signUp(t, s, "bob")
	h.failing(t, "AdminSuspend with its settling failing", func() error { return s.AdminSuspend(ctx, root.ID, "bob") })
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
	s, h := auditFailing(t, Options{}, allOf("hdel", "audit_pending:"))
	ctx := ctxT(t)
	root, bob := signUp(t, s, "root"), signUp(t, s, "bob")
	h.failing(t, "AdminSuspend with its clearing failing", func() error { return s.AdminSuspend(ctx, root.ID, "bob") })
	if err := s.AdminSuspend(ctx, root.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob")
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// Admins changing an account between another admin's asking and that
// admin's change each have their change logged, that admin's too: a
// record is written by the change it records. (Records once written ahead
// of the change were each taken for the change right after the one they
// saw, and one was dropped as that change's second record.)
func TestAuditChangesMadeMeanwhileEachLogged(t *testing.T) {
	base, prefix := redistest.Backend(t)
	h := &beforeOnce{match: anyOf(suspendScript.Hash())}
	s := New(redistest.WithHook(t, base, h), Options{Prefix: prefix, BcryptCost: 4, Admins: []string{"root", "root2", "root3"}})
	ctx := ctxT(t)
	root, root2, root3, bob := signUp(t, s, "root"), signUp(t, s, "root2"), signUp(t, s, "root3"), signUp(t, s, "bob")
	h.do = func() {
		if err := s.AdminSuspend(ctx, root2.ID, "bob"); err != nil {
			t.Error(err)
		}
		if err := s.AdminUnsuspend(ctx, root3.ID, "bob"); err != nil {
			t.Error(err)
		}
	}
	if err := s.AdminSuspend(ctx, root.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	es, err := s.AuditLog(ctx, root.ID, Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Action+" by "+e.Admin)
	}
	want := []string{"suspend by root", "unsuspend by root3", "suspend by root2"}
	if !slices.Equal(got, want) {
		t.Errorf("audit log, newest first: %q, want %q", got, want)
	}
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// Admins racing one another over one account log exactly its changes:
// as many suspensions and liftings as its revision counts, none twice,
// none lost, whichever call's change took place.
func TestAuditRacingAdminsLogEveryChange(t *testing.T) {
	admins := []string{"root", "root2", "root3", "root4"}
	s, _ := newService(t, Options{Admins: admins})
	ctx := ctxT(t)
	ids := make([]int64, len(admins))
	for i, a := range admins {
		ids[i] = signUp(t, s, a).ID
	}
	bob := signUp(t, s, "bob")
	var wg sync.WaitGroup
	for i := range admins {
		wg.Go(func() {
			for n := range 12 {
				change := s.AdminSuspend
				if (n+i)%2 == 1 {
					change = s.AdminUnsuspend
				}
				if err := change(ctx, ids[i], "bob"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	rev, err := s.rdb.HGet(ctx, s.keys.user(bob.ID), "suspension_rev").Int()
	if err != nil {
		t.Fatal(err)
	}
	suspends := len(auditEntries(t, s, ids[0], AuditSuspend))
	lifts := len(auditEntries(t, s, ids[0], AuditUnsuspend))
	if suspends != (rev+1)/2 || lifts != rev/2 {
		t.Errorf("audit log holds %d suspensions and %d liftings, want %d and %d (%d changes)", suspends, lifts, (rev+1)/2, rev/2, rev)
	}
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// A suspension whose record failed to reach the log, with no retry, is
// logged by its job.
func TestAuditSuspendLoggedByItsJob(t *testing.T) {
	s, h := auditFailing(t, Options{}, allOf("audit:log"))
	ctx := ctxT(t)
	root, bob := signUp(t, s, "root"), signUp(t, s, "bob")
	h.failing(t, "AdminSuspend with the audit log failing", func() error { return s.AdminSuspend(ctx, root.ID, "bob") })
	runJobIfQueued(t, s, s.keys.job(hideJobID(bob.ID, "1")))
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob")
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
}

// The intent an older build recorded ahead of its change is logged once
// the change is made, and once only: not when a change of this build,
// with its own record, took its place.
func TestAuditOlderBuildsIntent(t *testing.T) {
	s, _ := newService(t, Options{Admins: []string{"root", "root2"}})
	ctx := ctxT(t)
	root, root2, bob := signUp(t, s, "root"), signUp(t, s, "root2"), signUp(t, s, "bob")
	user := s.keys.user(bob.ID)
	intend := func(admin, action string) {
		t.Helper()
		record, err := newAuditRecord(AuditEntry{Admin: admin, Action: action, Target: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := s.rdb.HGet(ctx, user, "suspension_rev").Result()
		if rev == "" {
			rev = "0"
		}
		if err := s.rdb.HSet(ctx, user, "audit_intent:"+admin+rev, rev+" "+record).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// An older build's suspension: its intent, then its mark.
	intend("root2", AuditSuspend)
	if err := s.rdb.HSet(ctx, user, "suspended", time.Now().UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HIncrBy(ctx, user, "suspension_rev", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.flushAudit(ctx, user); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root2", "bob")
	// An older build's intent to lift it, overtaken by this build's lifting.
	intend("root2", AuditUnsuspend)
	if err := s.AdminUnsuspend(ctx, root.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root2.ID, AuditUnsuspend, "root", "bob")
	wantNoAuditLeft(t, s, user)
}

// A suspension whose script fails leaves no record behind to be taken for
// a later admin's change.
func TestAuditFailedChangeLeavesNoRecord(t *testing.T) {
	s, h := auditFailing(t, Options{}, allOf(suspendScript.Hash()))
	ctx := ctxT(t)
	root, _, bob := signUp(t, s, "root"), signUp(t, s, "root2"), signUp(t, s, "bob")
	root2, err := s.UID(ctx, "root2")
	if err != nil {
		t.Fatal(err)
	}
	h.failing(t, "AdminSuspend with its script failing", func() error { return s.AdminSuspend(ctx, root2, "bob") })
	wantNoAuditLeft(t, s, s.keys.user(bob.ID))
	if err := s.AdminSuspend(ctx, root.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, root.ID, AuditSuspend, "root", "bob")
}

// A report resolved while the audit log fails is logged by the retry.
func TestAuditResolveLoggedByRetryAfterLogFails(t *testing.T) {
	s, h := auditFailing(t, Options{}, allOf("audit:log"))
	ctx := ctxT(t)
	root, _, carol := signUp(t, s, "root"), signUp(t, s, "bob"), signUp(t, s, "carol")
	id, err := s.FileReport(ctx, carol.ID, "bob", nil, "rude")
	if err != nil {
		t.Fatal(err)
	}
	h.failing(t, "resolve with the audit log failing", func() error { return s.AdminResolveReport(ctx, root.ID, id) })
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
		record, err := newAuditRecord(AuditEntry{Admin: "root", Action: AuditResolveReport, Target: "bob"})
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
	s, h := auditFailing(t, Options{Registrations: RegistrationsApproval}, allOf("audit:log"))
	ctx := ctxT(t)
	root := signUp(t, s, "root")
	newbie, _, err := s.SignUp(ctx, "newbie", "N", "password-newbie")
	if err != nil {
		t.Fatal(err)
	}
	h.failing(t, "approve with the audit log failing", func() error { return s.Approve(ctx, root.ID, "newbie") })
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
