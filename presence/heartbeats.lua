-- Records, in one step, the activity of the users of one instance's
-- connections since its last tick, and renews the instance's lease: what
-- register.lua does for activity, amortised over the instance and over the
-- minute. Connections need no write of their own: they live as long as the
-- lease (see register.lua). The time is Redis's own.
--
-- Every user gets the time in the shared online copy (while the lease
-- holds; see below), in one variadic ZADD for the whole batch: the copy
-- holds the exact last activity of everyone online. last.seen, the minute's active set and HyperLogLog are written for
-- a user at their first beat of each minute only (the instance tells which
-- users it wrote this minute already), so last.seen lags the copy by at most
-- a minute while the user is online; readers take the later of the two, and
-- whatever takes a user out of the copy (disconnect.lua, sweep.lua, the trim
-- in copy.lua) first moves their time into last.seen. When there is no copy
-- (missing, or rebuilt on every read), every user's time goes to last.seen,
-- from which the next reader makes the copy.
--
-- The minute's keys come in KEYS, as every key a script touches must on a
-- Redis Cluster: the caller passes those of the minute it expects Redis's
-- clock to be in, and runs the script again on the rare call that crosses
-- into the next minute.
--
-- The instance learns here when its lease had run out: it stalled for W and
-- may have been swept, or Redis lost its data; it then registers its
-- connections again (register.lua). Until then a user the sweep took out of
-- connected (their friends told offline) must not reappear in the copy,
-- where readers would see them online: with the lease lost, and at every
-- tick after until the instance has registered its connections again
-- (ARGV[7]), only the users still in connected go into it (one ZMSCORE a
-- call, which a tick of an instance in good standing spares), and every
-- user's time goes to last.seen.
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] the shared online copy (uid -> last activity)
-- KEYS[3] instances (instance id -> lease expiry, unix ms)
-- KEYS[4] the active set of minute ARGV[3]
-- KEYS[5] the active HyperLogLog of minute ARGV[3]
-- KEYS[6] connected (uid -> when the user was told online, unix ms)
-- ARGV[1] this instance's id
-- ARGV[2] online window W, ms: the lease's length
-- ARGV[3] the minute (unix s / 60) the caller takes for Redis's now
-- ARGV[4] TTL of a per-minute active set and HyperLogLog, seconds
-- ARGV[5] how many users, first in the list, the instance did not write to
--         last.seen and the active set in minute ARGV[3]
-- ARGV[6] 1 when the copy is rebuilt from last.seen on every read
-- ARGV[7] 1 while the instance has yet to register its connections again
--         after a lost lease (or lost writes)
-- ARGV[8..] the users' ids, each once
-- Returns {now ms, 1 when the lease had run out (or never existed)}, or
-- {now ms, -1} when there are users and ARGV[3] is not the minute now: then
-- nothing is written, and the caller runs it again with that minute's keys.
local now = now_ms()
local first = 8
if #ARGV >= first and math.floor(now / 60000) ~= tonumber(ARGV[3]) then
  return {now, -1}
end

local lease = redis.call('ZSCORE', KEYS[3], ARGV[1])
local lost = 0
if not lease or tonumber(lease) < now then
  lost = 1
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
if #ARGV < first then
  return {now, lost}
end

-- seen(from, to) is {now, uid, now, uid, ...} for ARGV[from..to].
local at = string.format('%d', now) -- once, not once per member
local function seen(from, to)
  local out, n = {}, 0
  for i = from, to do
    out[n + 1], out[n + 2] = at, ARGV[i]
    n = n + 2
  end
  return out
end

local copy = ARGV[6] ~= '1' and redis.call('EXISTS', KEYS[2]) == 1
local fresh = first - 1 + tonumber(ARGV[5])
if fresh >= first then
  redis.call('SADD', KEYS[4], unpack(ARGV, first, fresh))
  redis.call('EXPIRE', KEYS[4], ARGV[4])
  redis.call('PFADD', KEYS[5], unpack(ARGV, first, fresh))
  redis.call('EXPIRE', KEYS[5], ARGV[4])
end

if copy and lost == 0 and ARGV[7] ~= '1' then
  local all = seen(first, #ARGV)
  redis.call('ZADD', KEYS[2], unpack(all))
  if fresh >= first then
    redis.call('ZADD', KEYS[1], unpack(all, 1, 2 * (fresh - first + 1)))
  end
  return {now, lost}
end
redis.call('ZADD', KEYS[1], unpack(seen(first, #ARGV)))
if copy then -- the lease lost, or not yet registered again: those still connected only
  local told = redis.call('ZMSCORE', KEYS[6], unpack(ARGV, first, #ARGV))
  local still, n = {}, 0
  for i = first, #ARGV do
    if told[i - first + 1] then
      still[n + 1], still[n + 2] = at, ARGV[i]
      n = n + 2
    end
  end
  if n > 0 then
    redis.call('ZADD', KEYS[2], unpack(still))
  end
end
return {now, lost}
