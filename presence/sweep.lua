-- Takes out, in one step, up to ARGV[3] connections of an instance whose
-- lease ran out (it went away, or stalled for W, without disconnecting
-- them), and takes out of connected the users left with no connection.
-- Being atomic, each such user is taken by exactly one sweeping instance,
-- which then tells the friends. An instance with no connection left leaves
-- the instances set. An instance that comes back finds its lease gone and
-- registers its connections again (register.lua).
--
-- The instance's set and its users' registries are only known while
-- running, so they are built here from prefixes.
--
-- KEYS[1] instances (instance id -> lease expiry, unix ms)
-- KEYS[2] connected (uid -> when the user was told online, unix ms)
-- KEYS[3] last.seen (uid -> last activity, unix ms)
-- KEYS[4] the shared online copy (uid -> last activity)
-- ARGV[1] prefix of the instances' connection sets (the instance id is appended)
-- ARGV[2] prefix of the users' registries (the uid is appended)
-- ARGV[3] most connections to take out
-- Returns {1 when there may be more to sweep, else 0, uid, last seen ms (or ''),
-- uid, last seen, ...} for the users taken out of connected.
local now = now_ms()
local most = tonumber(ARGV[3])

local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 1)
if #gone == 0 then
  return {0}
end
local instance = gone[1]
local set = ARGV[1] .. instance
local out = {1}
for _, member in ipairs(redis.call('SPOP', set, most)) do
  local at = string.find(member, ':', 1, true)
  local uid, conn = string.sub(member, 1, at - 1), string.sub(member, at + 1)
  local registry = ARGV[2] .. uid
  -- The connection may have been registered again, by an instance alive.
  if redis.call('HGET', registry, conn) == instance then
    redis.call('HDEL', registry, conn)
  end
  if redis.call('EXISTS', registry) == 0 then
    -- The copy holds the latest activity (see heartbeats.lua): keep it.
    local latest = redis.call('ZSCORE', KEYS[4], uid)
    if latest then
      redis.call('ZADD', KEYS[3], 'GT', latest, uid)
      redis.call('ZREM', KEYS[4], uid)
    end
    if redis.call('ZREM', KEYS[2], uid) == 1 then
      out[#out + 1] = uid
      out[#out + 1] = redis.call('ZSCORE', KEYS[3], uid) or ''
    end
  end
end
if redis.call('SCARD', set) == 0 then
  redis.call('ZREM', KEYS[1], instance)
end
return out
