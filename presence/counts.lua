-- Site-wide counts in one step: users online now (the shared online copy,
-- made here when missing, see copy.lua, counted from now - W) and
-- users active in the last ten minutes, estimated from the per-minute
-- HyperLogLogs the heartbeat script keeps beside the per-minute sets.
--
-- The classic layout counts the union of the ten per-minute sets (SUNION), which
-- blocks Redis for time that grows with the users active (33 ms at 19,000,
-- 420 ms at 190,000). Merging ten HyperLogLogs costs the same whatever the
-- population (a fraction of a millisecond), for a standard error of 0.81%
-- (exact in practice for a few hundred users). They are merged into a work
-- key with PFMERGE and counted there, rather than counted with one
-- multi-key PFCOUNT, because the embedded store (miniredis) answers a
-- multi-key PFCOUNT with the sum of the keys' counts, not their union's.
--
-- The per-minute keys depend on Redis's clock, and every key a script
-- touches comes in KEYS (Redis Cluster): the caller passes those of the
-- minutes it expects, and runs the script again on the rare call that
-- crosses into the next minute.
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] connected (uid -> when the user was told online, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- KEYS[4] a work key for the merged HyperLogLog, deleted before returning
-- KEYS[5..] the active HyperLogLogs of minutes ARGV[3], ARGV[3] - 1, ...: the
--           minutes to count, the current one first
-- ARGV[1] online window W, ms
-- ARGV[2] copy TTL, ms (<= 0: rebuild on every call)
-- ARGV[3] the minute (unix s / 60) the caller takes for Redis's now
-- Returns {now ms, online, active in the last minutes}, or {now ms, -1} when
-- ARGV[3] is not the minute now (nothing is counted or written).
local now = now_ms()
local window = tonumber(ARGV[1])
if math.floor(now / 60000) ~= tonumber(ARGV[3]) then
  return {now, -1}
end

refresh_copy(KEYS[1], KEYS[2], KEYS[3], now, window, tonumber(ARGV[2]))
local online = redis.call('ZCOUNT', KEYS[3], now - window, '+inf')

-- PFMERGE folds the destination in too: start from nothing.
redis.call('DEL', KEYS[4])
redis.call('PFMERGE', KEYS[4], unpack(KEYS, 5))
local active = redis.call('PFCOUNT', KEYS[4])
redis.call('DEL', KEYS[4])
return {now, online, active}
