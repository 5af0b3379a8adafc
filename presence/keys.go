package presence

import "strconv"

// keys builds every Redis key the presence package uses, under one prefix,
// so the layout can be read in one place. Friend sets and event channels
// belong to the social package; they come in through Options.
type keys struct{ prefix string }

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

// connected is the sorted set uid -> expiry of the user's freshest live
// connection (unix ms): the users whose friends have been told "online".
func (k keys) connected() string { return k.prefix + "connected" }

// conns is the sorted set of one user's connections: connID -> expiry (unix ms).
func (k keys) conns(uid int64) string { return k.connsPrefix() + itoa(uid) }

// onlineCopy is the shared, trimmed copy of last.seen: the users online now,
// uid -> last activity. Readers make it when it is missing and trim it at
// most once per Options.CopyTTL; the other scripts keep it current.
func (k keys) onlineCopy() string { return k.prefix + "online.copy" }

// onlineCopyFresh exists (with a TTL) while onlineCopy needs no trim.
func (k keys) onlineCopyFresh() string { return k.prefix + "online.copy.fresh" }

// scratch is a work key a script fills and deletes before it returns.
func (k keys) scratch() string { return k.prefix + "online.tmp" }

// Scripts that touch keys they only learn while running (the minute, the
// users being swept) build them from these prefixes.
func (k keys) activePrefix() string    { return k.prefix + "active.users:" }
func (k keys) activeHLLPrefix() string { return k.prefix + "active.hll:" }
func (k keys) connsPrefix() string     { return k.prefix + "conns:" }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
