package presence

import (
	"strconv"

	"chorus/internal/slots"
)

// tag is the hash tag every presence key carries on a Redis Cluster: the
// online-friends script intersects the shared online copy, which all of
// presence writes, with a user's friends, so all of presence is one slot.
const tag = "presence"

// keys builds every Redis key the presence package uses, under one prefix,
// so the layout can be read in one place. On one Redis the keys are the
// prefix and a name; on a cluster the prefix is followed by "{presence}:",
// so that every presence script's keys are in one slot. Friend sets and event
// channels belong to the social package; they come in through Options.
type keys struct{ prefix string } // the prefix, and on a cluster the tag

// newKeys returns the keys under prefix, tagged on a cluster.
func newKeys(prefix string, cluster bool) keys {
	if !cluster {
		return keys{prefix: prefix}
	}
	return keys{prefix: prefix + slots.Tag(cluster, tag) + ":"}
}

// lastSeen is the sorted set uid -> time of last activity (unix ms).
func (k keys) lastSeen() string { return k.prefix + "last.seen" }

// activeUsers is the set of uids active in one minute (unix seconds / 60).
func (k keys) activeUsers(minute int64) string { return k.activePrefix() + itoa(minute) }

// activeHLL is the HyperLogLog of the uids active in one minute, beside
// activeUsers: counting ten of these costs the same whatever the population.
func (k keys) activeHLL(minute int64) string { return k.activeHLLPrefix() + itoa(minute) }

// activeUnion is a work key the counts script merges the minutes' HyperLogLogs
// into and deletes before it returns.
func (k keys) activeUnion() string { return k.prefix + "active.hll.tmp" }

// connected is the sorted set uid -> when the user was told online (unix
// ms): the users with a registered connection, whose friends have been told
// "online".
func (k keys) connected() string { return k.prefix + "connected" }

// ConnectedKey names, under prefix, the sorted set of the users with a
// registered connection (uid -> when they were told online), on a cluster
// when cluster is true: the social core's fan-out publishes live frames to
// these only.
func ConnectedKey(prefix string, cluster bool) string { return newKeys(prefix, cluster).connected() }

// InstancesKey names, under prefix, the sorted set of the instances that
// hold streams (instance id, Tracker.ID -> lease expiry, unix ms): on one
// Redis the social core's fan-out sends a frame for many users in one
// message only while every one of them is marked as reading the channel it
// goes on (bus.FramesReadersKey).
func InstancesKey(prefix string, cluster bool) string { return newKeys(prefix, cluster).instances() }

// friendsMirror is presence's copy of uid's friend set on a cluster, in
// presence's slot, which the online-friends script reads in place of the
// social package's own.
func (k keys) friendsMirror(uid int64) string { return k.prefix + "friends:" + itoa(uid) }

// FriendsMirrorKey names, under prefix, the copy of uid's friend set (friend
// uid -> friend since, unix ms) that presence reads on a Redis Cluster, in
// presence's slot. The social package keeps it equal to its own friend set;
// on one Redis presence reads that one, and there is no mirror.
func FriendsMirrorKey(prefix string, uid int64) string {
	return newKeys(prefix, true).friendsMirror(uid)
}

// conns is one user's registry of connections, a hash connID -> the id of
// the instance holding it. A connection lives as long as its instance's lease.
func (k keys) conns(uid int64) string { return k.prefix + "conns:" + itoa(uid) }

// instances is the sorted set instance id -> lease expiry (unix ms). Each
// instance renews its own every tick while it holds connections.
func (k keys) instances() string { return k.prefix + "instances" }

// instanceConns is the set of one instance's connections, "uid:connID", for
// the sweep to take out when the instance's lease runs out.
func (k keys) instanceConns(id string) string { return k.prefix + "instance.conns:" + id }

// onlineCopy is the shared, trimmed copy of last.seen: the users online now,
// uid -> last activity. Readers make it when it is missing, the sweepers
// trim it at most once per Options.CopyTTL, and the other scripts keep it
// current.
func (k keys) onlineCopy() string { return k.prefix + "online.copy" }

// onlineCopyTrimmed exists (with a TTL) while onlineCopy needs no trim.
func (k keys) onlineCopyTrimmed() string { return k.prefix + "online.copy.trimmed" }

// scratch is a work key a script fills and deletes before it returns.
func (k keys) scratch() string { return k.prefix + "online.tmp" }

// The per-minute keys are these prefixes and the minute. The scripts get
// the keys themselves; only the earlier layouts that the benchmarks compare
// with (testdata) build them from the prefixes.
func (k keys) activePrefix() string    { return k.prefix + "active.users:" }
func (k keys) activeHLLPrefix() string { return k.prefix + "active.hll:" }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
