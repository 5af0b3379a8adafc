package social

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// jobGroup is the consumer group every instance's worker reads jobs through.
const jobGroup = "fanout"

// consumerReapEvery is how often, at most, a worker removes the consumers
// of dead instances from the job group.
const consumerReapEvery = time.Minute

var (
	//go:embed reap_consumers.lua
	reapSource string
	reapScript = redis.NewScript(reapSource)
)

// trimEvery is how often, on average, a post job trims the home timeline it
// adds to: one insert in trimEvery, picked by status and follower, trims to
// HomeSize. A home timeline may hold a few more for a moment; every read
// stops at HomeSize's worth anyway, and the copying paths trim on each copy.
const trimEvery = 16

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
	wait     bool  // the job is not ready: its maker is still writing (see Post)
	reached  int64 // followers reached (post, delete, promote), followees looked at (refill), or lists (list_post, list_delete)
	copied   int64 // statuses copied into a home timeline (refill)
}

// pass runs one pass of the job whose hash is at key.
func (s *Service) pass(ctx context.Context, key string) (passResult, error) {
	j, ok, err := s.readJob(ctx, key)
	if err != nil {
		return passResult{}, fmt.Errorf("job %s: %w", key, err)
	}
	if !ok {
		return passResult{finished: true}, nil
	}
	var st step
	switch j.f["kind"] {
	case "post":
		st, err = s.postPass(ctx, j)
	case "delete":
		st, err = s.deletePass(ctx, j)
	case "promote":
		st, err = s.promotePass(ctx, j)
	case "refill":
		st, err = s.refillPass(ctx, j)
	case "list_post":
		st, err = s.listPostPass(ctx, j)
	case "list_delete":
		st, err = s.listDeletePass(ctx, j)
	default:
		st = step{finished: true}
	}
	if err != nil {
		return passResult{}, fmt.Errorf("job %s: %w", key, err)
	}
	if st.wait {
		return passResult{wait: true}, nil
	}
	moved, err := s.advance(ctx, j, st)
	if err != nil {
		return passResult{}, err
	}
	// A pass whose job another worker moved meanwhile wrote only what that
	// worker wrote too; the next pass reads the job again.
	return passResult{finished: moved && st.finished, reached: st.reached, copied: st.copied}, nil
}

// makerDone makes sure the writes j was queued for (by Post or
// DeleteStatus) are done before its pass goes on, and returns the fields
// the pass's step starts with. A job its maker has not marked ready is
// waited for (wait), until JobClaimIdle after it was queued: its maker is
// then taken for dead, and redo does the maker's writes, all idempotent.
func (s *Service) makerDone(ctx context.Context, j job, redo func() error) (set map[string]string, wait bool, err error) {
	set = map[string]string{}
	if j.f["ready"] != "" {
		return set, false, nil
	}
	now, err := s.now(ctx)
	if err != nil {
		return nil, false, err
	}
	ms, _, _ := strings.Cut(j.f["entry"], "-")
	queued, _ := strconv.ParseInt(ms, 10, 64)
	if now.Sub(time.UnixMilli(queued)) <= s.opts.JobClaimIdle {
		return nil, true, nil
	}
	if err := redo(); err != nil {
		return nil, false, err
	}
	set["ready"] = "1"
	return set, false, nil
}

// jobPage reads up to FanoutPassSize members of the sorted set key scored
// after cursor (none: from the start) and up to until: one page of a job.
func (s *Service) jobPage(ctx context.Context, key, cursor, until string) ([]redis.Z, error) {
	return s.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
		Min: "(" + cmp.Or(cursor, "0"), Max: until, Count: int64(s.opts.FanoutPassSize),
	}).Result()
}

// pageMembers returns the members of a page.
func pageMembers(page []redis.Z) []string {
	members := make([]string, len(page))
	for i, z := range page {
		members[i], _ = z.Member.(string)
	}
	return members
}

// pageStep is the step of a pass over page: finished when the page is
// short, else on from its last score.
func (s *Service) pageStep(page []redis.Z, set map[string]string) step {
	st := step{reached: int64(len(page)), set: set}
	if len(page) < s.opts.FanoutPassSize {
		st.finished = true
		return st
	}
	if st.set == nil {
		st.set = map[string]string{}
	}
	st.set["cursor"] = strconv.FormatFloat(page[len(page)-1].Score, 'f', -1, 64)
	return st
}

// postPass runs one pass of a post job: it pushes the status to the next
// page of the author's followers, those active (see readPostPage), and
// sends the live frame to those connected. Its first pass reads where the
// job stops (the newest follow then: later follows get the status from
// their backfill), and whether the author is pulled (then nobody's home
// timeline gets it: it goes into the site's pulled statuses, and one frame
// on the author's channel reaches those connected).
//
// The writes come before the checks: after pushing, the pass looks whether
// the status still exists and each follower still follows, and takes the
// status out again where not. A deletion or an unfollow writes its end
// before it walks timelines, so a push it did not see is taken out either
// by it or here. A frame goes only with a push that added the status, so a
// pass run twice sends nothing twice.
func (s *Service) postPass(ctx context.Context, j job) (step, error) {
	k := s.keys
	uid, _ := strconv.ParseInt(j.f["uid"], 10, 64)
	sid, _ := strconv.ParseInt(j.f["sid"], 10, 64)
	payload := j.f["payload"]
	var frame protocol.StatusFrame
	if err := json.Unmarshal([]byte(payload), &frame); err != nil {
		return step{finished: true}, nil // not a job Post queued
	}
	set, wait, err := s.makerDone(ctx, j, func() error { return s.writePost(ctx, frame.Status, []byte(payload)) })
	if err != nil || wait {
		return step{wait: wait}, err
	}
	until := j.f["until"]
	pipe := s.rdb.Pipeline()
	exists := pipe.Exists(ctx, k.status(sid))
	var seq *redis.StringCmd
	var pulled *redis.FloatCmd
	var promoting, followers *redis.IntCmd
	if until == "" {
		seq = pipe.Get(ctx, k.followSeq())
		pulled = pipe.ZScore(ctx, k.pulledAuthors(), j.f["uid"])
		promoting = pipe.Exists(ctx, k.job(promoteJobID(uid)))
		followers = pipe.ZCard(ctx, k.followers(uid))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return step{}, err
	}
	if exists.Val() == 0 {
		return step{finished: true}, nil
	}
	if until == "" {
		if pulled.Err() == nil {
			return step{finished: true}, s.writePulled(ctx, uid, sid, payload)
		}
		until = "0"
		if v := seq.Val(); v != "" {
			until = v
		}
		set["until"] = until
		// An author over the threshold (one who passed it before it was
		// lowered) is made pulled from here on; this status is still pushed.
		if t := s.opts.PullThreshold; t > 0 && followers.Val() >= int64(t) && promoting.Val() == 0 {
			if err := s.queuePromotion(ctx, uid); err != nil {
				return step{}, err
			}
		}
	}
	page, err := s.jobPage(ctx, k.followers(uid), j.f["cursor"], until)
	if err != nil || len(page) == 0 {
		return step{finished: true, set: set}, err
	}
	members := pageMembers(page)
	push, connected, err := s.activeFollowers(ctx, members)
	if err != nil {
		return step{}, err
	}
	if err := s.pushStatus(ctx, uid, sid, payload, push, connected); err != nil {
		return step{}, err
	}
	return s.pageStep(page, set), nil
}

// queuePromotion queues the job that makes uid pulled, unless it is queued.
// Its first pass reads where it stops (see promotePass).
func (s *Service) queuePromotion(ctx context.Context, uid int64) error {
	k := s.keys
	return queueJobScript.Run(ctx, s.rdb, []string{k.jobs(), k.job(promoteJobID(uid))},
		"kind", "promote", "uid", uid, "cursor", 0, "ready", 1).Err()
}

// activeFollowers returns those of members whose home timelines a post
// reaches, and whether each is connected now. A follower never seen (one
// from before activity was kept) counts as active; one connected now is
// active whatever their last request.
func (s *Service) activeFollowers(ctx context.Context, members []string) (push []string, connected []bool, err error) {
	pipe := s.rdb.Pipeline()
	seen := pipe.ZMScore(ctx, s.keys.seen(), members...)
	var online *redis.FloatSliceCmd
	if s.opts.ConnectedKey != "" {
		online = pipe.ZMScore(ctx, s.opts.ConnectedKey, members...)
	}
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, err
	}
	cutoff := math.Inf(-1)
	if s.opts.InactiveAfter > 0 {
		cutoff = float64(now.Val().Add(-s.opts.InactiveAfter).UnixMilli())
	}
	push = make([]string, 0, len(members))
	connected = make([]bool, 0, len(members))
	for i, m := range members {
		// ZMSCORE reads a missing member as 0; activity times never are.
		on := online == nil || online.Val()[i] != 0
		last := seen.Val()[i]
		if on || last == 0 || last >= cutoff {
			push = append(push, m)
			connected = append(connected, on)
		}
	}
	return push, connected, nil
}

// pushStatus adds status sid to the home timelines of push (trimmed one time
// in trimEvery), checks that the status still exists and each of them still
// follows author, takes it out again where not, and sends the live frame to
// those connected whose home it newly reached.
func (s *Service) pushStatus(ctx context.Context, author, sid int64, payload string, push []string, connected []bool) error {
	if len(push) == 0 {
		return nil
	}
	k := s.keys
	z := redis.Z{Score: float64(sid), Member: sid}
	homes := make([]string, len(push))
	added := make([]*redis.IntCmd, len(push))
	pipe := s.rdb.Pipeline()
	for i, m := range push {
		uid, _ := strconv.ParseInt(m, 10, 64)
		homes[i] = k.home(uid)
		added[i] = pipe.ZAdd(ctx, homes[i], z)
		if (sid+uid)%trimEvery == 0 {
			pipe.ZRemRangeByRank(ctx, homes[i], 0, int64(-s.opts.HomeSize-1))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	pipe = s.rdb.Pipeline()
	exists := pipe.Exists(ctx, k.status(sid))
	follows := pipe.ZMScore(ctx, k.followers(author), push...)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	pipe = s.rdb.Pipeline()
	for i, m := range push {
		switch {
		case exists.Val() == 0 || follows.Val()[i] == 0:
			pipe.ZRem(ctx, homes[i], sid)
		case connected[i] && added[i].Val() == 1:
			uid, _ := strconv.ParseInt(m, 10, 64)
			s.publish(ctx, pipe, k.userChannel(uid), payload)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// deletePass runs one pass of a status's cleanup: it takes the status out
// of the next page of its author's followers' home timelines, telling those
// it was taken from. A status its author posted once pulled was never
// pushed: its first pass tells the followers connected through the
// author's channel, and ends.
func (s *Service) deletePass(ctx context.Context, j job) (step, error) {
	k := s.keys
	uid, _ := strconv.ParseInt(j.f["uid"], 10, 64)
	sid, _ := strconv.ParseInt(j.f["sid"], 10, 64)
	payload := j.f["payload"]
	set, wait, err := s.makerDone(ctx, j, func() error { return s.writeDelete(ctx, uid, sid, []byte(payload)) })
	if err != nil || wait {
		return step{wait: wait}, err
	}
	if j.f["cursor"] == "0" {
		since, err := s.rdb.ZScore(ctx, k.pulledAuthors(), j.f["uid"]).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return step{}, err
		}
		if err == nil && float64(sid) >= since {
			return step{finished: true}, s.publish(ctx, s.rdb, k.authorChannel(uid), payload).Err()
		}
	}
	page, err := s.jobPage(ctx, k.followers(uid), j.f["cursor"], "+inf")
	if err != nil || len(page) == 0 {
		return step{finished: true, set: set}, err
	}
	members := pageMembers(page)
	uids := make([]int64, len(members))
	removed := make([]*redis.IntCmd, len(members))
	pipe := s.rdb.Pipeline()
	for i, m := range members {
		uids[i], _ = strconv.ParseInt(m, 10, 64)
		removed[i] = pipe.ZRem(ctx, k.home(uids[i]), sid)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return step{}, err
	}
	pipe = s.rdb.Pipeline()
	for i, r := range removed {
		if r.Val() == 1 {
			s.publish(ctx, pipe, k.userChannel(uids[i]), payload)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return step{}, err
	}
	return s.pageStep(page, set), nil
}

// promotePass runs one pass of an author's promotion to pulled: it adds the
// author to the pulled authors of the next page of followers, telling
// their instances, and at the end to the pulled authors, from the next
// status id on. Its first pass reads where it stops: the newest follow then.
// A follow that did not see the job had joined the followers by then, and
// one that saw it adds itself.
func (s *Service) promotePass(ctx context.Context, j job) (step, error) {
	k := s.keys
	uid, _ := strconv.ParseInt(j.f["uid"], 10, 64)
	set := map[string]string{}
	until := j.f["until"]
	if until == "" {
		v, err := s.rdb.Get(ctx, k.followSeq()).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return step{}, err
		}
		until = cmp.Or(v, "0")
		set["until"] = until
	}
	page, err := s.jobPage(ctx, k.followers(uid), j.f["cursor"], until)
	if err != nil {
		return step{}, err
	}
	members := pageMembers(page)
	if len(members) > 0 {
		added := make([]*redis.IntCmd, len(members))
		pipe := s.rdb.Pipeline()
		for i, m := range members {
			f, _ := strconv.ParseInt(m, 10, 64)
			added[i] = pipe.ZAddNX(ctx, k.pulls(f), redis.Z{Score: page[i].Score, Member: uid})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return step{}, err
		}
		frame := `{"type":"pull_added","author":` + itoa(uid) + `}`
		pipe = s.rdb.Pipeline()
		for i, m := range members {
			if added[i].Val() == 1 {
				f, _ := strconv.ParseInt(m, 10, 64)
				s.publish(ctx, pipe, k.userChannel(f), frame)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return step{}, err
		}
	}
	st := s.pageStep(page, set)
	if st.finished {
		seq, err := s.rdb.Get(ctx, k.statusSeq()).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return step{}, err
		}
		if err := s.rdb.ZAddNX(ctx, k.pulledAuthors(), redis.Z{Score: float64(seq + 1), Member: uid}).Err(); err != nil {
			return step{}, err
		}
	}
	return st, nil
}

// refillPass runs one pass of a refill: it copies into uid's home timeline
// (after an unfollow left it short, or for a user back after a long
// absence) the statuses of each followee older than "floor" (the lowest id
// home held when the job was queued, or +inf when it was empty: everything
// newer is there already), newest first, and once home is full only those
// newer than its lowest. A pass looks at up to RefillStep followees and
// copies up to RefillPassStatuses statuses; a followee cut short is resumed
// below "below", the lowest id copied from it ("part" names it), and
// "cursor" is the follow score of the last followee done. Pulled followees
// are skipped: reads merge their statuses.
func (s *Service) refillPass(ctx context.Context, j job) (step, error) {
	k := s.keys
	uid, _ := strconv.ParseInt(j.f["uid"], 10, 64)
	stepSize, budget := s.opts.RefillStep, s.opts.RefillPassStatuses
	home := k.home(uid)
	floor := "+inf"
	if f := j.f["floor"]; f != "" && f != "+inf" {
		floor = "(" + f
	}
	// One followee more than a pass looks at tells whether any remain.
	followees, err := s.rdb.ZRangeByScoreWithScores(ctx, k.following(uid), &redis.ZRangeBy{
		Min: "(" + j.f["cursor"], Max: "+inf", Count: int64(stepSize + 1),
	}).Result()
	if err != nil {
		return step{}, err
	}
	names := make([]string, len(followees))
	for i, z := range followees {
		names[i], _ = z.Member.(string)
	}
	var pulled []float64
	if len(names) > 0 {
		if pulled, err = s.rdb.ZMScore(ctx, k.pulls(uid), names...).Result(); err != nil {
			return step{}, err
		}
	}
	cursor, looked, copied := j.f["cursor"], int64(0), 0
	next := func(set map[string]string) step {
		return step{set: set, reached: looked, copied: int64(copied)}
	}
	for i, z := range followees[:min(len(followees), stepSize)] {
		followee := names[i]
		if copied >= budget {
			return next(map[string]string{"cursor": cursor, "part": "", "below": ""}), nil
		}
		below := floor
		if i == 0 && j.f["part"] == followee {
			below = "(" + j.f["below"]
		}
		looked++
		if pulled[i] == 0 {
			f, _ := strconv.ParseInt(followee, 10, 64)
			n, last, done, err := s.copyBelow(ctx, home, k.profile(f), guard{k.following(uid), followee},
				below, s.opts.HomeSize, budget-copied)
			if err != nil {
				return step{}, err
			}
			copied += n
			if !done {
				return next(map[string]string{"cursor": cursor, "part": followee, "below": last}), nil
			}
		}
		cursor = strconv.FormatFloat(z.Score, 'f', -1, 64)
	}
	st := next(map[string]string{"cursor": cursor, "part": "", "below": ""})
	st.finished = len(followees) <= stepSize
	return st, nil
}

// notReadyWait is how long a worker waits before it looks again at a job
// whose maker is still writing.
const notReadyWait = 20 * time.Millisecond

// sleepCtx sleeps for d, or until ctx ends; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
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
		if res.wait && !sleepCtx(ctx, notReadyWait) {
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
		if res.wait {
			if !sleepCtx(ctx, notReadyWait) {
				return nil
			}
			continue
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
