package social

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"chorus/internal/luatext"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed push.lua
	pushSource string
	// pushText is push.lua's compact text, which bySource sends.
	pushText   = luatext.Compact(pushSource)
	pushScript = redis.NewScript(pushText)
)

// pushBatch is how many followers one call of push.lua takes on one Redis,
// so that a page of a thousand goes in a few calls and none holds Redis
// for long.
const pushBatch = 250

// The answers of push.lua, a follower each.
const (
	pushInactive     = -2 // to be reached only if active or connected (onlyIfOn), and neither
	pushNotFollowing = -1 // the follower no longer follows the author
	pushThere        = 0  // their home has it already (or, for a repost, its original)
	pushAdded        = 1  // it was added, and the frame sent if they are connected
)

// homePush is the push of one status into a page of followers' home
// timelines by push.lua, queued on a pipeline (queuePush) with whatever
// else goes in that round trip, and read once it ran (results). On one
// Redis the script runs for pushBatch followers a call; on a cluster,
// where a script's keys share a slot, once a follower.
//
// The script checks each follower's follow, atomically with the push, in
// their following set; on one Redis it leaves the checks out while the
// author's unfollow count (keys.unfollows) is still the one read before
// the page. An unfollow counts itself before it walks the follower's home
// timeline, and answers its caller only after: while the count stands,
// each follower of the page still follows, or is in an unfollow that will
// walk their home after this push, as when a push comes just before an
// unfollow's first step.
type homePush struct {
	sid   int64
	uids  []int64
	calls []pushCall
}

// pushCall is one call of push.lua: followers first to first+n-1.
type pushCall struct {
	cmd      *redis.IntSliceCmd
	first, n int
}

// queuePush queues on pipe the push of status sid by author (a repost
// entry of repostOf, or 0 for a status) to the home timelines of uids,
// with its live frame payload to those of them connected; unfollows is the
// author's unfollow count as read before the page ("" for none). On one
// Redis, onlyIfOn (nil for none) names those of uids, none connected, to
// be reached only if their last request is within InactiveAfter, or
// presence's set holds them, as the push runs (see
// followerActivity.deferOnline).
func (s *Service) queuePush(ctx context.Context, pipe redis.Pipeliner, author, sid, repostOf int64, payload string, uids []int64, connected, onlyIfOn []bool, unfollows string) *homePush {
	h := &homePush{sid: sid, uids: uids}
	per := pushBatch
	if s.keys.cluster {
		per = 1
	}
	for first := 0; first < len(uids); first += per {
		h.calls = append(h.calls, s.queuePushCall(ctx, pipe, author, sid, repostOf, payload, uids, connected, onlyIfOn, unfollows, first, min(first+per, len(uids))))
	}
	return h
}

// queuePushCall queues one call of push.lua, for followers uids[first:end]:
// an EVALSHA, so that a page sends the script's hash, not its text
// (results loads it where Redis lacks it). On one Redis it passes the
// author's unfollow count and its key, for the script to leave out its
// follow checks while the count stands.
func (s *Service) queuePushCall(ctx context.Context, pipe redis.Pipeliner, author, sid, repostOf int64, payload string, uids []int64, connected, onlyIfOn []bool, unfollows string, first, end int) pushCall {
	k := s.keys
	n := end - first
	stride := 2
	if repostOf != 0 {
		stride = 3
	}
	// On one Redis the frames go by their users' ids, the script picking
	// where they go, with presence's instances and the frames channel's
	// readers when presence is kept (push.lua); on a cluster by their
	// channels.
	frames, instances := s.bus.FramesChannel(), ""
	if frames != "" {
		instances = s.opts.InstancesKey
	}
	stale := false // some, not connected, to be reached only if active or connected (one Redis)
	for i := first; i < end && onlyIfOn != nil && !k.cluster; i++ {
		stale = stale || onlyIfOn[i] && !connected[i]
	}
	nkeys := stride * n
	if !k.cluster {
		nkeys++
		if instances != "" {
			nkeys += 2
		}
		if stale {
			nkeys += 2
		}
	}
	args := make([]any, 0, 3+nkeys+11+n)
	args = append(args, "evalsha", pushScript.Hash(), nkeys)
	for _, uid := range uids[first:end] {
		args = append(args, k.following(uid), k.home(uid))
		if repostOf != 0 {
			args = append(args, k.homeReposts(uid))
		}
	}
	count := "" // on a cluster: every follow checked
	if !k.cluster {
		args = append(args, k.unfollows(author))
		count = cmp.Or(unfollows, "0")
		if instances != "" {
			args = append(args, instances, s.bus.FramesReadersKey())
		}
		if stale {
			args = append(args, s.opts.ConnectedKey, k.seen())
		}
	}
	flags := make([]byte, n)
	for i, uid := range uids[first:end] {
		flags[i] = '0'
		if (sid+uid)%trimEvery == 0 {
			flags[i]++
		}
		if connected[first+i] {
			flags[i] += 2
		} else if stale && onlyIfOn[first+i] {
			flags[i] += 4
		}
	}
	args = append(args, sid, author, repostOf, s.opts.HomeSize, s.bus.Command(), payload, string(flags), count, frames, s.bus.UserChannelStart())
	for i, uid := range uids[first:end] {
		if !connected[first+i] {
			continue
		}
		if frames != "" {
			args = append(args, uid)
		} else {
			args = append(args, s.bus.UserChannel(uid))
		}
	}
	for i, uid := range uids[first:end] {
		if stale && onlyIfOn[first+i] && !connected[first+i] {
			args = append(args, uid)
		}
	}
	if stale {
		args = append(args, s.inactiveAfter().Milliseconds())
	}
	cmd := redis.NewIntSliceCmd(ctx, args...)
	_ = pipe.Process(ctx, cmd)
	return pushCall{cmd: cmd, first: first, n: n}
}

// Frames sent ahead of their pushes (queueFrames), as push.lua answers.
const (
	framesWithPushes = -1 // not sent: the pushes must send them (the job taken over, or the unfollow count moved)
	framesNot        = 0  // not sent: the job is gone (a worker's pushes sent them) or framed already
	framesSent       = 1
)

// queueFrames queues on pipe, on one Redis, the frames alone of status sid
// by author to members (the first page of a post's followers, in order),
// but for a reply (answered its parent's author, see answeredOnly) only
// to those who follow answered too: the first page of a post (pushPost),
// whose frames then leave Redis in the round trip that writes the status,
// without waiting for its pushes, which come in the next. They go to every
// member, connected or not, in one message that each instance hands to
// those it holds streams of (push.lua), so that Redis does no work a
// follower. The call writes whom it sent them to in job's "framed" field
// (the post's job), and sends nothing for a job framed already or gone: a
// pass of a framed job from its start sends those no frame (postPass), and
// tells them of the status's deletion should it find it deleted before its
// pushes (tellFramedGone), so each goes once. It sends nothing either,
// leaving the frames to the pushes, each on a ZADD that added, once a
// worker took the job over (it may be pushing the page) or the author's
// unfollow count is no longer unfollows, the count read before the page
// (each follow is then checked). Read its answer with framesAnswer.
func (s *Service) queueFrames(ctx context.Context, pipe redis.Pipeliner, job string, author, sid int64, payload string, members []string, answered int64, unfollows string) *redis.Cmd {
	k := s.keys
	keys := []any{job}
	replyTo := ""
	if answered != 0 {
		keys, replyTo = append(keys, k.followers(answered)), itoa(answered)
	}
	keys = append(keys, k.unfollows(author))
	if s.opts.InstancesKey != "" {
		keys = append(keys, s.opts.InstancesKey, s.bus.FramesReadersKey())
	}
	args := make([]any, 0, 3+len(keys)+13)
	args = append(args, "evalsha", pushScript.Hash(), len(keys))
	args = append(args, keys...)
	args = append(args, sid, author, "", s.opts.HomeSize, s.bus.Command(), payload, "", cmp.Or(unfollows, "0"),
		s.bus.FramesChannel(), s.bus.UserChannelStart(), strings.Join(members, " "), len(members), replyTo)
	cmd := redis.NewCmd(ctx, args...)
	_ = pipe.Process(ctx, cmd)
	return cmd
}

// framedSet returns the followers a job's "framed" field names.
func framedSet(framed string) map[string]bool {
	set := map[string]bool{}
	for _, uid := range strings.Fields(framed) {
		set[uid] = true
	}
	return set
}

// deleted is the status_deleted frame of st's deletion: a reply's names
// the status it answered, whose replies count went down.
func deleted(st Status) protocol.StatusDeleted {
	gone := protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: st.ID}
	if st.ReplyTo != nil {
		gone.ReplyTo = st.ReplyTo.ID
	}
	return gone
}

// tellFramedGone tells the followers framed names (their ids, a space
// between two, as a post job's "framed" field) that status st is deleted:
// those who got its frame ahead of its pushes (queueFrames) from a maker
// that died before the pushes, where no deletion's walk finds it in their
// home.
func (s *Service) tellFramedGone(ctx context.Context, st Status, framed string) error {
	var uids []int64
	for _, f := range strings.Fields(framed) {
		uid, _ := strconv.ParseInt(f, 10, 64)
		uids = append(uids, uid)
	}
	return s.tellGone(ctx, deleted(st), uids)
}

// tellGone tells each of uids, on their channel, of a status gone.
func (s *Service) tellGone(ctx context.Context, frame protocol.StatusDeleted, uids []int64) error {
	if len(uids) == 0 {
		return nil
	}
	gone, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	pipe := s.rdb.Pipeline()
	for _, uid := range uids {
		s.bus.Queue(ctx, pipe, s.bus.UserChannel(uid), gone)
	}
	_, err = pipe.Exec(ctx)
	return err
}

// framesAnswer is what a queueFrames call did (framesSent, framesNot,
// framesWithPushes), and, for a reply whose frames it sent, its flags, one
// a member: '2' sent the frame, '0' not ("" otherwise), once its pipeline
// ran cmds and returned execErr (see resendNoScript).
func (s *Service) framesAnswer(ctx context.Context, cmd *redis.Cmd, cmds []redis.Cmder, execErr error) (int64, string, error) {
	if err := resendNoScript(ctx, s.rdb, pushScript, cmds, execErr); err != nil {
		return 0, "", err
	}
	got, err := cmd.Slice()
	if err != nil {
		return 0, "", err
	}
	if len(got) != 2 {
		return 0, "", fmt.Errorf("frames: %d answers, want 2", len(got))
	}
	code, ok := got[0].(int64)
	flags, ok2 := got[1].(string)
	if !ok || !ok2 {
		return 0, "", fmt.Errorf("frames: answered %v", got)
	}
	return code, flags, nil
}

// liveAfterFrames returns, for each follower a post's pushes reach,
// whether the pushes are to send them the frame, given whether each is
// connected and whether the frames call, which answered code, framed them
// (framedBy): all those connected when it left the frames to the pushes;
// none when it found the job gone or framed already; those connected it
// did not frame when it sent them.
func liveAfterFrames(code int64, framed, connected []bool) []bool {
	switch code {
	case framesWithPushes:
		return connected
	case framesNot:
		return make([]bool, len(connected))
	}
	live := make([]bool, len(connected))
	for i := range live {
		live[i] = connected[i] && !framed[i]
	}
	return live
}

// framedBy returns, for each of push (members a post reaches, in the
// order of members), whether the frames call that answered code and flags
// of members (framesAnswer) sent them the frame: every member when it sent
// them with no flags, those flagged '2' for a reply's, none when it sent
// nothing.
func framedBy(code int64, flags string, members, push []string) []bool {
	framed := make([]bool, len(push))
	if code != framesSent {
		return framed
	}
	for i, at := range placesIn(members, push) {
		framed[i] = flags == "" || at < len(flags) && flags[at] == '2'
	}
	return framed
}

// placesIn returns, for each of sub (some of all, in the order of all),
// its index in all.
func placesIn(all, sub []string) []int {
	at := make([]int, len(sub))
	j := 0
	for i, m := range sub {
		for j < len(all) && all[j] != m {
			j++
		}
		at[i] = j
	}
	return at
}

// bySource makes the push's calls send push.lua's text (EVAL), not its
// hash, for a pipeline whose later commands must not run unless the pushes
// did: a Redis that lost its scripts would answer NOSCRIPT to the hash and
// run the rest.
func (h *homePush) bySource() {
	for _, c := range h.calls {
		args := c.cmd.Args()
		args[0], args[1] = "eval", pushText
	}
}

// results returns what the push did, a follower each (pushAdded,
// pushThere, pushNotFollowing, pushInactive), once the pipeline it was queued on ran
// cmds and returned execErr (see resendNoScript).
func (h *homePush) results(ctx context.Context, rdb redis.UniversalClient, cmds []redis.Cmder, execErr error) ([]int64, error) {
	if err := resendNoScript(ctx, rdb, pushScript, cmds, execErr); err != nil {
		return nil, err
	}
	out := make([]int64, len(h.uids))
	for _, c := range h.calls {
		got := c.cmd.Val()
		if len(got) != c.n {
			return nil, fmt.Errorf("push status %d: %d answers for %d homes", h.sid, len(got), c.n)
		}
		copy(out[c.first:], got)
	}
	return out, nil
}

// resendTryAgain waits out, for up to tryAgainRounds rounds of a pause
// that doubles from tryAgainPause, a Redis Cluster slot that is being
// migrated to another node: it sends again the commands of cmds (a
// pipeline's, execErr its error) that Redis answered TRYAGAIN, and the
// commands of after (reads that must come after them) behind them. Redis
// answers TRYAGAIN to a command of many keys (a script) in such a slot when
// some of its keys have moved already and some have not; go-redis follows
// a pipeline's ASK and MOVED redirections, but in a plain pipeline sends
// a command answered TRYAGAIN again only in some cases, and the command
// runs once the migration has moved the rest.
// The commands must be idempotent. It answers the first error left among
// cmds, or execErr when none of them failed for TRYAGAIN.
func resendTryAgain(ctx context.Context, rdb redis.UniversalClient, cmds []redis.Cmder, execErr error, after ...redis.Cmder) error {
	pause := tryAgainPause
	for round := 0; execErr != nil && round < tryAgainRounds; round++ {
		var again []redis.Cmder
		for _, c := range cmds {
			if redis.IsTryAgainError(c.Err()) {
				again = append(again, c)
			}
		}
		if len(again) == 0 {
			return execErr
		}
		for _, c := range after {
			if !slices.Contains(again, c) {
				again = append(again, c)
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(pause):
		}
		pause *= 2
		_ = sendAgain(ctx, rdb, again) // each command holds its own answer
		execErr = firstErr(cmds)
	}
	return execErr
}

// resendFailed sends again the commands of cmds (a pipeline's) that
// failed (but for redis.Nil, an answer): at once, and then, while any of
// those still failing met what Redis answers for a while as it fails over
// or starts (see passing), after a pause that doubles from resendPause,
// resendRounds times at most. It answers the first error left among cmds.
// The commands must be idempotent.
func resendFailed(ctx context.Context, rdb redis.UniversalClient, cmds []redis.Cmder) error {
	pause := resendPause
	for round := 0; ; round++ {
		var again []redis.Cmder
		for _, c := range cmds {
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
				again = append(again, c)
			}
		}
		if len(again) == 0 {
			return nil
		}
		if round > 0 {
			if round > resendRounds || !slices.ContainsFunc(again, func(c redis.Cmder) bool { return passing(c.Err()) }) {
				return firstErr(cmds)
			}
			select {
			case <-ctx.Done():
				return firstErr(cmds)
			case <-time.After(pause):
			}
			pause *= 2
		}
		_ = sendAgain(ctx, rdb, again) // each command holds its own answer
	}
}

// passing reports whether err may pass in a moment: the connection to
// Redis lost or timed out (go-redis has tried again already), or Redis
// loading its data, a replica not yet promoted, a cluster without a master
// for a slot, or a slot being migrated. Any other answer of Redis (a write
// refused at maxmemory, a script's error) would be answered again.
func passing(err error) bool {
	var answer redis.Error
	if !errors.As(err, &answer) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err)
}

// firstErr returns the first error among cmds, redis.Nil (an answer) aside.
func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// A slot's migration moves its keys a batch at a time; resendTryAgain waits
// for it at most 20+40+80+160+320 ms, then lets the job finish the post.
const (
	tryAgainRounds = 5
	tryAgainPause  = 20 * time.Millisecond
)

// resendFailed waits out what passes (see passing) for at most
// 100+200+400+800+1600 ms: a manual failover, a replica's promotion, a
// restarted Redis loading a small data set. A longer outage leaves the
// commands failed.
const (
	resendRounds = 5
	resendPause  = 100 * time.Millisecond
)

// unpush takes status st out of the home timelines of uids it was just
// added to (added, as results says), and tells those tell says (the
// connected, and those sent the frame) that it is gone where it took it
// out: for a push that found the status deleted after it, by a deletion
// whose walk of these homes came first. A home that deletion's walk
// reached after the push was told by the walk, as deletePass does, not
// twice.
func (s *Service) unpush(ctx context.Context, st Status, uids []int64, added []int64, tell []bool) error {
	sid := st.ID
	removed := make([]*redis.IntCmd, len(uids))
	pipe := s.rdb.Pipeline()
	for i, uid := range uids {
		if added[i] == pushAdded {
			removed[i] = pipe.ZRem(ctx, s.keys.home(uid), sid)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var told []int64
	for i, r := range removed {
		if r != nil && r.Val() == 1 && tell[i] {
			told = append(told, uids[i])
		}
	}
	return s.tellGone(ctx, deleted(st), told)
}

// pushInTx pushes status sid by author to the home timelines of uids, on
// one Redis, in one transaction (MULTI/EXEC) that holds only while the
// author's unfollow count has not changed since it was watched, and was
// then still unfollows, the count read before the page: so every follow
// holds as homePush says, and the followers not connected get plain ZADDs
// (and the trim one in trimEvery), at a pipeline's cost rather than a
// script's; those connected get push.lua in the same transaction, their
// frames with their push. Redis drops a transaction whose EXEC it never
// got, so a pass that dies part way wrote nothing. It answers what
// results does, or done false when it pushed nothing: on a cluster, or
// when the count had moved, before the WATCH or after. A pass's
// round trips for it: the WATCH, the count, and the transaction.
func (s *Service) pushInTx(ctx context.Context, author, sid int64, payload string, uids []int64, connected []bool, unfollows string) (added []int64, done bool, err error) {
	c, ok := s.rdb.(*redis.Client)
	if !ok || s.keys.cluster {
		return nil, false, nil
	}
	k := s.keys
	var on []int // the places of those connected in uids
	for i := range uids {
		if connected[i] {
			on = append(on, i)
		}
	}
	onUIDs, onFlags := make([]int64, len(on)), make([]bool, len(on))
	for j, i := range on {
		onUIDs[j], onFlags[j] = uids[i], true
	}
	key := k.unfollows(author)
	err = c.Watch(ctx, func(tx *redis.Tx) error {
		now, err := tx.Get(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if now != unfollows {
			return nil
		}
		adds := make([]*redis.IntCmd, len(uids))
		var h *homePush
		cmds, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, uid := range uids {
				if connected[i] {
					continue
				}
				adds[i] = pipe.ZAdd(ctx, k.home(uid), redis.Z{Score: float64(sid), Member: sid})
				if (sid+uid)%trimEvery == 0 {
					pipe.ZRemRangeByRank(ctx, k.home(uid), 0, -int64(s.opts.HomeSize)-1)
				}
			}
			h = s.queuePush(ctx, pipe, author, sid, 0, payload, onUIDs, onFlags, nil, unfollows)
			return nil
		})
		if errors.Is(err, redis.TxFailedErr) {
			return nil
		}
		// A NOSCRIPT of push.lua's calls in the transaction wrote nothing
		// of theirs: results runs them again, each checking as it pushes.
		got, err := h.results(ctx, s.rdb, cmds, err)
		if err != nil {
			return err
		}
		added = make([]int64, len(uids))
		for i, a := range adds {
			if a != nil {
				added[i] = a.Val()
			}
		}
		for j, i := range on {
			added[i] = got[j]
		}
		done = true
		return nil
	}, key)
	return added, done, err
}

// queueUnfollows queues on pipe the read of uid's unfollow count (see
// homePush): its value is "" when none was counted.
func (s *Service) queueUnfollows(ctx context.Context, pipe redis.Pipeliner, uid int64) *redis.StringCmd {
	return pipe.Get(ctx, s.keys.unfollows(uid))
}

// resendNoScript finishes a pipeline that ran cmds and returned execErr,
// among them calls of script by its hash: the calls Redis answered
// NOSCRIPT ran nothing, and are sent again once the script is loaded (on
// every shard of a cluster), one more round trip, after a Redis lost its
// scripts. Any other error of the pipeline is returned.
func resendNoScript(ctx context.Context, rdb redis.UniversalClient, script *redis.Script, cmds []redis.Cmder, execErr error) error {
	if execErr == nil {
		return nil
	}
	var again []redis.Cmder
	for _, c := range cmds {
		if e := c.Err(); e != nil {
			if !redis.HasErrorPrefix(e, "NOSCRIPT") {
				return e
			}
			again = append(again, c)
		}
	}
	if len(again) == 0 {
		return execErr // no call failed: the pipeline did
	}
	if err := script.Load(ctx, rdb).Err(); err != nil {
		return err
	}
	return sendAgain(ctx, rdb, again)
}

// sendAgain sends cmds again, in one pipeline, each to hold its new
// answer, and answers the pipeline's error.
func sendAgain(ctx context.Context, rdb redis.UniversalClient, cmds []redis.Cmder) error {
	if len(cmds) == 0 {
		return nil
	}
	retry := rdb.Pipeline()
	for _, c := range cmds {
		c.SetErr(nil)
		_ = retry.Process(ctx, c)
	}
	_, err := retry.Exec(ctx)
	return err
}
