-- Records, in one step, the activity of the users of one instance's
-- connections since its last tick, and renews the instance's lease: what
-- register.lua does for activity, amortised over the instance. Each user gets
-- the time in last.seen and in the shared online copy, in one variadic
-- command each for the whole batch, and joins the current minute's active
-- set and HyperLogLog unless the instance knows it did this minute already.
-- Connections need no write of their own: they live as long as the lease
-- (see register.lua). The time is Redis's own.
--
-- The instance learns here when its lease had run out: it stalled for W and
-- may have been swept, or Redis lost its data; it then registers its
-- connections again (register.lua).
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] the shared online copy (uid -> last activity)
-- KEYS[3] instances (instance id -> lease expiry, unix ms)
-- ARGV[1] this instance's id
-- ARGV[2] online window W, ms: the lease's length
-- ARGV[3] prefix of the per-minute active sets (the minute number is appended)
-- ARGV[4] TTL of a per-minute active set and HyperLogLog, seconds
-- ARGV[5] prefix of the per-minute active HyperLogLogs
-- ARGV[6] the minute (unix s / 60) in which the instance added the users
--         after the first ARGV[7] to the active set and HyperLogLog
-- ARGV[7] how many users, first in the list, may not be in that minute's yet
-- ARGV[8..] the users' ids, each once
-- Returns {now ms, 1 when the lease had run out (or never existed)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local lease = redis.call('ZSCORE', KEYS[3], ARGV[1])
local lost = 0
if not lease or tonumber(lease) < now then
  lost = 1
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
if #ARGV < 8 then
  return {now, lost}
end

local minute = math.floor(tonumber(t[1]) / 60)
local last = #ARGV
if minute == tonumber(ARGV[6]) then
  last = 7 + tonumber(ARGV[7])
end
if last >= 8 then
  local set = ARGV[3] .. minute
  redis.call('SADD', set, unpack(ARGV, 8, last))
  redis.call('EXPIRE', set, ARGV[4])
  local hll = ARGV[5] .. minute
  redis.call('PFADD', hll, unpack(ARGV, 8, last))
  redis.call('EXPIRE', hll, ARGV[4])
end

local seen = {}
for i = 8, #ARGV do
  seen[#seen + 1] = now
  seen[#seen + 1] = ARGV[i]
end
redis.call('ZADD', KEYS[1], unpack(seen))
-- A missing copy is made whole by its next reader (see register.lua).
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('ZADD', KEYS[2], unpack(seen))
end
return {now, lost}
