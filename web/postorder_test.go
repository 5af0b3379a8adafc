package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/social"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// slowResumeBudget holds each command on a resume budget's key for a while.
type slowResumeBudget struct{}

func (slowResumeBudget) DialHook(next redis.DialHook) redis.DialHook { return next }

func (slowResumeBudget) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		for _, a := range c.Args() {
			if k, ok := a.(string); ok && strings.Contains(k, "limit:resume:") {
				time.Sleep(300 * time.Millisecond)
			}
		}
		return next(ctx, c)
	}
}

func (slowResumeBudget) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Frames posted for an event stream one after another, each answered 202
// before the next is sent, are acted on in that order, whichever instance
// each went through: here a resume through another instance, whose budget
// Redis is slow to answer, then a watch through the stream's own.
func TestPostedFramesInOrderAcrossInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.realtime.ResumeLimit = redis_rate.PerMinute(100)
	a, b := e.start(), e.start()
	ann := a.signUp(t, "ann_order")
	bob := a.signUp(t, "bob_order")
	bob.follow(ann.login)
	st := ann.post("before the stream")
	bs := bob.openEvents("") // on a
	path := "/api/v1/stream/" + bs.streamID()
	e.rdb.AddHook(slowResumeBudget{})

	b.as(bob).must(http.StatusAccepted, "POST", path, map[string]any{"type": "resume", "after": 0}, nil)
	bob.must(http.StatusAccepted, "POST", path, map[string]string{"type": "watch", "timeline": "global"}, nil)

	first := bs.next(10 * time.Second)
	second := bs.next(10 * time.Second)
	if first.frame.Type != "status" || first.frame.Status.ID != st.ID || second.frame.Type != "watching" {
		t.Fatalf("events %s then %s; want the resume's status %d, then watching (the order they were posted in)", first.raw, second.raw, st.ID)
	}
}
