package social

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// jobGroup is the consumer group every instance's worker reads jobs through.
const jobGroup = "fanout"

// consumerReapEvery is how often, at most, a worker removes the consumers
// of dead instances from the job group.
const consumerReapEvery = time.Minute

var (
	//go:embed fanout_pass.lua
	passSource string
	passScript = redis.NewScript(sharedSource + passSource)

	//go:embed reap_consumers.lua
	reapSource string
	reapScript = redis.NewScript(reapSource)
)

// trimEvery is how often, on average, a post job trims the home timeline it
// adds to: one insert in trimEvery, picked by status and follower, trims to
// HomeSize. A home timeline may hold a few more for a moment; every read
// stops at HomeSize's worth anyway, and the copying paths trim on each copy.
const trimEvery = 16

// maxPassTries bounds the tries of one post pass whose write was given up
// because another worker moved the job, or the status was deleted, between
// its read and its write.
const maxPassTries = 10

// deleteJobPrefix begins the id of every status cleanup job; the status id
// follows, so that a script can find the job of a status it holds.
const deleteJobPrefix = "delete:"

// postJobPrefix begins the id of every post job; the status id follows.
const postJobPrefix = "post:"

func postJobID(sid int64) string   { return postJobPrefix + itoa(sid) }
func deleteJobID(sid int64) string { return deleteJobPrefix + itoa(sid) }
func refillJobID(uid int64) string { return refillJobPrefix + itoa(uid) }

func promoteJobID(uid int64) string { return "promote:" + itoa(uid) }

// refillJobPrefix begins the id of every refill job; the uid follows.
const refillJobPrefix = "refill:"

// listDeleteJobPrefix begins the id of every list cleanup job, as
// deleteJobPrefix does for followers' home timelines.
const listDeleteJobPrefix = "lists:delete:"

func listPostJobID(sid int64) string   { return "lists:post:" + itoa(sid) }
func listDeleteJobID(sid int64) string { return listDeleteJobPrefix + itoa(sid) }

// passResult is what one pass of a job did.
type passResult struct {
	finished bool  // the job is done (and gone)
	reached  int64 // followers reached (post, delete), followees looked at (refill), or lists (list_post, list_delete)
	copied   int64 // statuses copied into a home timeline (refill)
}

// pass runs one pass of the job whose hash is at key.
func (s *Service) pass(ctx context.Context, key string) (passResult, error) {
	if sid, ok := s.postJobStatus(key); ok {
		return s.postPass(ctx, key, sid)
	}
	res, err := passScript.Run(ctx, s.rdb, []string{key, s.keys.jobs()}, s.passArgs()...).Int64Slice()
	if err != nil {
		return passResult{}, fmt.Errorf("job %s: %w", key, err)
	}
	if len(res) != 3 {
		return passResult{}, fmt.Errorf("job %s: pass answered %v", key, res)
	}
	return passResult{finished: res[0] == 1, reached: res[1], copied: res[2]}, nil
}

// postJobStatus reports whether key is a post job's, and its status id.
func (s *Service) postJobStatus(key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, s.keys.job(postJobPrefix))
	if !ok {
		return 0, false
	}
	sid, err := strconv.ParseInt(rest, 10, 64)
	return sid, err == nil
}

// postPass runs one pass of a post job: the page is read, then written in
// one MULTI/EXEC that watches the job and the status, with the cursor's
// move. Plain queued commands cost Redis about half what
// the same commands cost called from Lua, and nothing is written twice: a
// pass that lost a race (another worker moved the job, or the status was
// deleted meanwhile) writes nothing and reads again.
func (s *Service) postPass(ctx context.Context, key string, sid int64) (passResult, error) {
	statusKey := s.keys.status(sid)
	for range maxPassTries {
		var res passResult
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			page, err := s.readPostPage(ctx, tx, key, sid)
			if err != nil {
				return err
			}
			res.reached = page.size
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				if page.state == postPageOK {
					s.pushPage(ctx, p, page)
				}
				if page.state != postPageOK || page.size < int64(s.opts.FanoutPassSize) {
					res.finished = true
					if page.state != postJobGone {
						p.XAck(ctx, s.keys.jobs(), jobGroup, page.entry)
						p.XDel(ctx, s.keys.jobs(), page.entry)
						p.Del(ctx, key)
					}
					return nil
				}
				p.HSet(ctx, key, "cursor", page.last)
				return nil
			})
			return err
		}, key, statusKey)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return passResult{}, fmt.Errorf("job %s: %w", key, err)
		}
		return res, nil
	}
	return passResult{}, fmt.Errorf("job %s: %w after %d tries", key, redis.TxFailedErr, maxPassTries)
}

// States of a post job's page.
const (
	postJobGone    = 0 // the job is done (another worker finished it)
	postStatusGone = 1 // the status was deleted: the job ends
	postPageOK     = 2
)

// postPage is one page of a post job.
type postPage struct {
	state     int64
	payload   string
	entry     string // the job's entry in the job stream
	uid, sid  int64
	size      int64  // followers in the page
	last      string // follow score of the page's last follower: the next cursor
	push      []string
	connected []bool // for each of push
}

// readPostPage reads one page of a post job on c, the connection that
// watches the job and its status: the job, the followers after its cursor,
// and their activity, in three round trips of plain commands (cheaper for
// Redis than the same reads in a script, whose replies Lua converts twice).
func (s *Service) readPostPage(ctx context.Context, c redis.Cmdable, key string, sid int64) (postPage, error) {
	k := s.keys
	var p postPage
	pipe := c.Pipeline()
	job := pipe.HMGet(ctx, key, "uid", "cursor", "until", "payload", "entry")
	exists := pipe.Exists(ctx, k.status(sid))
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return p, err
	}
	f := job.Val()
	str := func(i int) string { s, _ := f[i].(string); return s }
	if str(0) == "" {
		p.state = postJobGone
		return p, nil
	}
	p.sid, p.payload, p.entry = sid, str(3), str(4)
	p.uid, _ = strconv.ParseInt(str(0), 10, 64)
	if exists.Val() == 0 {
		p.state = postStatusGone
		return p, nil
	}
	p.state = postPageOK
	page, err := c.ZRangeByScoreWithScores(ctx, k.followers(p.uid), &redis.ZRangeBy{
		Min: "(" + str(1), Max: str(2), Count: int64(s.opts.FanoutPassSize),
	}).Result()
	if err != nil || len(page) == 0 {
		return p, err
	}
	p.size = int64(len(page))
	p.last = strconv.FormatFloat(page[len(page)-1].Score, 'f', -1, 64)
	members := make([]string, len(page))
	for i, z := range page {
		members[i], _ = z.Member.(string)
	}
	pipe = c.Pipeline()
	seen := pipe.ZMScore(ctx, k.seen(), members...)
	var online *redis.FloatSliceCmd
	if s.opts.ConnectedKey != "" {
		online = pipe.ZMScore(ctx, s.opts.ConnectedKey, members...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return p, err
	}
	// A follower never seen (one from before activity was kept) counts as
	// active; one connected now is active whatever their last request.
	cutoff := math.Inf(-1)
	if s.opts.InactiveAfter > 0 {
		cutoff = float64(now.Val().Add(-s.opts.InactiveAfter).UnixMilli())
	}
	p.push = make([]string, 0, len(members))
	p.connected = make([]bool, 0, len(members))
	for i, m := range members {
		// ZMSCORE reads a missing member as 0; activity times never are.
		connected := online == nil || online.Val()[i] != 0
		last := seen.Val()[i]
		if connected || last == 0 || last >= cutoff {
			p.push = append(p.push, m)
			p.connected = append(p.connected, connected)
		}
	}
	return p, nil
}

// pushPage queues a page's writes: the status into each follower's home
// timeline, trimmed one time in trimEvery, and the live frame to each
// follower connected now (the others read it from their home timeline when
// they come).
func (s *Service) pushPage(ctx context.Context, p redis.Pipeliner, page postPage) {
	k := s.keys
	z := redis.Z{Score: float64(page.sid), Member: page.sid}
	for i, m := range page.push {
		uid, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			continue
		}
		home := k.home(uid)
		p.ZAdd(ctx, home, z)
		if (page.sid+uid)%trimEvery == 0 {
			p.ZRemRangeByRank(ctx, home, 0, int64(-s.opts.HomeSize-1))
		}
		if page.connected[i] {
			p.Publish(ctx, k.userChannel(uid), page.payload)
		}
	}
}

// passArgs are the pass script's ARGV.
func (s *Service) passArgs() []any {
	k := s.keys
	return []any{
		s.opts.FanoutPassSize, s.opts.HomeSize, jobGroup,
		k.homePrefix(), k.followersPrefix(), k.followingPrefix(), k.profilePrefix(),
		k.statusPrefix(), k.channelPrefix(), s.opts.RefillStep, s.opts.RefillPassStatuses,
		k.pullsPrefix(), k.pulledAuthors(), k.statusSeq(),
		k.listsInPrefix(), k.listStatusesPrefix(),
	}
}

// rebuildWait bounds the passes of a returning user's rebuild that run for
// their first request; a worker does the rest.
const rebuildWait = time.Second

// rebuild runs the rebuild of uid's home timeline queued by Authenticate,
// for up to rebuildWait. Its failure is not the caller's: a worker carries
// the job on.
func (s *Service) rebuild(ctx context.Context, uid int64) {
	ctx, cancel := context.WithTimeout(ctx, rebuildWait)
	defer cancel()
	key := s.keys.job(refillJobID(uid))
	for ctx.Err() == nil {
		res, err := s.pass(ctx, key)
		if err != nil {
			if ctx.Err() == nil {
				s.opts.Logger.WarnContext(ctx, "rebuild of a returning user's home failed; a worker will retry", "job", key, "err", err)
			}
			return
		}
		if res.finished {
			return
		}
	}
}

// inactiveAfter is Options.InactiveAfter, 0 for never.
func (s *Service) inactiveAfter() time.Duration { return max(0, s.opts.InactiveAfter) }

// touchEvery is how often, at most, a user's activity is written: hourly,
// or more often when InactiveAfter is short (tests).
func (s *Service) touchEvery() time.Duration {
	if d := s.inactiveAfter(); d > 0 {
		return min(time.Hour, d/4)
	}
	return time.Hour
}

// inlinePass runs the first pass of a job for the caller. Its failure is not
// the caller's: the job is durable and a worker carries it on.
func (s *Service) inlinePass(ctx context.Context, key string) {
	if _, err := s.pass(ctx, key); err != nil {
		s.opts.Logger.WarnContext(ctx, "inline fan-out pass failed; a worker will retry", "job", key, "err", err)
	}
}

// Worker runs fan-out jobs from the job stream until its context ends. Every
// instance runs one; a job whose worker stops (or dies) part way is taken
// over by another worker once it has been idle for JobClaimIdle.
type Worker struct {
	s        *Service
	consumer string
	log      *slog.Logger

	// afterPass, when set, runs after every pass that did not finish a job;
	// tests use it to stop a worker part way.
	afterPass func()

	lastReap time.Time // when this worker last removed dead consumers
}

// NewWorker returns a worker reading as consumer, a name unique to the
// instance.
func (s *Service) NewWorker(consumer string, log *slog.Logger) *Worker {
	return &Worker{s: s, consumer: consumer, log: log}
}

// Run works until ctx ends, returning nil then.
func (w *Worker) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	needGroup := true
	for ctx.Err() == nil {
		var err error
		if needGroup {
			err = w.createGroup(ctx)
			needGroup = err != nil
		}
		if err == nil {
			err = w.round(ctx)
			// The stream (and its group) goes when someone deletes it.
			needGroup = redis.HasErrorPrefix(err, "NOGROUP")
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			continue
		}
		if ctx.Err() != nil {
			break
		}
		w.log.Warn("fan-out worker", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return nil
}

// createGroup makes the job stream's consumer group, unless it exists.
func (w *Worker) createGroup(ctx context.Context) error {
	s := w.s
	exists, err := s.rdb.Exists(ctx, s.keys.jobs()).Result()
	if err == nil && exists == 1 {
		groups, gerr := s.rdb.XInfoGroups(ctx, s.keys.jobs()).Result()
		if gerr == nil && slices.ContainsFunc(groups, func(g redis.XInfoGroup) bool { return g.Name == jobGroup }) {
			return nil
		}
	}
	err = s.rdb.XGroupCreateMkStream(ctx, s.keys.jobs(), jobGroup, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("create job group: %w", err)
	}
	return nil
}

// round takes over jobs left idle by other workers, then waits briefly for
// new ones, and runs what it got.
func (w *Worker) round(ctx context.Context) error {
	s := w.s
	stream := s.keys.jobs()
	w.reapConsumers(ctx)
	claimed, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: stream, Group: jobGroup, Consumer: w.consumer,
		MinIdle: s.opts.JobClaimIdle, Start: "0-0", Count: 10,
	}).Result()
	if err != nil {
		return fmt.Errorf("claim idle jobs: %w", err)
	}
	for _, m := range claimed {
		w.log.Info("took over an idle fan-out job", "entry", m.ID, "job", m.Values["job"])
		if err := w.run(ctx, m); err != nil {
			return err
		}
	}
	block := min(time.Second, s.opts.JobClaimIdle/2)
	streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: jobGroup, Consumer: w.consumer, Streams: []string{stream, ">"},
		Count: 10, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	for _, st := range streams {
		for _, m := range st.Messages {
			if err := w.run(ctx, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// reapConsumers removes, at most once every consumerReapEvery, the consumers
// of the job group that have nothing pending and have been idle longer than
// ConsumerIdle: each instance that ever ran leaves one behind. A failure is
// only logged; the next try comes a minute later.
func (w *Worker) reapConsumers(ctx context.Context) {
	if !w.lastReap.IsZero() && time.Since(w.lastReap) < consumerReapEvery {
		return
	}
	w.lastReap = time.Now()
	s := w.s
	removed, err := reapScript.Run(ctx, s.rdb, []string{s.keys.jobs()},
		jobGroup, s.opts.ConsumerIdle.Milliseconds(), w.consumer).StringSlice()
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("remove idle fan-out consumers", "err", err)
		}
		return
	}
	if len(removed) > 0 {
		w.log.Info("removed idle fan-out consumers", "consumers", removed)
	}
}

// run carries one job to its end, or returns when ctx ends, leaving the job
// pending for whoever claims it next.
func (w *Worker) run(ctx context.Context, m redis.XMessage) error {
	s := w.s
	stream := s.keys.jobs()
	key, _ := m.Values["job"].(string)
	for key != "" {
		res, err := s.pass(ctx, key)
		if err != nil {
			return err
		}
		if res.finished {
			break
		}
		if w.afterPass != nil {
			w.afterPass()
		}
		if ctx.Err() != nil {
			return nil
		}
		// Claiming our own entry again resets its idle time, so no other
		// worker takes over a job that is moving.
		err = s.rdb.XClaimJustID(ctx, &redis.XClaimArgs{
			Stream: stream, Group: jobGroup, Consumer: w.consumer, Messages: []string{m.ID},
		}).Err()
		if err != nil {
			return fmt.Errorf("keep job %s: %w", key, err)
		}
	}
	// The last pass acknowledges the entry it was queued with; this covers
	// an entry whose job another worker finished, or one with no job.
	pipe := s.rdb.Pipeline()
	pipe.XAck(ctx, stream, jobGroup, m.ID)
	pipe.XDel(ctx, stream, m.ID)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("acknowledge job %s: %w", key, err)
	}
	return nil
}

// JobBacklog reports how many fan-out jobs are queued or under way
// site-wide, and how long ago the oldest was queued (by Redis's clock).
func (s *Service) JobBacklog(ctx context.Context) (jobs int64, oldest time.Duration, err error) {
	pipe := s.rdb.Pipeline()
	n := pipe.XLen(ctx, s.keys.jobs())
	first := pipe.XRangeN(ctx, s.keys.jobs(), "-", "+", 1)
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("job backlog: %w", err)
	}
	if msgs := first.Val(); len(msgs) > 0 {
		ms, _, _ := strings.Cut(msgs[0].ID, "-")
		if at, err := strconv.ParseInt(ms, 10, 64); err == nil {
			oldest = max(0, now.Val().Sub(time.UnixMilli(at)))
		}
	}
	return n.Val(), oldest, nil
}
