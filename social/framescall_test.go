package social

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// The frames call of a post's first page (queueFrames, one Redis only: it
// runs on one whatever the backend under test) sends every follower of the
// page the frame in one message, once a job, and writes them in the job;
// it leaves the frames to the pushes when the job has a stream entry or
// the author's unfollow count moved, and sends nothing for a job framed
// already or gone. A reply's frame goes only to those who follow its
// parent's author too, and to that author.
func TestFramesCallAnswers(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	s := New(rdb, Options{Prefix: prefix, BcryptCost: 4, HashWait: time.Minute})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	fans := followersOf(t, s, "author", 3)
	follow(t, s, fans[0].ID, fans[2].Login) // f00 follows f02, f01 does not
	members := []string{itoa(fans[0].ID), itoa(fans[1].ID), itoa(fans[2].ID)}
	frames := s.bus.FramesChannel()
	var users []string // the followers' channels
	for _, f := range fans {
		users = append(users, s.bus.UserChannel(f.ID))
	}
	l := listen(t, s, rdb, append([]string{frames}, users...)...)

	sid := int64(0)
	// newJob queues a post job for a new status id, as a post's second
	// round trip does.
	newJob := func() string {
		t.Helper()
		sid++
		pipe := rdb.Pipeline()
		job, _, _ := s.queuePostJobsOn(ctx, pipe, Status{ID: sid, UID: author.ID}, []byte("{}"), false)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		return job
	}
	// callBy makes the frames call of job through s, and returns its
	// answer and the ids of whom the frames channel named, or else of
	// those whose own channels carried the frame.
	oneMessage := false // whether the last call's frames went in one message
	callBy := func(s *Service, job string, answered int64, unfollows string) (int64, string, string) {
		t.Helper()
		pipe := rdb.Pipeline()
		cmd := s.queueFrames(ctx, pipe, job, author.ID, sid, `{"frame":1}`, members, answered, unfollows)
		cmds, err := pipe.Exec(ctx)
		code, flags, err := s.framesAnswer(ctx, cmd, cmds, err)
		if err != nil {
			t.Fatal(err)
		}
		var named []string
		got := payloadsSoFar(t, l)
		for ch, msgs := range got {
			if ch != frames && (len(msgs) != 1 || msgs[0] != `{"frame":1}`) {
				t.Fatalf("%s carried %q", ch, msgs)
			}
		}
		if msgs := got[frames]; len(msgs) > 0 {
			ids, frame, _ := strings.Cut(msgs[0], "\n")
			if len(got) != 1 || len(msgs) != 1 || frame != `{"frame":1}` {
				t.Fatalf("published %q, want one message on the frames channel alone", got)
			}
			oneMessage = true
			return code, flags, ids
		}
		oneMessage = false
		for i, ch := range users {
			if len(got[ch]) == 1 {
				named = append(named, members[i])
			}
		}
		return code, flags, strings.Join(named, " ")
	}
	call := func(job string, answered int64, unfollows string) (int64, string, string) {
		t.Helper()
		return callBy(s, job, answered, unfollows)
	}
	framed := func(job string) (string, bool) {
		v, err := rdb.HGet(ctx, job, "framed").Result()
		return v, err == nil
	}
	type answer struct {
		code         int64
		flags, named string
	}
	check := func(what string, got, want answer) {
		t.Helper()
		if got != want {
			t.Errorf("%s: answered %+v, want %+v", what, got, want)
		}
	}
	all := strings.Join(members, " ")

	job := newJob()
	code, flags, named := call(job, 0, "")
	check("a new job", answer{code, flags, named}, answer{framesSent, "", all})
	if v, ok := framed(job); v != all || !ok {
		t.Errorf("the job's framed field: %q, %v; want %q", v, ok, all)
	}
	if at, err := rdb.HGet(ctx, job, "framed_at").Int64(); err != nil ||
		at < time.Now().Add(-time.Minute).UnixMilli() || at > time.Now().Add(time.Minute).UnixMilli() {
		t.Errorf("the job's framed_at: %d, %v; want when it was framed, unix ms", at, err)
	}
	code, flags, named = call(job, 0, "")
	check("the call again", answer{code, flags, named}, answer{framesNot, "", ""})

	taken := newJob()
	if err := rdb.HSet(ctx, taken, "entry", "1-0").Err(); err != nil {
		t.Fatal(err)
	}
	code, flags, named = call(taken, 0, "")
	check("a job a worker took over", answer{code, flags, named}, answer{framesWithPushes, "", ""})
	job = newJob()
	code, flags, named = call(job, 0, "7")
	check("the unfollow count moved", answer{code, flags, named}, answer{framesWithPushes, "", ""})
	for _, j := range []string{taken, job} {
		if _, ok := framed(j); ok {
			t.Errorf("job %s framed, though it left its frames to the pushes", j)
		}
	}
	if err := rdb.Del(ctx, job).Err(); err != nil {
		t.Fatal(err)
	}
	code, flags, named = call(job, 0, "")
	check("a job gone", answer{code, flags, named}, answer{framesNot, "", ""})

	// A reply to f02: f00 follows f02, f01 does not.
	job = newJob()
	code, flags, named = call(job, fans[2].ID, "")
	check("a reply to f02", answer{code, flags, named}, answer{framesSent, "202", members[0] + " " + members[2]})
	if v, _ := framed(job); v != named {
		t.Errorf("the reply's job framed %q, want %q", v, named)
	}
	// A reply to f01, whom no one of the page follows.
	code, flags, named = call(newJob(), fans[1].ID, "")
	check("a reply to f01", answer{code, flags, named}, answer{framesSent, "020", members[1]})

	// With presence's instances, each of which must be marked a reader of
	// the frames channel for one message: a reply (its key before the
	// unfollow count's and presence's two).
	opts := s.opts
	opts.InstancesKey = prefix + "instances"
	withInstances := New(rdb, opts)
	mark := func(key, member string) {
		t.Helper()
		if err := rdb.ZAdd(ctx, key, redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: member}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mark(opts.InstancesKey, "marked")
	mark(s.bus.FramesReadersKey(), "marked")
	code, flags, named = callBy(withInstances, newJob(), fans[2].ID, "")
	check("a reply, every instance a reader", answer{code, flags, named}, answer{framesSent, "202", members[0] + " " + members[2]})
	if !oneMessage {
		t.Error("every instance a reader: the frames went one by one")
	}
	mark(opts.InstancesKey, "unmarked") // an older build's
	code, flags, named = callBy(withInstances, newJob(), fans[2].ID, "")
	check("a reply, one on each channel", answer{code, flags, named}, answer{framesSent, "202", members[0] + " " + members[2]})
	if oneMessage {
		t.Error("an instance not marked a reader: the frames went in one message")
	}
	code, flags, named = callBy(withInstances, newJob(), 0, "7")
	check("the unfollow count moved, with instances", answer{code, flags, named}, answer{framesWithPushes, "", ""})
}

// After a post's frames call, the pushes send a frame to those connected
// that it did not frame: all of them when it left the frames to the
// pushes, none when it found its job gone or framed already, or framed
// every member.
func TestLiveAfterFrames(t *testing.T) {
	t.Parallel()
	members := []string{"1", "2", "3", "4", "5"}
	push := []string{"1", "2", "4", "5"} // 3 is not reached
	connected := []bool{true, true, false, true}
	for _, c := range []struct {
		code  int64
		flags string
		want  []bool
	}{
		{framesSent, "", []bool{false, false, false, false}}, // every member framed
		{framesSent, "20202", []bool{false, true, false, false}},
		{framesSent, "22222", []bool{false, false, false, false}},
		{framesWithPushes, "", connected},
		{framesNot, "", []bool{false, false, false, false}},
	} {
		if got := liveAfterFrames(c.code, framedBy(c.code, c.flags, members, push), connected); !slices.Equal(got, c.want) {
			t.Errorf("code %d, flags %s: %v, want %v", c.code, c.flags, got, c.want)
		}
	}
	// Whom it framed, connected or not (told of a deletion before the
	// pushes).
	for _, c := range []struct {
		code  int64
		flags string
		want  []bool
	}{
		{framesSent, "", []bool{true, true, true, true}},
		{framesSent, "20202", []bool{true, false, false, true}},
		{framesWithPushes, "", []bool{false, false, false, false}},
		{framesNot, "", []bool{false, false, false, false}},
	} {
		if got := framedBy(c.code, c.flags, members, push); !slices.Equal(got, c.want) {
			t.Errorf("framed, code %d, flags %s: %v, want %v", c.code, c.flags, got, c.want)
		}
	}
}

// On one Redis a post's second round trip (its job, its status and its
// frames) is one transaction: a Redis that reaches maxmemory before it
// refuses the whole of it. The post fails, and leaves no job, no status
// and no frame (the global channel's included, whose PUBLISH Redis would
// let through on its own).
func TestPostRefusedWholeAtMaxmemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.ClientOf(t, srv.URL)
	s := New(rdb, Options{Prefix: redistest.Prefix(), BcryptCost: 4, HashWait: time.Minute})
	ctx := ctxT(t)
	author := signUp(t, s, "author")
	fans := followersOf(t, s, "author", 3)
	channels := []string{s.bus.GlobalChannel(), s.bus.FramesChannel(), s.bus.UserChannel(author.ID)}
	for _, f := range fans {
		channels = append(channels, s.bus.UserChannel(f.ID))
	}
	l := listen(t, s, rdb, channels...)
	post(t, s, author.ID, "loads the scripts")
	payloadsSoFar(t, l)
	jobs := jobsLeft(t, ctx, rdb, s.keys)

	s.afterQueue = func() { // before the round trip, on one Redis
		if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
			t.Error(err)
		}
	}
	_, err := s.Post(ctx, author.ID, "refused")
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("a post refused at maxmemory succeeded")
	}
	id, _ := rdb.Get(ctx, s.keys.statusSeq()).Int64() // its id, taken in the first round trip
	if n := rdb.Exists(ctx, s.keys.status(id)).Val(); n != 0 {
		t.Errorf("status %d written, its post refused", id)
	}
	if got := zsetIDs(t, s, s.keys.profile(author.ID)); len(got) != 1 {
		t.Errorf("the author's profile holds %v, want the first status alone", got)
	}
	if n := jobsLeft(t, ctx, rdb, s.keys); n != jobs {
		t.Errorf("%d jobs left, want %d: the refused post's job queued", n, jobs)
	}
	if got := payloadsSoFar(t, l); len(got) != 0 {
		t.Errorf("a refused post published %q", got)
	}
}

// A reply's frames call that a Redis lacking push.lua answers NOSCRIPT
// within the post's transaction runs again after it, on the follows as
// they are then: a follower of both authors who unfollows the one answered
// in between is not framed by it, yet reached by the push, as the
// transaction read; presence's set is then read, and the push sends them
// the frame, once.
func TestReplyFramesCallRunAgain(t *testing.T) {
	t.Parallel()
	s, rdb := newPrivateBackend(t, Options{})
	ctx := ctxT(t)
	s.opts.ConnectedKey = s.keys.prefix + "connected"
	author, answered, both := signUp(t, s, "author"), signUp(t, s, "answered"), signUp(t, s, "both")
	follow(t, s, both.ID, "author")
	follow(t, s, both.ID, "answered")
	parent := post(t, s, answered.ID, "parent")
	rdb.ZAdd(ctx, s.opts.ConnectedKey, redisZ(1, itoa(both.ID)))
	l := listen(t, s, rdb, s.UserChannel(both.ID))
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook := &beforeScriptLoad{do: func() {
		if _, err := s.Unfollow(ctx, both.ID, "answered"); err != nil {
			t.Error(err)
		}
	}}
	rdb.AddHook(hook)
	st := reply(t, s, author.ID, parent.ID, "a reply")
	if !redistest.OnCluster() && !hook.fired.Load() {
		t.Fatal("the post loaded no script: its frames call ran where it was sent")
	}
	marker := post(t, s, author.ID, "marker")
	events := eventsUntil(t, l, 10*time.Second, func(got map[string][]event) bool {
		return slices.Contains(eventIDs(got[s.UserChannel(both.ID)]), marker.ID)
	})
	if got, want := eventIDs(events[s.UserChannel(both.ID)]), []int64{st.ID, marker.ID}; !slices.Equal(got, want) {
		t.Errorf("the follower of both was told %v, want %v", got, want)
	}
	if got := homeIDs(t, s, both.ID); !slices.Contains(got, st.ID) {
		t.Errorf("home of the follower of both = %v, want the reply", got)
	}
}

// beforeScriptLoad runs do once, before the first SCRIPT LOAD its client
// sends.
type beforeScriptLoad struct {
	fired atomic.Bool
	do    func()
}

func (h *beforeScriptLoad) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeScriptLoad) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && cmd.Name() == "script" && strings.EqualFold(fmt.Sprint(args[1]), "load") &&
			h.fired.CompareAndSwap(false, true) {
			h.do()
		}
		return next(ctx, cmd)
	}
}

func (h *beforeScriptLoad) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
