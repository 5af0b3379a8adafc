package web_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"
)

// Through the API, on two instances: an author who reaches -pull-threshold
// followers is pulled; their followers' home timelines show the author's
// statuses among the others, once each, paged exactly both ways, and not
// a deleted one.
func TestPulledAuthorOverAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{PullThreshold: 2})
	a, b := e.start(), e.start()
	big, small := a.signUp(t, "big"), a.signUp(t, "small")
	reader, other := b.signUp(t, "reader"), b.signUp(t, "other")
	reader.follow("small")
	reader.follow("big")
	other.follow("big") // the second follower: big is made pulled
	testio.Eventually(t, 10*time.Second, func() string {
		if pulls, err := a.social.PulledAuthors(t.Context(), reader.id); err != nil || len(pulls) != 1 {
			return fmt.Sprintf("reader's pulled authors: %v, %v", pulls, err)
		}
		return ""
	})
	var want []int64
	for i := range 4 {
		want = append(want, big.post(fmt.Sprintf("big %d", i)).ID, small.post(fmt.Sprintf("small %d", i)).ID)
	}
	gone := want[2]
	big.must(204, "DELETE", fmt.Sprintf("/api/v1/statuses/%d", gone), nil, nil)
	want = slices.DeleteFunc(want, func(id int64) bool { return id == gone })

	var oldest []int64
	for path := "/api/v1/timelines/home?after=0&limit=3"; ; {
		page := reader.timeline(path)
		oldest = append(oldest, ids(page.Statuses)...)
		if page.NextAfter == nil {
			break
		}
		path = fmt.Sprintf("/api/v1/timelines/home?after=%d&limit=3", *page.NextAfter)
	}
	if !slices.Equal(oldest, want) {
		t.Errorf("oldest first: %v, want %v", oldest, want)
	}
	var newest []int64
	for path := "/api/v1/timelines/home?limit=2"; ; {
		page := reader.timeline(path)
		newest = append(newest, ids(page.Statuses)...)
		if page.NextBefore == nil {
			break
		}
		path = fmt.Sprintf("/api/v1/timelines/home?before=%d&limit=2", *page.NextBefore)
	}
	slices.Reverse(want)
	if !slices.Equal(newest, want) {
		t.Errorf("newest first: %v, want %v", newest, want)
	}
}
