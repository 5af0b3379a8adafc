package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"

	"github.com/go-redis/redis_rate/v10"
)

// An event stream's resume at its opening (Last-Event-ID) is taken from
// the user's resume budget only once the stream opened: opens refused
// (here 429 too_many_user_streams) spend none of it, and the stream that
// then opens gets its resume.
func TestRefusedEventStreamsSpendNoResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.realtime.ResumeLimit = redis_rate.PerMinute(2)
	e.presence.MaxConnsPerUser = 1
	in := e.start()
	ann := in.signUp(t, "ann_budget")
	bob := in.signUp(t, "bob_budget")
	bob.follow(ann.login)
	st := ann.post("missed")

	first := bob.openEvents("")
	for range 3 {
		bob.eventsRefused("", http.StatusTooManyRequests, "too_many_user_streams", "Last-Event-ID", "0")
	}
	first.drop()
	testio.Eventually(t, 15*time.Second, func() string {
		if n, err := in.rdb.Exists(context.Background(), in.userKey("conns", bob.id)).Result(); err != nil || n != 0 {
			return fmt.Sprintf("bob's first stream still counts (%d, %v)", n, err)
		}
		return ""
	})
	s := bob.openEvents("", "Last-Event-ID", "0")
	if ev := s.next(10 * time.Second); ev.frame.Type != "status" || ev.frame.Status.ID != st.ID {
		t.Fatalf("after three refused opens, the stream that opened sent %s, want its resume's status %d", ev.raw, st.ID)
	}
}
