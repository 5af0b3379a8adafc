package social

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// Bounds of reports.
const (
	MaxReportReason   = 1000 // characters of a report's reason, after trimming
	MaxReportStatuses = 20   // statuses one report may point at
	MaxReportsPage    = 20   // reports one page of the admins' list holds
)

// Report is a complaint about an account (protocol.Report).
type Report = protocol.Report

// ErrReportNotFound: there is no report of that id.
var ErrReportNotFound = errors.New("no such report")

var (
	//go:embed report_resolve.lua
	reportResolveSource string
	reportResolveScript = newScript(reportResolveSource)
)

var reportFields = []string{"id", "reporter", "account", "statuses", "reason", "created", "resolved", "resolved_by"}

// FileReport files reporter's report of the account login, with the
// statuses of that account it points at (at most MaxReportStatuses) and a
// reason (1 to MaxReportReason characters after trimming, as a message's
// rules). It returns the report's id. One write, a transaction in the
// reports' slot, whatever the number of reports. An account hidden from
// everyone (suspended, or being deleted) is ErrUserNotFound, as its
// profile answers, and a status its suspension hides is refused as one
// that is not there: a report tells its reporter nothing that the reads
// do not.
func (s *Service) FileReport(ctx context.Context, reporter int64, login string, statusIDs []int64, reason string) (int64, error) {
	if !utf8.ValidString(reason) {
		return 0, invalid("reason", "must be valid UTF-8")
	}
	reason = strings.TrimSpace(reason)
	if n := utf8.RuneCountInString(reason); n == 0 || n > MaxReportReason {
		return 0, invalid("reason", "must be 1 to %d characters after trimming", MaxReportReason)
	}
	if strings.ContainsFunc(reason, forbiddenInMessage) {
		return 0, invalid("reason", "must not contain control characters other than tab, newline and carriage return, nor bidirectional embeddings, overrides or isolates")
	}
	ids := slices.Clone(statusIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > MaxReportStatuses {
		return 0, invalid("status_ids", "must name at most %d statuses", MaxReportStatuses)
	}
	if len(ids) > 0 && ids[0] <= 0 {
		return 0, invalid("status_ids", "must be status ids")
	}
	account, err := s.shownUID(ctx, login)
	if err != nil {
		return 0, err
	}
	if account == reporter {
		return 0, invalid("login", "must not be your own")
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	authors := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		authors[i] = pipe.HMGet(ctx, k.status(id), "uid", "hidden")
	}
	now := pipe.Time(ctx)
	// The report's id is taken with the reads: one refused, or cut short
	// before its write, leaves a gap in the ids, which name reports and
	// count nothing.
	seq := pipe.Incr(ctx, k.reportSeq())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("report %d: %w", account, err)
	}
	for _, a := range authors {
		if !shownStatusOf(a.Val(), account) {
			return 0, invalid("status_ids", "must be statuses of the account reported")
		}
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = itoa(id)
	}
	id := seq.Val()
	_, err = s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, k.report(id), "id", id, "reporter", reporter, "account", account,
			"statuses", strings.Join(list, ","), "reason", reason, "created", now.Val().UnixMilli())
		pipe.ZAdd(ctx, k.reportsOpen(), redis.Z{Score: float64(id), Member: id})
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("report %d: %w", account, err)
	}
	return id, nil
}

// shownStatusOf reports whether a status's uid and hidden fields, as read,
// are those of a status of account that is shown: neither gone nor hidden
// by a suspension.
func shownStatusOf(v []any, account int64) bool {
	if len(v) != 2 {
		return false
	}
	uid, _ := v[0].(string)
	return uid == itoa(account) && v[1] == nil
}

// Reports returns a page of reports for the admins: the open ones first,
// oldest first, then the resolved ones, newest resolved first; offset counts
// from the first open one. A page is at most MaxReportsPage reports and
// three round trips: the ids, the reports, then their users and statuses.
func (s *Service) Reports(ctx context.Context, offset, limit int) ([]Report, error) {
	if limit < 1 || limit > MaxReportsPage {
		return nil, invalid("limit", "must be from 1 to %d", MaxReportsPage)
	}
	if offset < 0 {
		return nil, invalid("offset", "must not be negative")
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	open := pipe.ZRange(ctx, k.reportsOpen(), int64(offset), int64(offset+limit-1))
	nOpen := pipe.ZCard(ctx, k.reportsOpen())
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	ids := open.Val()
	if rest := limit - len(ids); rest > 0 {
		from := max(0, int64(offset)-nOpen.Val())
		resolved, err := s.rdb.ZRevRange(ctx, k.reportsResolved(), from, from+int64(rest)-1).Result()
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		ids = append(ids, resolved...)
	}
	return s.readReports(ctx, parseIDs(ids))
}

// readReports reads reports by id, in order, with their users and the
// statuses they point at that are still there.
func (s *Service) readReports(ctx context.Context, ids []int64) ([]Report, error) {
	reports := []Report{}
	if len(ids) == 0 {
		return reports, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.report(id), reportFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	type raw struct {
		r                           Report
		reporter, account, resolver int64
		statuses                    []int64
	}
	var raws []raw
	var uids, sids []int64
	for _, c := range cmds {
		v := c.Val()
		str := func(i int) string { s, _ := v[i].(string); return s }
		num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
		if str(0) == "" {
			continue
		}
		x := raw{r: Report{ID: num(0), Reason: str(4), Created: unixMilli(str(5)), Statuses: []Status{}},
			reporter: num(1), account: num(2), resolver: num(7)}
		if str(3) != "" {
			x.statuses = parseIDs(strings.Split(str(3), ","))
		}
		if str(6) != "" {
			t := unixMilli(str(6))
			x.r.Resolved = &t
		}
		uids = append(uids, x.reporter, x.account)
		if x.resolver != 0 {
			uids = append(uids, x.resolver)
		}
		sids = append(sids, x.statuses...)
		raws = append(raws, x)
	}
	// The admins read a suspended account and its statuses as they were:
	// the report is what they act on, before and after the suspension.
	users, err := s.usersByIDAll(ctx, uids)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	sts, err := s.reportedStatuses(ctx, sids)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	byUID := map[int64]protocol.UserRef{}
	suspended := map[int64]bool{}
	for _, u := range users {
		byUID[u.ID] = u.Ref()
		suspended[u.ID] = u.Suspended
	}
	bySID := map[int64]Status{}
	for _, st := range sts {
		bySID[st.ID] = st
	}
	ref := func(uid int64) protocol.UserRef {
		if r, ok := byUID[uid]; ok {
			return r
		}
		return protocol.UserRef{ID: uid} // a deleted account: its id alone
	}
	for _, x := range raws {
		x.r.Reporter, x.r.Account = ref(x.reporter), ref(x.account)
		x.r.AccountSuspended = suspended[x.account]
		if x.resolver != 0 {
			r := ref(x.resolver)
			x.r.ResolvedBy = &r
		}
		for _, id := range x.statuses {
			if st, ok := bySID[id]; ok {
				x.r.Statuses = append(x.r.Statuses, st)
			}
		}
		reports = append(reports, x.r)
	}
	return reports, nil
}

// ResolveReport closes report id, by admin. Resolving a resolved report
// changes nothing (resolved is false); an unknown one is ErrReportNotFound.
func (s *Service) ResolveReport(ctx context.Context, admin, id int64) (resolved bool, err error) {
	return s.resolveReport(ctx, admin, id, "")
}

// resolveReport is ResolveReport, whose script also writes the audit
// record of the resolution, when there is one, into the report's hash
// (see flushAudit).
func (s *Service) resolveReport(ctx context.Context, admin, id int64, record string) (bool, error) {
	k := s.keys
	n, err := reportResolveScript.Run(ctx, s.rdb, []string{k.report(id), k.reportsOpen(), k.reportsResolved()},
		id, admin, time.Now().UnixMilli(), record).Int()
	switch {
	case err != nil:
		return false, fmt.Errorf("resolve report %d: %w", id, err)
	case n < 0:
		return false, ErrReportNotFound
	}
	return n == 1, nil
}

// reportedStatuses reads statuses as statusesByID does, those hidden by
// their author's suspension included: for the admins' reports.
func (s *Service) reportedStatuses(ctx context.Context, ids []int64) ([]Status, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	hidden := slices.Index(statusFields, "hidden")
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.status(id), statusFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(ids))
	for _, c := range cmds {
		v := c.Val()
		v[hidden] = nil
		if st, ok := parseStatus(v); ok {
			out = append(out, st)
		}
	}
	return out, nil
}
