-- The batched heartbeat script of an earlier layout, one call per tick and
-- instance, but with each connection's expiry written on every beat. Kept
-- only for BenchmarkHeartbeats to compare the current layout with.
--
-- Records the activity of many connections in one step: what heartbeat.lua
-- does for one, amortised. Each user joins the current minute's active set
-- and HyperLogLog and gets the time in last.seen, in the shared online copy
-- and (as expiry) in connected, each in one variadic command for the whole
-- batch; each connection's expiry moves to now + W. A connection the
-- registry no longer holds is registered again, as by heartbeat.lua. The
-- time is Redis's own. No cap is checked: heartbeats are never refused.
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] connected (uid -> expiry of the user's freshest connection, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- KEYS[3+i] the connections of the i-th beat's user (connID -> expiry, unix ms)
-- ARGV[1] online window W, ms
-- ARGV[2] prefix of the per-minute active sets (the minute number is appended)
-- ARGV[3] TTL of a per-minute active set and HyperLogLog, seconds
-- ARGV[4] TTL of a user's connections key, ms
-- ARGV[5] prefix of the per-minute active HyperLogLogs
-- ARGV[4+2i], ARGV[5+2i] the i-th beat's uid and connection id
-- Returns {now ms, uid...}: the users not in connected before (friends must
-- be told they are online).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[1])
local n = #KEYS - 3

local uids, seen, expiries = {}, {}, {}
for i = 1, n do
  local uid = ARGV[4 + 2 * i]
  uids[i] = uid
  seen[2 * i - 1], seen[2 * i] = now, uid
  expiries[2 * i - 1], expiries[2 * i] = expiry, uid
  redis.call('ZADD', KEYS[3 + i], expiry, ARGV[5 + 2 * i])
  redis.call('PEXPIRE', KEYS[3 + i], ARGV[4])
end

local minute = math.floor(tonumber(t[1]) / 60)
local set = ARGV[2] .. minute
redis.call('SADD', set, unpack(uids))
redis.call('EXPIRE', set, ARGV[3])
local hll = ARGV[5] .. minute
redis.call('PFADD', hll, unpack(uids))
redis.call('EXPIRE', hll, ARGV[3])
redis.call('ZADD', KEYS[1], unpack(seen))

local out = {now}
local before = redis.call('ZMSCORE', KEYS[2], unpack(uids))
local told = {}
for i = 1, n do
  if not before[i] and not told[uids[i]] then
    told[uids[i]] = true
    out[#out + 1] = tonumber(uids[i])
  end
end
-- These expiries are the latest of the users': Redis time only moves forward.
redis.call('ZADD', KEYS[2], unpack(expiries))
-- A missing copy is made whole by its next reader (see heartbeat.lua).
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('ZADD', KEYS[3], unpack(seen))
end
return out
