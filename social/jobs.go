package social

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A fan-out job is a hash in the jobs' slot ("{fanout}") named by an entry
// of the job stream, which every instance's Worker reads. Its passes, run
// from Go, touch keys on many shards of a cluster: the job's hash and
// stream, the author's followers, each follower's home timeline. No one
// step can hold them, so a pass is built to be run twice: every write it
// makes is idempotent (a status added to a sorted set, or taken out), a
// live frame goes only with a write that changed something, and the job
// moves on only after its writes, by the advance script, and only if no
// other worker moved it meanwhile. A worker that dies mid-pass leaves the
// job where it was; the next one redoes the pass, writing nothing twice.

var (
	//go:embed queue_job.lua
	queueJobSource string
	queueJobScript = newScript(queueJobSource)

	//go:embed advance.lua
	advanceSource string
	advanceScript = newScript(advanceSource)

	//go:embed adopt_jobs.lua
	adoptSource string
	adoptScript = newScript(adoptSource)
)

// jobKind is what a fan-out job does: its hash's "kind" field.
type jobKind string

// The kinds of fan-out job. The values are stored in job hashes: an
// instance runs the jobs an older one queued.
const (
	jobPost       jobKind = "post"        // a status into its author's followers' home timelines (postPass)
	jobDelete     jobKind = "delete"      // a deleted status out of them (deletePass)
	jobPromote    jobKind = "promote"     // an author made pulled (promotePass)
	jobRefill     jobKind = "refill"      // a short home timeline filled again (refillPass)
	jobListPost   jobKind = "list_post"   // a status into the lists that hold its author (listPostPass)
	jobListDelete jobKind = "list_delete" // a deleted status out of them (listDeletePass)
	// A deleted status's likes and reposts taken out, or a deleted repost
	// entry's claim (dropReactionsPass).
	jobDropReactions jobKind = "drop_reactions"
	// An account's statuses hidden or shown again, as its suspension says
	// (hidePass).
	jobHide jobKind = "hide"
	// An account deleted: its statuses, follows, likes, lists and keys
	// taken out, part after part (deleteAccountPass).
	jobDeleteAccount jobKind = "delete_account"
)

// The prefixes of job ids that other code looks for: a status id follows.
const (
	deleteJobPrefix     = "delete:"       // a status's cleanup (see dropFollowee)
	listDeleteJobPrefix = "lists:delete:" // its cleanup from lists (see dropStatusesOf)
)

func postJobID(sid int64) string       { return "post:" + itoa(sid) }
func deleteJobID(sid int64) string     { return deleteJobPrefix + itoa(sid) }
func promoteJobID(uid int64) string    { return "promote:" + itoa(uid) }
func refillJobID(uid int64) string     { return "refill:" + itoa(uid) }
func listPostJobID(sid int64) string   { return "lists:post:" + itoa(sid) }
func listDeleteJobID(sid int64) string { return listDeleteJobPrefix + itoa(sid) }

// job is a fan-out job's hash, parsed once (parseJob), queued one way
// (queueJob) and moved on by advance. A status's jobs are named by the
// status, an author's promotion and a reader's refill by the user: one job
// of each at a time.
type job struct {
	key      string  // the hash's key
	kind     jobKind // "kind"
	uid      int64   // "uid": the author, or the reader whose home a refill fills
	sid      int64   // "sid": the status (post, delete, list_post, list_delete)
	cursor   float64 // "cursor": the score of the last member done, 0 before the first (racedCursor: a post's page raced, see lateFollowers)
	until    string  // "until": the last score the job reaches, read by its first pass ("" before, and after a post's own page: see pushPost)
	payload  string  // "payload": the frame the job carries (post, delete, list_post, list_delete, drop_reactions)
	of       int64   // "of": the original of the deleted repost entry (drop_reactions), 0 for a status
	ready    bool    // "ready": what the job reads is written (see queueJob)
	deleted  bool    // "deleted": its status is being deleted (a post's jobs, see rewriteUnlessDeleted)
	framed   string  // "framed": the ids of the followers its maker sent its first page's frames to, a space between two (a post's job, see queueFrames)
	framedAt int64   // "framed_at": when it sent them, unix ms (Redis's clock); 0 for a job framed by an older build
	entry    string  // "entry": its entry in the job stream; "" until it has one (see queueJob)
	queued   int64   // "queued": when a job queued before its inputs was queued, unix ms (Redis's clock); 0 for one queued with them
	pass     int64   // "pass": how many times it was moved on (see advance)

	// A refill's place (see refillPass).
	floor   string // "floor": the lowest id home held when it was queued, or "+inf"
	part    string // "part": the followee a pass stopped inside, "" for none
	below   string // "below": the lowest id copied from part
	rebuild bool   // "rebuild": a returning user's rebuild (see widen_refill.lua)
}

// id is the job's id: its key without the jobs' prefix.
func (j job) id() string {
	switch j.kind {
	case jobPost:
		return postJobID(j.sid)
	case jobDelete:
		return deleteJobID(j.sid)
	case jobPromote:
		return promoteJobID(j.uid)
	case jobRefill:
		return refillJobID(j.uid)
	case jobListPost:
		return listPostJobID(j.sid)
	case jobListDelete:
		return listDeleteJobID(j.sid)
	case jobDropReactions:
		return dropReactionsJobID(j.sid)
	case jobHide:
		return hideJobID(j.uid, j.payload)
	case jobDeleteAccount:
		return deleteAccountJobID(j.uid)
	}
	panic(fmt.Sprintf("job of unknown kind %q", j.kind))
}

// parseJob reads a job's hash. A missing or malformed number reads as 0,
// which no user or status has: a pass finds nothing to do with it.
func parseJob(key string, f map[string]string) job {
	j := job{
		key: key, kind: jobKind(f["kind"]), until: f["until"], payload: f["payload"],
		ready: f["ready"] != "", deleted: f["deleted"] != "", framed: f["framed"], rebuild: f["rebuild"] != "", entry: f["entry"], floor: f["floor"], part: f["part"], below: f["below"],
	}
	j.uid, _ = strconv.ParseInt(f["uid"], 10, 64)
	j.framedAt, _ = strconv.ParseInt(f["framed_at"], 10, 64)
	j.sid, _ = strconv.ParseInt(f["sid"], 10, 64)
	j.of, _ = strconv.ParseInt(f["of"], 10, 64)
	j.cursor, _ = strconv.ParseFloat(f["cursor"], 64)
	j.pass, _ = strconv.ParseInt(f["pass"], 10, 64)
	j.queued, _ = strconv.ParseInt(f["queued"], 10, 64)
	if j.kind == jobRefill {
		j.ready = true // see fields
	}
	return j
}

// fields are the hash fields queueJob writes for j ("entry" is the
// script's), in the order older instances wrote them.
func (j job) fields() []any {
	f := []any{"kind", string(j.kind), "uid", j.uid}
	if j.sid != 0 {
		f = append(f, "sid", j.sid)
	}
	f = append(f, "cursor", score(j.cursor))
	if j.payload != "" {
		f = append(f, "payload", j.payload)
	}
	if j.of != 0 {
		f = append(f, "of", j.of)
	}
	if j.kind == jobRefill {
		f = append(f, "floor", j.floor)
		if j.rebuild {
			f = append(f, "rebuild", 1)
		}
	} else if j.ready {
		// A refill never carried "ready": it reads only follows and a home
		// timeline written before it is queued, and never waits.
		f = append(f, "ready", 1)
	}
	return f
}

// moves are the field, value pairs that take j to next, for advance: an
// empty value deletes the field.
func (j job) moves(next job) []any {
	var m []any
	if next.cursor != j.cursor {
		m = append(m, "cursor", score(next.cursor))
	}
	if next.until != j.until {
		m = append(m, "until", next.until)
	}
	if next.ready && !j.ready {
		m = append(m, "ready", "1")
	}
	if next.part != j.part {
		m = append(m, "part", next.part)
	}
	if next.below != j.below {
		m = append(m, "below", next.below)
	}
	return m
}

// score formats a sorted set score as Redis reads it back.
func score(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// jobInputs says, when a job is queued, whether what it reads is written.
type jobInputs bool

const (
	// inputsPending: its maker writes them next, then marks the job ready
	// (markReady). A pass waits until then, or until the maker is taken
	// for dead and the pass redoes its writes (see makerDone).
	inputsPending jobInputs = false
	// inputsWritten: the job may run at once.
	inputsWritten jobInputs = true
)

// queueJob queues j on c (a client, or a pipeline) unless a job of its key
// is queued. The command's value is 1 when it queued the job, 0 when one
// was there.
//
// A job becomes runnable only after everything it reads is written: a job
// queued before its inputs (so that a worker finishes what its maker leaves
// part way) is queued inputsPending and marked ready once they are. A job
// queued inputsWritten gets its hash and the stream entry that names it,
// which a worker reads. One queued inputsPending gets its hash and a place
// among the jobs being made (keys.making), and no entry until its maker
// marks it ready (markReady) or moves it past its first pass (advance): a
// post whose first pass its maker finishes, most of them, wakes no worker
// (unless a follow or an unfollow of its author raced its page, see
// lateFollowers). A worker adopts
// one whose maker has not marked it ready within JobClaimIdle (adoptJobs),
// and redoes the maker's writes (makerDone).
func (s *Service) queueJob(ctx context.Context, c redis.Scripter, j job, inputs jobInputs) *redis.Cmd {
	j.ready = bool(inputs)
	keys := []string{s.keys.jobs(), s.keys.job(j.id()), s.keys.making()}
	written := "0"
	if inputs == inputsWritten {
		written = "1"
	}
	args := append([]any{written}, j.fields()...)
	if _, ok := c.(redis.Pipeliner); ok {
		// A pipeline's EVALSHA cannot fall back to EVAL.
		return queueJobScript.Eval(ctx, c, keys, args...)
	}
	return queueJobScript.Run(ctx, c, keys, args...)
}

// markReady marks jobs (keys) ready to run, once what they read is written;
// "" stands for no job. A job gone already (a worker took it for its
// maker's and finished it, or another request's queued it first and it
// ran) is not made again.
func (s *Service) markReady(ctx context.Context, jobs ...string) error {
	keys := slices.DeleteFunc(slices.Clone(jobs), func(j string) bool { return j == "" })
	if len(keys) == 0 {
		return nil
	}
	return flagJobsScript.Run(ctx, s.rdb, s.flagKeys(keys...), "ready").Err()
}

// flagKeys are the keys of flag_jobs.lua and adopt_jobs.lua for the jobs
// named: the job stream, the jobs being made, then the jobs.
func (s *Service) flagKeys(jobs ...string) []string {
	return append([]string{s.keys.jobs(), s.keys.making()}, jobs...)
}

// readJob reads the job at key; ok is false when it is gone.
func (s *Service) readJob(ctx context.Context, key string) (j job, ok bool, err error) {
	f, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return job{}, false, err
	}
	return parseJob(key, f), len(f) > 0, nil
}

// passResult is what one pass of a job did, and where the job goes next.
type passResult struct {
	finished bool  // the job is done (and gone, once advanced)
	wait     bool  // the job is not ready: nothing written, try again shortly (see makerDone)
	next     job   // the job as the next pass is to read it, when not finished
	reached  int64 // followers reached (post, delete, promote), followees looked at (refill), or lists (list_post, list_delete)
	copied   int64 // statuses copied into a home timeline (refill)

	// announce, when set, sends what follows from a pass that wrote nothing
	// a second pass could see (a frame on a pulled author's channel): it
	// runs only when this pass moved the job, so two workers running the
	// same pass send it once.
	announce func(context.Context) error
}

// pass runs one pass of the job whose hash is at key, and moves it on.
func (s *Service) pass(ctx context.Context, key string) (passResult, error) {
	j, ok, err := s.readJob(ctx, key)
	if err != nil {
		return passResult{}, fmt.Errorf("job %s: %w", key, err)
	}
	if !ok {
		return passResult{finished: true}, nil
	}
	var res passResult
	switch j.kind {
	case jobPost:
		res, err = s.postPass(ctx, j)
	case jobDelete:
		res, err = s.deletePass(ctx, j)
	case jobPromote:
		res, err = s.promotePass(ctx, j)
	case jobRefill:
		res, err = s.refillPass(ctx, j)
	case jobListPost:
		res, err = s.listPostPass(ctx, j)
	case jobListDelete:
		res, err = s.listDeletePass(ctx, j)
	case jobDropReactions:
		res, err = s.dropReactionsPass(ctx, j)
	case jobHide:
		res, err = s.hidePass(ctx, j)
	case jobDeleteAccount:
		res, err = s.deleteAccountPass(ctx, j)
	default:
		res = passResult{finished: true}
	}
	if err != nil {
		return passResult{}, fmt.Errorf("job %s: %w", key, err)
	}
	if res.wait {
		return passResult{wait: true}, nil
	}
	moved, err := s.advance(ctx, j, res)
	if err != nil {
		return passResult{}, err
	}
	if moved && res.announce != nil {
		if err := res.announce(ctx); err != nil {
			return passResult{}, fmt.Errorf("job %s: %w", key, err)
		}
	}
	// A pass whose job another worker moved meanwhile wrote only what that
	// worker wrote too; the next pass reads the job again.
	res.finished = moved && res.finished
	return res, nil
}

// advance moves j on as res says, unless another worker moved it since j
// was read. It reports whether it wrote.
func (s *Service) advance(ctx context.Context, j job, res passResult) (bool, error) {
	finish := "0"
	if res.finished {
		finish = "1"
	}
	args := []any{jobGroup, itoa(j.pass), finish}
	if !res.finished {
		args = append(args, j.moves(res.next)...)
	}
	n, err := advanceScript.Run(ctx, s.rdb, []string{j.key, s.keys.jobs(), s.keys.making()}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("advance job %s: %w", j.key, err)
	}
	return n == 1, nil
}

// inlinePass runs the first pass of a job for the caller. Its failure is not
// the caller's: the job is durable and a worker carries it on.
func (s *Service) inlinePass(ctx context.Context, key string) {
	if _, err := s.pass(ctx, key); err != nil {
		s.opts.Logger.WarnContext(ctx, "inline fan-out pass failed; a worker will retry", "job", key, "err", err)
	}
}

// makerDone makes sure the writes j was queued for (by Post or
// DeleteStatus) are done before its pass goes on, and returns the job its
// pass starts from. A job its maker has not marked ready is waited for
// (wait), until JobClaimIdle after it was queued: its maker is then taken
// for dead, and redo does the maker's writes, all idempotent.
func (s *Service) makerDone(ctx context.Context, j job, redo func() error) (next job, wait bool, err error) {
	if j.ready {
		return j, false, nil
	}
	now, err := s.now(ctx)
	if err != nil {
		return job{}, false, err
	}
	queued := j.queued
	if queued == 0 { // queued with its entry (by a build before keys.making)
		ms, _, _ := strings.Cut(j.entry, "-")
		queued, _ = strconv.ParseInt(ms, 10, 64)
	}
	if now.Sub(time.UnixMilli(queued)) <= s.opts.JobClaimIdle {
		return job{}, true, nil
	}
	if err := redo(); err != nil {
		return job{}, false, err
	}
	j.ready = true
	return j, false, nil
}

// jobPage reads up to FanoutPassSize members of the sorted set key scored
// after cursor and up to until: one page of a job.
func (s *Service) jobPage(ctx context.Context, key string, cursor float64, until string) ([]redis.Z, error) {
	return s.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
		Min: "(" + score(cursor), Max: until, Count: int64(s.opts.FanoutPassSize),
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

// pageStep is the result of a pass over page that starts the job's next
// pass from next: finished when the page is short, else on from its last
// score.
func (s *Service) pageStep(page []redis.Z, next job) passResult {
	last := 0.0
	if len(page) > 0 {
		last = page[len(page)-1].Score
	}
	return s.pageStepAt(len(page), last, next)
}

// pageStepAt is pageStep for a page of n members, the last scored last.
func (s *Service) pageStepAt(n int, last float64, next job) passResult {
	res := passResult{reached: int64(n), next: next}
	if n < s.opts.FanoutPassSize {
		res.finished = true
		return res
	}
	res.next.cursor = last
	return res
}

// boundedPage is a page of a job read by its members alone, and the score
// of its last member read after them (queueBoundedPage): the scores of a
// page cost Redis more to send than the page itself (Redis 7.0 formats
// each with printf: ZRANGEBYSCORE of a thousand members takes about four
// times as long WITHSCORES), and a pass needs only the last.
//
// What the pass needs besides the members is the last one's score, where
// the next pass starts. The second read names the member at the page's
// last place: when that is the page's last member, the score is theirs (a
// follower set up to the follow sequence a post read, where a member's
// score changes only by a follow again, which scores it past until); when
// not, members entered or left before it between the two reads, and the
// page is read again with its scores (boundedMembers).
type boundedPage struct {
	key     string
	cursor  float64
	until   string
	members *redis.StringSliceCmd
	last    *redis.ZSliceCmd
}

// queueBoundedPage queues on pipe the reads of the page of key after
// cursor, up to until, that a job's pass works on.
func (s *Service) queueBoundedPage(ctx context.Context, pipe redis.Pipeliner, key string, cursor float64, until string) *boundedPage {
	n := int64(s.opts.FanoutPassSize)
	by := &redis.ZRangeBy{Min: "(" + score(cursor), Max: until, Count: n}
	p := &boundedPage{key: key, cursor: cursor, until: until}
	p.members = pipe.ZRangeByScore(ctx, key, by)
	p.last = pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: by.Min, Max: by.Max, Offset: n - 1, Count: 1})
	return p
}

// boundedMembers returns, once the reads ran, the page's members and the
// last one's score (0 for a page shorter than a pass, which needs none),
// reading the page again with its scores when the second read names
// another member than the page's last.
func (s *Service) boundedMembers(ctx context.Context, p *boundedPage) (members []string, last float64, err error) {
	got := p.members.Val()
	if len(got) < s.opts.FanoutPassSize {
		return got, 0, nil
	}
	if l := p.last.Val(); len(l) == 1 && l[0].Member == got[len(got)-1] {
		return got, l[0].Score, nil
	}
	page, err := s.jobPage(ctx, p.key, p.cursor, p.until)
	if err != nil || len(page) == 0 {
		return nil, 0, err
	}
	return pageMembers(page), page[len(page)-1].Score, nil
}

// firstPage is the page of a post's first pass (a post's own, or a job's),
// read after the follow sequence in the same round trip and cut at it by
// its scores: a follower scored past the sequence came after, and gets the
// status from their backfill. As for a boundedPage, the page is read by
// its members alone, with the member at its last place (a full page's)
// and the set's last member (a shorter page's) read after with their
// scores: the sequence is known only once the round trip ran, and the
// page's scores, sorted, are past it only where its last one is.
//
// That score is the one the member had at the first read only while no
// member left the set between the reads (a member's score changes only by
// leaving and following again): the author's unfollow count, which every
// removal counts (unfollow_followee.lua), is read again after them, and
// must still be the count read before the page. Else, or when the later
// read names another member at the page's end, the page is read again.
type firstPage struct {
	key            string
	min            string // the page's lower bound, as ZRANGEBYSCORE takes it
	members        *redis.StringSliceCmd
	atEnd          *redis.ZSliceCmd
	setLast        *redis.ZSliceCmd
	unfollowsAfter *redis.StringCmd
}

// queueFirstPage queues on pipe the reads of the first page of key, the
// followers of author, from min ("-inf", or past a cursor: "(" and its
// score), after the author's unfollow count (queueUnfollows).
func (s *Service) queueFirstPage(ctx context.Context, pipe redis.Pipeliner, author int64, min string) *firstPage {
	n := int64(s.opts.FanoutPassSize)
	key := s.keys.followers(author)
	by := &redis.ZRangeBy{Min: min, Max: "+inf", Count: n}
	p := &firstPage{key: key, min: min}
	p.members = pipe.ZRangeByScore(ctx, key, by)
	p.atEnd = pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: by.Min, Max: by.Max, Offset: n - 1, Count: 1})
	p.setLast = pipe.ZRangeWithScores(ctx, key, -1, -1)
	p.unfollowsAfter = s.queueUnfollows(ctx, pipe, author)
	return p
}

// cut returns, once the reads ran, the page's members scored up to until
// (the follow sequence read before them), the last one's score (0 for
// none), and whether the page is full (more may follow it), given the
// author's unfollow count read before the page. When the count moved
// between the reads, or the member the later read names at the page's end
// is not the page's last (members came or went), or is scored past until,
// the page is read again with its scores and cut by them.
func (p *firstPage) cut(ctx context.Context, s *Service, until, unfollowsBefore string) (members []string, last float64, full bool, err error) {
	bound, _ := strconv.ParseFloat(until, 64)
	members = p.members.Val()
	if len(members) == 0 {
		return nil, 0, false, nil
	}
	full = len(members) == s.opts.FanoutPassSize
	at := p.setLast.Val()
	if full {
		at = p.atEnd.Val()
	}
	if len(at) == 1 && at[0].Member == members[len(members)-1] && at[0].Score <= bound &&
		p.unfollowsAfter.Val() == unfollowsBefore {
		return members, at[0].Score, full, nil
	}
	page, err := s.rdb.ZRangeByScoreWithScores(ctx, p.key, &redis.ZRangeBy{
		Min: p.min, Max: "+inf", Count: int64(s.opts.FanoutPassSize),
	}).Result()
	if err != nil {
		return nil, 0, false, err
	}
	full = len(page) == s.opts.FanoutPassSize
	for i, z := range page {
		if z.Score > bound {
			page, full = page[:i], false
			break
		}
	}
	if len(page) == 0 {
		return nil, 0, false, nil
	}
	return pageMembers(page), page[len(page)-1].Score, full, nil
}

// JobBacklog reports how many fan-out jobs are queued or under way
// site-wide, those still being made by their makers too, and how long ago
// the oldest was queued (by Redis's clock).
func (s *Service) JobBacklog(ctx context.Context) (jobs int64, oldest time.Duration, err error) {
	pipe := s.rdb.Pipeline()
	n := pipe.XLen(ctx, s.keys.jobs())
	first := pipe.XRangeN(ctx, s.keys.jobs(), "-", "+", 1)
	making := pipe.ZCard(ctx, s.keys.making())
	firstMade := pipe.ZRangeWithScores(ctx, s.keys.making(), 0, 0)
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("job backlog: %w", err)
	}
	var at []int64
	if msgs := first.Val(); len(msgs) > 0 {
		ms, _, _ := strings.Cut(msgs[0].ID, "-")
		if t, err := strconv.ParseInt(ms, 10, 64); err == nil {
			at = append(at, t)
		}
	}
	if z := firstMade.Val(); len(z) > 0 {
		at = append(at, int64(z[0].Score))
	}
	if len(at) > 0 {
		oldest = max(0, now.Val().Sub(time.UnixMilli(slices.Min(at))))
	}
	return n.Val() + making.Val(), oldest, nil
}

// adoptJobs gives up to adoptBatch of the jobs being made whose makers
// have not marked them ready within JobClaimIdle a stream entry (see
// adopt_jobs.lua), for a worker to read and take over. It returns how many
// it gave one, and whether it found a whole batch due (more may be).
func (s *Service) adoptJobs(ctx context.Context) (adopted int, full bool, err error) {
	// Due by Redis's clock, the one they were queued by (the script looks
	// again, the jobs' state having moved meanwhile).
	now, err := s.now(ctx)
	if err != nil {
		return 0, false, err
	}
	idle := s.opts.JobClaimIdle.Milliseconds()
	due, err := s.rdb.ZRangeByScore(ctx, s.keys.making(), &redis.ZRangeBy{
		Min: "-inf", Max: itoa(now.UnixMilli() - idle), Count: adoptBatch,
	}).Result()
	if err != nil || len(due) == 0 {
		return 0, false, err
	}
	adopted, err = adoptScript.Run(ctx, s.rdb, s.flagKeys(due...), idle).Int()
	return adopted, len(due) == adoptBatch, err
}

// adoptBatch is how many jobs being made a worker adopts at a time.
const adoptBatch = 100
