package social

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// Reports are filed with the statuses they point at, refused when they
// point wrong, listed open first (oldest first) then resolved (newest
// resolved first), and resolved once.
func TestReports(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	alice, bob, carol := signUp(t, s, "alice"), signUp(t, s, "bob"), signUp(t, s, "carol")
	mean := post(t, s, bob.ID, "something mean")
	other := post(t, s, carol.ID, "not bob's")

	for _, c := range []struct {
		login  string
		ids    []int64
		reason string
		field  string
	}{
		{"bob", nil, "  ", "reason"},
		{"bob", nil, strings.Repeat("x", MaxReportReason+1), "reason"},
		{"bob", nil, "bad\x00", "reason"},
		{"bob", []int64{other.ID}, "spam", "status_ids"},
		{"bob", []int64{mean.ID + 1000}, "spam", "status_ids"},
		{"bob", []int64{-1}, "spam", "status_ids"},
		{"bob", make([]int64, 0, 1), "spam", ""},
		{"alice", nil, "me", "login"},
	} {
		_, err := s.FileReport(ctx, alice.ID, c.login, c.ids, c.reason)
		var inv *InvalidError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("report of %s %v %q: %v, want it filed", c.login, c.ids, c.reason, err)
		case c.field != "" && (!errors.As(err, &inv) || inv.Field != c.field):
			t.Errorf("report of %s %v %q: err = %v, want invalid %s", c.login, c.ids, c.reason, err, c.field)
		}
	}
	many := make([]int64, MaxReportStatuses+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	if _, err := s.FileReport(ctx, alice.ID, "bob", many, "spam"); !errors.As(err, new(*InvalidError)) {
		t.Errorf("report of %d statuses: err = %v, want invalid", len(many), err)
	}
	if _, err := s.FileReport(ctx, alice.ID, "nobody_here", nil, "spam"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("report of an unknown login: err = %v, want ErrUserNotFound", err)
	}
	if n := rdb.ZCard(ctx, s.keys.reportsOpen()).Val(); n != 1 {
		t.Fatalf("%d reports open after one good one among refusals, want 1", n)
	}

	second, err := s.FileReport(ctx, carol.ID, "bob", []int64{mean.ID, mean.ID}, "  mean to me  ")
	if err != nil {
		t.Fatal(err)
	}
	third, err := s.FileReport(ctx, bob.ID, "carol", nil, "spam")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ResolveReport(ctx, alice.ID, second); err != nil || !ok {
		t.Fatalf("resolve: %v, %v", ok, err)
	}
	if ok, err := s.ResolveReport(ctx, alice.ID, second); err != nil || ok {
		t.Fatalf("resolve again: %v, %v, want false, nil", ok, err)
	}
	if _, err := s.ResolveReport(ctx, alice.ID, third+100); !errors.Is(err, ErrReportNotFound) {
		t.Fatalf("resolve an unknown report: %v, want ErrReportNotFound", err)
	}
	reports, err := s.Reports(ctx, 0, MaxReportsPage)
	if err != nil {
		t.Fatal(err)
	}
	var order []int64
	for _, r := range reports {
		order = append(order, r.ID)
	}
	if want := []int64{second - 1, third, second}; !slices.Equal(order, want) {
		t.Fatalf("reports in order %v, want %v (open oldest first, then resolved)", order, want)
	}
	r := reports[2]
	if r.Reporter.Login != "carol" || r.Account.Login != "bob" || r.Reason != "mean to me" ||
		len(r.Statuses) != 1 || r.Statuses[0].ID != mean.ID || r.Resolved == nil || r.ResolvedBy == nil || r.ResolvedBy.Login != "alice" {
		t.Fatalf("resolved report = %+v", r)
	}
	if reports[0].Resolved != nil || reports[0].ResolvedBy != nil {
		t.Fatalf("open report shows resolved: %+v", reports[0])
	}
	page, err := s.Reports(ctx, 1, 1)
	if err != nil || len(page) != 1 || page[0].ID != third {
		t.Fatalf("second page of one = %+v, %v, want report %d", page, err, third)
	}
	page, err = s.Reports(ctx, 2, 5)
	if err != nil || len(page) != 1 || page[0].ID != second {
		t.Fatalf("third page = %+v, %v, want report %d", page, err, second)
	}
	for _, c := range [][2]int{{0, 0}, {0, MaxReportsPage + 1}, {-1, 5}} {
		if _, err := s.Reports(ctx, c[0], c[1]); !errors.As(err, new(*InvalidError)) {
			t.Errorf("Reports(offset %d, limit %d): err = %v, want invalid", c[0], c[1], err)
		}
	}
}

// Resolved reports come most recently resolved first, whatever order they
// were filed in.
func TestResolvedReportsNewestResolvedFirst(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	alice, bob := signUp(t, s, "alice"), signUp(t, s, "bob")
	first, err := s.FileReport(ctx, alice.ID, "bob", nil, "spam")
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.FileReport(ctx, alice.ID, "bob", nil, "spam again")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{second, first} {
		if _, err := s.ResolveReport(ctx, bob.ID, id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // a later resolution, by the clock
	}
	reports, err := s.Reports(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range reports {
		got = append(got, r.ID)
	}
	if want := []int64{first, second}; !slices.Equal(got, want) {
		t.Errorf("reports %v, want %v (resolved last first)", got, want)
	}
}
