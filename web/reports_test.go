package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/social"
	"chorus/web"

	"github.com/go-redis/redis_rate/v10"
)

// POST /reports files a report; every bad input is refused with the API's
// error and files nothing; past the per-user limit, 429.
func TestFileReport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ReportsPerUser: redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: 12}}
	in := e.start()
	alice, bob := in.signUp(t, "alice"), in.signUp(t, "bob")
	st := bob.post("rude")
	mine := alice.post("mine")

	var made struct {
		Report struct{ ID int64 } `json:"report"`
	}
	alice.must(http.StatusCreated, "POST", "/api/v1/reports",
		map[string]any{"login": "bob", "status_ids": []int64{st.ID}, "reason": "rude to me"}, &made)
	if made.Report.ID <= 0 {
		t.Fatalf("report id = %d", made.Report.ID)
	}
	for _, c := range []struct {
		body any
		want int
		code string
	}{
		{map[string]any{"reason": "x"}, http.StatusBadRequest, "invalid_login"},
		{map[string]any{"login": "bob"}, http.StatusBadRequest, "invalid_reason"},
		{map[string]any{"login": "bob", "reason": " "}, http.StatusBadRequest, "invalid_reason"},
		{map[string]any{"login": "bob", "reason": strings.Repeat("x", 1001)}, http.StatusBadRequest, "invalid_reason"},
		{map[string]any{"login": "bob", "reason": "x", "status_ids": []int64{mine.ID}}, http.StatusBadRequest, "invalid_status_ids"},
		{map[string]any{"login": "bob", "reason": "x", "status_ids": "1"}, http.StatusBadRequest, "invalid_json"},
		{map[string]any{"login": "alice", "reason": "x"}, http.StatusBadRequest, "invalid_login"},
		{map[string]any{"login": "nobody_at_all", "reason": "x"}, http.StatusNotFound, "not_found"},
	} {
		if res := alice.do("POST", "/api/v1/reports", c.body); res.Status != c.want || res.errorCode(t) != c.code {
			t.Errorf("POST /reports %v = %d %s, want %d %s", c.body, res.Status, res.Body, c.want, c.code)
		}
	}
	if res := in.anon(t).do("POST", "/api/v1/reports", map[string]any{"login": "bob", "reason": "x"}); res.Status != http.StatusUnauthorized {
		t.Errorf("a visitor's report = %d %s, want 401", res.Status, res.Body)
	}
	limited := false
	for i := range 20 {
		res := alice.do("POST", "/api/v1/reports", map[string]any{"login": "bob", "reason": fmt.Sprint("again ", i)})
		if res.Status == http.StatusTooManyRequests {
			limited = res.errorCode(t) == "rate_limited" && res.Header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Errorf("20 more reports within the hour were all filed, want a 429 rate_limited with Retry-After")
	}
}
