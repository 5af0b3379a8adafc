-- The heartbeat script of an earlier layout, one call per heartbeat of one
-- connection, with each connection's expiry in a sorted set of its user's.
-- Kept only for BenchmarkHeartbeats to compare the current layout with.
--
-- Records activity of user ARGV[1] on connection ARGV[2] in one step: the
-- user joins the current minute's active set and HyperLogLog, last.seen gets
-- the time, the connection's expiry moves to now + W, and the user goes into
-- (or stays in) connected and the shared online copy (see copy.lua). The time
-- is Redis's own, so instances with skewed clocks agree. A heartbeat on a
-- connection the registry no longer holds (swept after a long pause, or Redis
-- restarted) registers it again, so Connect and Heartbeat are this one script.
--
-- The cap on one user's connections is checked here, before anything is
-- written, so connects racing on several instances cannot overshoot it: a
-- connection not registered yet (or registered but expired) is refused when
-- the user already holds ARGV[8] unexpired ones, and a refusal writes
-- nothing. Only Connect passes a cap. Heartbeats pass none and are never
-- refused, not even one that registers again a connection swept meanwhile:
-- that connection was let in when it opened, and refusing it now would
-- close a live stream. So after a Redis restart a user may hold more than
-- the cap for a while; their new connections are refused until they are
-- below it again.
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] connected (uid -> expiry of the user's freshest connection, unix ms)
-- KEYS[3] the user's connections (connID -> expiry, unix ms)
-- KEYS[4] the shared online copy (uid -> last activity)
-- ARGV[1] uid
-- ARGV[2] connection id
-- ARGV[3] online window W, ms: a connection counts this long after its last heartbeat
-- ARGV[4] prefix of the per-minute active sets (the minute number is appended)
-- ARGV[5] TTL of a per-minute active set and HyperLogLog, seconds
-- ARGV[6] TTL of the user's connections key, ms (it outlives every expiry in it)
-- ARGV[7] prefix of the per-minute active HyperLogLogs (the minute number is appended)
-- ARGV[8] most unexpired connections the user may hold when this one is new;
--         <= 0: no cap (heartbeats)
-- Returns {1 when the user was not in connected (friends must be told), now ms},
-- or {-1, now ms} when the cap refused the connection and nothing was written.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[3])

local cap = tonumber(ARGV[8])
if cap > 0 then
  local held = redis.call('ZSCORE', KEYS[3], ARGV[2])
  if (not held or tonumber(held) < now) and redis.call('ZCOUNT', KEYS[3], now, '+inf') >= cap then
    return {-1, now}
  end
end

local minute = math.floor(tonumber(t[1]) / 60)
local set = ARGV[4] .. minute
redis.call('SADD', set, ARGV[1])
redis.call('EXPIRE', set, ARGV[5])
local hll = ARGV[7] .. minute
redis.call('PFADD', hll, ARGV[1])
redis.call('EXPIRE', hll, ARGV[5])

redis.call('ZADD', KEYS[1], now, ARGV[1])

-- Connections that expired belong to an instance that went away.
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. now)
redis.call('ZADD', KEYS[3], expiry, ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[6])

-- This expiry is the latest of the user's: Redis time only moves forward.
local first = redis.call('ZADD', KEYS[2], expiry, ARGV[1])
-- A missing copy is made whole by its next reader; adding to it here would
-- make a partial one that looks whole.
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('ZADD', KEYS[4], now, ARGV[1])
end
return {first, now}
