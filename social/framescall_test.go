package social

import (
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"
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
	l := listen(t, s, rdb, frames)

	sid := int64(0)
	// newJob queues a post job for a new status id, as a post's second
	// round trip does.
	newJob := func() string {
		t.Helper()
		sid++
		pipe := rdb.Pipeline()
		job, _ := s.queuePostJobsOn(ctx, pipe, Status{ID: sid, UID: author.ID}, []byte("{}"), false)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		return job
	}
	// call makes the frames call of job through s, and returns its answer
	// and the ids of whom the frames channel named.
	call := func(job string, answered int64, unfollows string) (int64, string, string) {
		t.Helper()
		pipe := rdb.Pipeline()
		cmd := s.queueFrames(ctx, pipe, job, author.ID, sid, `{"frame":1}`, members, answered, unfollows)
		cmds, err := pipe.Exec(ctx)
		code, flags, err := s.framesAnswer(ctx, cmd, cmds, err)
		if err != nil {
			t.Fatal(err)
		}
		named := ""
		got := payloadsSoFar(t, l)[frames]
		if len(got) > 1 {
			t.Fatalf("%d messages on the frames channel, want at most 1: %q", len(got), got)
		}
		if len(got) == 1 {
			ids, frame, _ := strings.Cut(got[0], "\n")
			if frame != `{"frame":1}` {
				t.Fatalf("the frames channel carried %q", got[0])
			}
			named = ids
		}
		return code, flags, named
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
		if got := liveAfterFrames(c.code, c.flags, members, push, connected); !slices.Equal(got, c.want) {
			t.Errorf("code %d, flags %s: %v, want %v", c.code, c.flags, got, c.want)
		}
	}
}
