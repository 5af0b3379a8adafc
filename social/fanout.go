package social

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// trimEvery is how often, on average, a post job trims the home timeline it
// adds to: one insert in trimEvery, picked by status and follower, trims to
// HomeSize. A home timeline may hold a few more for a moment; every read
// stops at HomeSize's worth anyway, and the copying paths trim on each copy.
const trimEvery = 16

// postPass runs one pass of a post job: it pushes the status to the next
// page of the author's followers, those active (see activeFollowers), and
// sends the live frame to those connected. Its first pass reads where the
// job stops (the newest follow then: later follows get the status from
// their backfill), and whether the author is pulled (then nobody's home
// timeline gets it: it goes into the site's pulled statuses, and one frame
// on the author's channel reaches those connected).
//
// The push checks each follow as it adds (push.lua, see homePush); after
// pushing, the pass looks whether the status still exists, and takes it
// out again where not. A deletion writes its end before it walks
// timelines, so a push it did not see is taken out either by it or here.
// A frame goes only with a push that added the status, so a pass run
// twice sends nothing twice. A status hidden since it was posted (its
// author suspended, or a repost entry's original's) goes out in no frame
// (see queueStatusHidden).
func (s *Service) postPass(ctx context.Context, j job) (passResult, error) {
	k := s.keys
	uid, sid, payload := j.uid, j.sid, j.payload
	var frame protocol.StatusFrame
	if err := json.Unmarshal([]byte(payload), &frame); err != nil {
		return passResult{finished: true}, nil // not a job Post queued
	}
	next, wait, err := s.makerDone(ctx, j, func() error { return s.rewriteUnlessDeleted(ctx, j, frame.Status, []byte(payload)) })
	if errors.Is(err, errDeletedMeanwhile) {
		// Those its dead maker sent the frame ahead to are told, no home
		// holding it for the deletion's walk to find.
		return passResult{finished: true}, s.tellFramedGone(ctx, frame.Status, j.framed)
	}
	if err != nil || wait {
		return passResult{wait: wait}, err
	}
	// The page is read with the rest, after the follow sequence on the
	// job's first pass and on the first after its maker's (which read it
	// before the status was written, see pushPost: it leaves until unset):
	// a follower in it scored past the sequence came after the status, and
	// gets it from their backfill.
	until := j.until
	pipe := s.rdb.Pipeline()
	exists := pipe.Exists(ctx, k.status(sid))
	hidden := s.queueStatusHidden(ctx, pipe, sid, repostOf(frame.Status))
	var seq *redis.StringCmd
	var pulled *redis.FloatCmd
	var promoting, followers *redis.IntCmd
	if until == "" {
		seq = pipe.Get(ctx, k.followSeq())
	}
	fresh := until == "" && j.cursor == 0 // no page of the job done yet
	if fresh {
		pulled = pipe.ZScore(ctx, k.pulledAuthors(), itoa(uid))
		promoting = pipe.Exists(ctx, k.job(promoteJobID(uid)))
		followers = pipe.ZCard(ctx, k.followers(uid))
	}
	unfollows := s.queueUnfollows(ctx, pipe, uid) // before the page, see homePush
	// A first pass cuts its page at the sequence (firstPage); later
	// passes read their page up to it. Both by its members alone.
	var first *firstPage
	var later *boundedPage
	if until == "" {
		first = s.queueFirstPage(ctx, pipe, uid, "("+score(j.cursor))
	} else {
		later = s.queueBoundedPage(ctx, pipe, k.followers(uid), j.cursor, until)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return passResult{}, err
	}
	if exists.Val() == 0 {
		// Deleted since: those a dead maker sent the frame ahead to are
		// told, no home holding it for the deletion's walk to find.
		if j.cursor == 0 {
			err = s.tellFramedGone(ctx, frame.Status, j.framed)
		}
		return passResult{finished: true}, err
	}
	var members []string
	var last float64
	if first != nil {
		// A status whose first page reached homes goes on to the rest,
		// its author pulled since or not.
		if fresh && pulled.Err() == nil {
			return passResult{finished: true}, s.writePulled(ctx, uid, sid, payload)
		}
		until = cmp.Or(seq.Val(), "0")
		next.until = until
		if members, last, _, err = first.cut(ctx, s, until, unfollows.Val()); err != nil {
			return passResult{}, err
		}
		// An author over the threshold (one who passed it before it was
		// lowered) is made pulled from here on; this status is still pushed.
		if t := s.opts.PullThreshold; fresh && t > 0 && followers.Val() >= int64(t) && promoting.Val() == 0 {
			if err := s.queuePromotion(ctx, uid); err != nil {
				return passResult{}, err
			}
		}
	} else if members, last, err = s.boundedMembers(ctx, later); err != nil {
		return passResult{}, err
	}
	if len(members) == 0 {
		return passResult{finished: true}, nil
	}
	push, connected, since, err := s.activeFollowers(ctx, members, answeredOnly(frame.Status))
	if err != nil {
		return passResult{}, err
	}
	// Those its maker sent the frame ahead to (pushPost) get none here,
	// but those told online since (a millisecond after, at least): their
	// streams may not have been there to hand it to (it went to every
	// follower of the page, connected or not). One told online in the
	// millisecond of the frames gets none; one whose stream had it gets it
	// again only where its stream joined its channel before presence
	// listed it, and drops it there (realtime's sendOnce).
	var framed map[string]bool
	if j.framed != "" {
		framed = framedSet(j.framed)
		for i, m := range push {
			if j.framedAt > 0 && connected[i] && since[i] > float64(j.framedAt) {
				delete(framed, m)
			}
		}
	}
	if hidden() {
		// Pushed all the same, to show where it would have been should the
		// suspension be lifted, as it shows in the homes reached before.
		connected, framed = make([]bool, len(push)), nil
	}
	if err := s.pushStatus(ctx, uid, sid, repostOf(frame.Status), payload, push, connected, framed, unfollows.Val()); err != nil {
		return passResult{}, err
	}
	return s.pageStepAt(len(members), last, next), nil
}

// queueStatusHidden queues on pipe the reads of whether status sid, or the
// original of a repost entry (orig, 0 for a status), is hidden (its
// author suspended since it was posted; see hidePass), and returns what
// tells once they ran. Every read of a timeline leaves such a status out,
// so a post job's pages after the suspension send it in no live frame:
// those of a large account's status would go on for minutes. A page
// running as the suspension's job hides it may send its frames still.
func (s *Service) queueStatusHidden(ctx context.Context, pipe redis.Pipeliner, sid, orig int64) func() bool {
	ids := []int64{sid}
	if orig != 0 {
		ids = append(ids, orig)
	}
	cmds := make([]*redis.BoolCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HExists(ctx, s.keys.status(id), "hidden")
	}
	return func() bool {
		for _, c := range cmds {
			if c.Val() {
				return true
			}
		}
		return false
	}
}

// activeFollowers returns those of members whose home timelines a post
// reaches, whether each is connected now, and since when (when they were
// told online, unix ms; 0 when not connected or presence is not kept; see
// followerActivity).
func (s *Service) activeFollowers(ctx context.Context, members []string, answered int64) (push []string, connected []bool, since []float64, err error) {
	pipe := s.rdb.Pipeline()
	act := s.queueActivity(ctx, pipe, members, answered, false)
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, nil, err
	}
	push, connected, _ = act.active(now.Val(), s.opts.InactiveAfter)
	return push, connected, act.onlineSince(push), nil
}

// followerActivity is what decides which followers of a page a post
// reaches: when each was last seen, whether each is connected, and, for a
// reply, whether each follows the person answered.
//
// Where presence is not kept, every follower counts as connected, and
// their last requests are not read.
//
// A post's own first page on one Redis leaves both out of its reads
// (deferOnline), its frames going to every follower of the page anyway
// (queueFrames): Redis formats each score a ZMSCORE sends with printf, in
// the round trip the frames wait for. Each follower is then reached if
// seen within InactiveAfter, or connected, as their push runs (push.lua
// checks both, flag 4), and none counts as connected.
type followerActivity struct {
	members     []string
	answered    int64
	seen        *redis.FloatSliceCmd // nil when presence is not kept, or deferOnline
	alsoFollow  *redis.FloatSliceCmd // nil unless answered is set
	online      *redis.FloatSliceCmd // nil when presence is not kept, or deferOnline
	deferOnline bool
}

// queueActivity queues on pipe the reads of members' activity, none when
// presence is not kept or deferOnline (the follows of answered are read
// either way).
func (s *Service) queueActivity(ctx context.Context, pipe redis.Pipeliner, members []string, answered int64, deferOnline bool) *followerActivity {
	a := &followerActivity{members: members, answered: answered}
	if len(members) == 0 {
		return a
	}
	if answered != 0 {
		a.alsoFollow = pipe.ZMScore(ctx, s.keys.followers(answered), members...)
	}
	if s.opts.ConnectedKey != "" {
		if deferOnline {
			a.deferOnline = true
		} else {
			a.queueReads(ctx, pipe, s)
		}
	}
	return a
}

// queueReads queues on pipe the reads of the members' last requests and of
// presence's set.
func (a *followerActivity) queueReads(ctx context.Context, pipe redis.Pipeliner, s *Service) {
	a.seen = pipe.ZMScore(ctx, s.keys.seen(), a.members...)
	a.online = pipe.ZMScore(ctx, s.opts.ConnectedKey, a.members...)
}

// readOnline reads, in a round trip of its own, the members' activity
// when deferOnline left it out: active then answers as though it had been
// read with the rest. A read that failed is sent again (resendFailed).
func (a *followerActivity) readOnline(ctx context.Context, s *Service) error {
	if !a.deferOnline {
		return nil
	}
	pipe := s.rdb.Pipeline()
	a.queueReads(ctx, pipe, s)
	if cmds, err := pipe.Exec(ctx); err != nil {
		if err := resendFailed(ctx, s.rdb, cmds); err != nil {
			a.seen, a.online = nil, nil
			return err
		}
	}
	a.deferOnline = false
	return nil
}

// active returns, once the reads ran, the members a post reaches, and
// whether each is connected. A follower never seen (one from before
// activity was kept) counts as active; one connected now is active
// whatever their last request; inactiveAfter ≤ 0 keeps everyone active.
// When answered is set (a reply to them, see answeredOnly), only those who
// follow answered, and answered, are reached. With deferOnline, push
// holds them all, none connected, and onlyIfOn (nil otherwise) marks
// every one when inactiveAfter is set: each is reached only if active by
// their last request, or connected, as their push runs.
func (a *followerActivity) active(now time.Time, inactiveAfter time.Duration) (push []string, connected, onlyIfOn []bool) {
	if len(a.members) == 0 {
		return nil, nil, nil
	}
	cutoff := math.Inf(-1)
	if inactiveAfter > 0 {
		cutoff = float64(now.Add(-inactiveAfter).UnixMilli())
	}
	push = make([]string, 0, len(a.members))
	connected = make([]bool, 0, len(a.members))
	if a.deferOnline {
		onlyIfOn = make([]bool, 0, len(a.members))
	}
	for i, m := range a.members {
		if !a.answers(i) {
			continue
		}
		if a.deferOnline {
			push, connected, onlyIfOn = append(push, m), append(connected, false), append(onlyIfOn, inactiveAfter > 0)
			continue
		}
		if a.online == nil { // presence not kept
			push, connected = append(push, m), append(connected, true)
			continue
		}
		// ZMSCORE reads a missing member as 0; activity times never are.
		last := a.seen.Val()[i]
		recent := last == 0 || last >= cutoff
		on := a.online.Val()[i] != 0
		if on || recent {
			push = append(push, m)
			connected = append(connected, on)
		}
	}
	return push, connected, onlyIfOn
}

// away returns, once the reads ran, the members a post does not reach for
// being away (their last request past inactiveAfter, not connected), as
// active decides: none when presence is not kept, or with deferOnline.
func (a *followerActivity) away(now time.Time, inactiveAfter time.Duration) []string {
	if a.deferOnline || a.online == nil || inactiveAfter <= 0 {
		return nil
	}
	cutoff := float64(now.Add(-inactiveAfter).UnixMilli())
	var out []string
	for i, m := range a.members {
		if !a.answers(i) {
			continue
		}
		if last := a.seen.Val()[i]; last != 0 && last < cutoff && a.online.Val()[i] == 0 {
			out = append(out, m)
		}
	}
	return out
}

// answers reports whether members[i] is one a reply reaches (they follow
// the person answered, or are them), or the post is no reply.
func (a *followerActivity) answers(i int) bool {
	// ZMSCORE reads a missing member as 0; follow scores never are.
	return a.alsoFollow == nil || a.alsoFollow.Val()[i] != 0 || a.members[i] == itoa(a.answered)
}

// onlineSince returns, for each of push (members a post reaches, in the
// order of members), since when they are connected, as presence's set
// says (when they were told online, unix ms): 0 for those not connected,
// and for all when presence is not kept.
func (a *followerActivity) onlineSince(push []string) []float64 {
	since := make([]float64, len(push))
	if a.online == nil {
		return since
	}
	scores := a.online.Val()
	for i, at := range placesIn(a.members, push) {
		if at < len(scores) {
			since[i] = scores[at]
		}
	}
	return since
}

// pushStatus adds status sid to the home timelines of push that still
// follow author (trimmed one time in trimEvery; a repost entry of repostOf
// only where neither its original nor another repost of it is), sending
// the live frame to those connected whose home it newly reached, but for
// those framed, sent theirs ahead (see queueFrames); unfollows is the
// author's unfollow count read before the page (see homePush). On one
// Redis a status goes in one transaction (pushInTx), where that fails with
// push.lua. Then it checks that the status still exists, and takes it out
// again where it was added if not, telling those connected.
func (s *Service) pushStatus(ctx context.Context, author, sid, repostOf int64, payload string, push []string, connected []bool, framed map[string]bool, unfollows string) error {
	if len(push) == 0 {
		return nil
	}
	live := connected // who the pushes send frames to
	if len(framed) > 0 {
		live = make([]bool, len(push))
		for i, m := range push {
			live[i] = connected[i] && !framed[m]
		}
	}
	uids := make([]int64, len(push))
	for i, m := range push {
		uids[i], _ = strconv.ParseInt(m, 10, 64)
	}
	var added []int64
	done := false
	if repostOf == 0 {
		var err error
		if added, done, err = s.pushInTx(ctx, author, sid, payload, uids, live, unfollows); err != nil {
			return err
		}
	}
	if !done {
		pipe := s.rdb.Pipeline()
		h := s.queuePush(ctx, pipe, author, sid, repostOf, payload, uids, live, nil, unfollows)
		cmds, err := pipe.Exec(ctx)
		if added, err = h.results(ctx, s.rdb, cmds, err); err != nil {
			return err
		}
	}
	exists, err := s.rdb.Exists(ctx, s.keys.status(sid)).Result()
	if err != nil || exists == 1 {
		return err
	}
	// The frame's status, to tell of its deletion as the deletion would.
	var frame protocol.StatusFrame
	if err := json.Unmarshal([]byte(payload), &frame); err != nil || frame.Status.ID != sid {
		frame.Status = Status{ID: sid}
	}
	return s.unpush(ctx, frame.Status, uids, added, connected)
}

// deletePass runs one pass of a status's cleanup: it takes the status out
// of the next page of its author's followers' home timelines, telling those
// it was taken from. A status its author posted once pulled was never
// pushed: its first pass tells the followers connected through the
// author's channel (once, by the worker whose pass moves the job), and
// ends.
func (s *Service) deletePass(ctx context.Context, j job) (passResult, error) {
	k := s.keys
	uid, sid, payload := j.uid, j.sid, j.payload
	next, wait, err := s.makerDone(ctx, j, func() error { return s.writeDelete(ctx, uid, sid, []byte(payload)) })
	if err != nil || wait {
		return passResult{wait: wait}, err
	}
	if j.cursor == 0 {
		since, err := s.rdb.ZScore(ctx, k.pulledAuthors(), itoa(uid)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return passResult{}, err
		}
		if err == nil && float64(sid) >= since {
			return passResult{finished: true, announce: func(ctx context.Context) error {
				return s.bus.Publish(ctx, s.bus.AuthorChannel(uid), payload)
			}}, nil
		}
	}
	page, err := s.jobPage(ctx, k.followers(uid), j.cursor, "+inf")
	if err != nil || len(page) == 0 {
		return passResult{finished: true}, err
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
		return passResult{}, err
	}
	pipe = s.rdb.Pipeline()
	for i, r := range removed {
		if r.Val() == 1 {
			s.bus.Queue(ctx, pipe, s.bus.UserChannel(uids[i]), payload)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return passResult{}, err
	}
	return s.pageStep(page, next), nil
}
