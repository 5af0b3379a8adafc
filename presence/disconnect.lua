-- Removes connection ARGV[2] of user ARGV[1] in one step. When no live
-- connection is left, the user leaves connected and the shared online copy
-- at once, so friends stop seeing them without waiting for a rebuild.
-- last.seen is left alone: it stays the time of the last activity.
--
-- KEYS[1] the user's connections (connID -> expiry, unix ms)
-- KEYS[2] connected (uid -> expiry of the user's freshest connection, unix ms)
-- KEYS[3] last.seen (uid -> last activity, unix ms)
-- KEYS[4] the shared online copy (uid -> last activity)
-- ARGV[1] uid
-- ARGV[2] connection id
-- Returns {1 when the user left connected here (friends must be told), last seen ms or nil}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
local seen = redis.call('ZSCORE', KEYS[3], ARGV[1])
local freshest = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #freshest > 0 then
  redis.call('ZADD', KEYS[2], 'XX', freshest[2], ARGV[1])
  return {0, seen}
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[4], ARGV[1])
-- 0 when a sweep took the user out already (and told the friends).
local last = redis.call('ZREM', KEYS[2], ARGV[1])
return {last, seen}
