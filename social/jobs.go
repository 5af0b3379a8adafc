package social

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed advance.lua
	advanceSource string
	advanceScript = redis.NewScript(advanceSource)
)

// A job's passes run from Go touch keys on many shards of a cluster: the
// job's hash and stream (slot "{fanout}"), the author's followers, each
// follower's home timeline. No one step can hold them, so a pass is built
// to be run twice: every write it makes is idempotent (a status added to a
// sorted set, or taken out), a live frame goes only with a write that
// changed something, and the job moves on only after its writes, by the
// advance script, and only if no other worker moved it meanwhile. A worker
// that dies mid-pass leaves the job where it was; the next one redoes the
// pass, writing nothing twice.

// job is a fan-out job's hash, as a pass read it.
type job struct {
	key string
	f   map[string]string
}

// readJob reads the job at key; ok is false when it is gone.
func (s *Service) readJob(ctx context.Context, key string) (j job, ok bool, err error) {
	f, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return job{}, false, err
	}
	return job{key: key, f: f}, len(f) > 0, nil
}

// step is what one pass of a job did, and where the job goes next.
type step struct {
	finished bool              // the job is done
	wait     bool              // the job is not ready: nothing written, try again shortly
	set      map[string]string // fields to write when not finished; "" deletes one
	reached  int64             // members reached (see passResult)
	copied   int64             // statuses copied (refill)
}

// advance moves j on as st says, unless another worker moved it since j was
// read. It reports whether it wrote.
func (s *Service) advance(ctx context.Context, j job, st step) (bool, error) {
	pass := j.f["pass"]
	if pass == "" {
		pass = "0"
	}
	finish := "0"
	if st.finished {
		finish = "1"
	}
	args := []any{jobGroup, pass, finish}
	if !st.finished {
		for f, v := range st.set {
			args = append(args, f, v)
		}
	}
	n, err := advanceScript.Run(ctx, s.rdb, []string{j.key, s.keys.jobs()}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("advance job %s: %w", j.key, err)
	}
	return n == 1, nil
}
