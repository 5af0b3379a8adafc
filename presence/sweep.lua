-- Takes out of connected, in one step, up to ARGV[2] users whose every
-- connection has expired (their instance went away without disconnecting
-- them). Being atomic, each such user is taken by exactly one sweeping
-- instance, which then tells the friends.
--
-- The users' connection keys are only known while running, so they are
-- built here from a prefix.
--
-- KEYS[1] connected (uid -> expiry of the user's freshest connection, unix ms)
-- KEYS[2] last.seen (uid -> last activity, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- ARGV[1] prefix of the users' connection sets (the uid is appended)
-- ARGV[2] most users to look at
-- Returns {users looked at, uid, last seen ms (or ''), uid, last seen, ...}
-- for the users taken out.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[2]))
local out = {#due}
for _, uid in ipairs(due) do
  local key = ARGV[1] .. uid
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. now)
  local freshest = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
  if #freshest > 0 then
    -- A connection outlives the score here (Redis's clock stepped back).
    redis.call('ZADD', KEYS[1], freshest[2], uid)
  else
    redis.call('DEL', key)
    redis.call('ZREM', KEYS[1], uid)
    redis.call('ZREM', KEYS[3], uid)
    out[#out + 1] = uid
    out[#out + 1] = redis.call('ZSCORE', KEYS[2], uid) or ''
  end
end
return out
