package social

import (
	"strconv"

	"chorus/internal/slots"
)

// keys builds every Redis key the social package uses, under one prefix, so
// the layout can be read in one place. The live frames' channels are the
// bus's (bus.Bus.UserChannel), hash-tagged as a user's keys are here, so that
// a script on a user's keys can publish on the user's channel.
//
// On a Redis Cluster the keys a script touches together carry one hash tag:
// a user's keys the uid ("home:{42}"), the fan-out jobs
// "{fanout}", a list's keys its id ("list:members:{l7}"). On one Redis the
// names are those from before clusters were supported (the tags are left
// out), so a running deployment keeps its data.
type keys struct {
	prefix  string
	cluster bool
}

// u is the part of a user's key names that keeps them in one slot.
func (k keys) u(uid int64) string { return slots.Tag(k.cluster, itoa(uid)) }

// l is the part of a list's key names that keeps them in one slot.
func (k keys) l(id int64) string {
	if k.cluster {
		return "{l" + itoa(id) + "}"
	}
	return itoa(id)
}

// fanout is the part of the job keys' names that keeps the stream and its
// job hashes in one slot.
func (k keys) fanout() string { return k.prefix + slots.Tag(k.cluster, "fanout") + ":" }

func (k keys) userSeq() string   { return k.prefix + "user:id" }
func (k keys) statusSeq() string { return k.prefix + "status:id" }

// StatusSeqKey is the counter of status ids of a deployment on one Redis
// under prefix: each status posted takes the next. chorus-bench's floor
// takes its made-up statuses' ids from it.
func StatusSeqKey(prefix string) string   { return keys{prefix: prefix}.statusSeq() }
func (k keys) followSeq() string          { return k.prefix + "follow:seq" }
func (k keys) loginIndex() string         { return k.prefix + "users:by_login" }
func (k keys) searchIndex() string        { return k.prefix + "users:search" }
func (k keys) searchIndexBuilt() string   { return k.prefix + "users:search:folded" }
func (k keys) popular() string            { return k.prefix + "users:by_followers" }
func (k keys) seen() string               { return k.prefix + "users:seen" }
func (k keys) suspended() string          { return k.prefix + "users:suspended" }
func (k keys) user(uid int64) string      { return k.prefix + "user:" + k.u(uid) }
func (k keys) session(hash string) string { return k.prefix + "session:" + hash }

// pendingUsers are the accounts that wait for an admin's approval (uid ->
// sign-up ms); auditLog the capped list of admin actions, newest first.
func (k keys) pendingUsers() string { return k.prefix + "users:pending" }
func (k keys) auditLog() string     { return k.prefix + "audit:log" }

// sessions is uid's index of their sessions (session id -> when opened,
// ms), in uid's slot.
func (k keys) sessions(uid int64) string { return k.prefix + "sessions:" + k.u(uid) }

// searchIndexLowerBuilt marked an index built before its terms were
// folded; a build that folds them deletes it.
func (k keys) searchIndexLowerBuilt() string {
	return k.prefix + "users:search:built"
}

func (k keys) signInFailures(uid int64, addr string) string {
	return k.signInFailuresPrefix() + k.u(uid) + ":" + addr
}

// signInUnknown counts uid's sign-in attempts from addresses it has not
// signed in from lately; signInKnown holds those addresses (hashed). Both
// are in uid's slot, so that one script reads and counts them.
func (k keys) signInUnknown(uid int64) string {
	return k.prefix + "signin_unknown:" + k.u(uid)
}
func (k keys) signInKnown(uid int64) string {
	return k.prefix + "signin_known:" + k.u(uid)
}

// signInDevices holds the device marks (hashed) of the browsers that
// signed in to uid lately, apart from the addresses: clients that keep no
// mark get a new one at each sign-in, and must not push the addresses
// out.
func (k keys) signInDevices(uid int64) string {
	return k.prefix + "signin_devices:" + k.u(uid)
}

func (k keys) status(id int64) string     { return k.prefix + "status:" + itoa(id) }
func (k keys) home(uid int64) string      { return k.prefix + "home:" + k.u(uid) }
func (k keys) profile(uid int64) string   { return k.prefix + "profile:" + k.u(uid) }
func (k keys) global() string             { return k.prefix + "global" }
func (k keys) followers(uid int64) string { return k.prefix + "followers:" + k.u(uid) }
func (k keys) following(uid int64) string { return k.prefix + "following:" + k.u(uid) }
func (k keys) friends(uid int64) string   { return k.prefix + "friends:" + k.u(uid) }
func (k keys) jobs() string               { return k.fanout() + "jobs" }
func (k keys) job(id string) string       { return k.fanout() + "job:" + id }

// making is the sorted set of the jobs queued before their inputs and not
// marked ready yet, which have no stream entry (job key -> when queued,
// unix ms; see queue_job.lua).
func (k keys) making() string { return k.fanout() + "jobs:making" }

// pulledAuthors is the sorted set of the authors whose statuses their
// followers pull (uid -> the first status id not pushed); pulls(uid) the
// sorted set of those uid follows (uid -> follow score).
func (k keys) pulledAuthors() string  { return k.prefix + "authors:pulled" }
func (k keys) pulls(uid int64) string { return k.pullsPrefix() + k.u(uid) }

// pulledStatuses is the sorted set of the newest statuses pulled authors
// posted once pulled (pulledMember: "<status id>:<author uid>" -> status
// id), which the home reads of those who follow many pulled authors scan.
func (k keys) pulledStatuses() string { return k.prefix + "authors:pulled:statuses" }

// pulledStatusesFilled marks the pulled statuses as filled from the pulled
// authors' profiles (FillPulledStatuses): "filling", then "done".
func (k keys) pulledStatusesFilled() string { return k.prefix + "authors:pulled:statuses:filled" }

// followedNotice marks that followee was told of follower's follow (the
// followed frame) within followedNoticeTTL: in the followee's slot.
func (k keys) followedNotice(followee, follower int64) string {
	return k.prefix + "followed:" + k.u(followee) + ":" + itoa(follower)
}

// Lists: list:<id> is a list's hash; list:out:<uid> the lists uid owns,
// list:members:<id> a list's members and list:in:<uid> the lists that hold
// uid (what fan-out pages through), both scored by list:member:seq;
// list:statuses:<id> a list's timeline.
func (k keys) listSeq() string              { return k.prefix + "list:seq" }
func (k keys) listMemberSeq() string        { return k.prefix + "list:member:seq" }
func (k keys) list(id int64) string         { return k.prefix + "list:" + k.l(id) }
func (k keys) listsOut(uid int64) string    { return k.prefix + "list:out:" + k.u(uid) }
func (k keys) listMembers(id int64) string  { return k.prefix + "list:members:" + k.l(id) }
func (k keys) listsIn(uid int64) string     { return k.listsInPrefix() + k.u(uid) }
func (k keys) listStatuses(id int64) string { return k.listStatusesPrefix() + k.l(id) }
func (k keys) listsInPrefix() string        { return k.prefix + "list:in:" }
func (k keys) listStatusesPrefix() string   { return k.prefix + "list:statuses:" }

// s is the part of a status's conversation keys that keeps them in one
// slot: its replies, likes and reposts.
func (k keys) s(sid int64) string {
	if k.cluster {
		return "{s" + itoa(sid) + "}"
	}
	return itoa(sid)
}

// A status's conversation: replies:<sid> its direct replies (reply id ->
// reply id), likes:<sid> who liked it (uid -> ms), reposts:<sid> who
// reposted it (uid -> the repost's own id). liked:<uid> is what uid liked
// (sid -> ms); home:reposts:<uid> the originals reposts brought into uid's
// home timeline (original id -> repost id), so that a second repost of one
// status does not come twice.
func (k keys) replies(sid int64) string     { return k.prefix + "replies:" + k.s(sid) }
func (k keys) likes(sid int64) string       { return k.prefix + "likes:" + k.s(sid) }
func (k keys) reposts(sid int64) string     { return k.prefix + "reposts:" + k.s(sid) }
func (k keys) liked(uid int64) string       { return k.prefix + "liked:" + k.u(uid) }
func (k keys) homeReposts(uid int64) string { return k.prefix + "home:reposts:" + k.u(uid) }

// A user's notifications, all in the user's slot: notes:<uid> the ids
// (id -> id), notes:data:<uid> their records (id -> "cause created-ms"),
// notes:cause:<uid> the id of each cause ("kind:from:sid"), notes:seq:<uid>
// the ids' sequence, notes:read:<uid> the read marker (the newest id read).
func (k keys) notes(uid int64) string      { return k.prefix + "notes:" + k.u(uid) }
func (k keys) noteData(uid int64) string   { return k.prefix + "notes:data:" + k.u(uid) }
func (k keys) noteCauses(uid int64) string { return k.prefix + "notes:cause:" + k.u(uid) }
func (k keys) noteSeq(uid int64) string    { return k.prefix + "notes:seq:" + k.u(uid) }
func (k keys) notesRead(uid int64) string  { return k.prefix + "notes:read:" + k.u(uid) }

// mutes:<uid> and blocks:<uid> are whom uid mutes and blocks (uid -> ms);
// blocked_by:<uid> who blocks uid (uid -> ms), the reverse of blocks kept
// in uid's slot, so that a script of uid's (a follow) and a read for uid
// ask both ways in one slot.
func (k keys) mutes(uid int64) string     { return k.prefix + "mutes:" + k.u(uid) }
func (k keys) blocks(uid int64) string    { return k.prefix + "blocks:" + k.u(uid) }
func (k keys) blockedBy(uid int64) string { return k.prefix + "blocked_by:" + k.u(uid) }

// Reports, all in one slot ("{reports}" on a cluster), so that a script
// files or resolves one at once: reports:seq the ids, report:<id> a
// report's hash, reports:open the open ones and reports:resolved the
// resolved ones (id -> id).
func (k keys) reports() string         { return k.prefix + slots.Tag(k.cluster, "reports") + ":" }
func (k keys) reportSeq() string       { return k.reports() + "seq" }
func (k keys) report(id int64) string  { return k.reports() + "report:" + itoa(id) }
func (k keys) reportsOpen() string     { return k.reports() + "open" }
func (k keys) reportsResolved() string { return k.reports() + "resolved" }

// Scripts that touch keys they only learn while running (a follower's home,
// a followee's profile) build them from these prefixes.
func (k keys) userPrefix() string           { return k.prefix + "user:" }
func (k keys) signInFailuresPrefix() string { return k.prefix + "signin_failures:" }
func (k keys) homePrefix() string           { return k.prefix + "home:" }
func (k keys) profilePrefix() string        { return k.prefix + "profile:" }
func (k keys) statusPrefix() string         { return k.prefix + "status:" }
func (k keys) followersPrefix() string      { return k.prefix + "followers:" }
func (k keys) followingPrefix() string      { return k.prefix + "following:" }
func (k keys) pullsPrefix() string          { return k.prefix + "pulls:" }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// unfollows counts the unfollows of uid, one each, in uid's slot (see
// homePush).
func (k keys) unfollows(uid int64) string { return k.prefix + "unfollows:" + k.u(uid) }
