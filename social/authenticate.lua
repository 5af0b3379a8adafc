-- Finds the user of a session and renews it, and keeps the user's last
-- activity, in one step. Activity is written at most once per ARGV[2] ms;
-- a user back after more than ARGV[3] ms away had posts skipped by the
-- fan-out meanwhile, so their home timeline is rebuilt: a refill job with
-- no floor is queued, unless one is queued already (then it does that work).
--
-- KEYS[1] the session
-- KEYS[2] last activity of users (uid -> unix ms)
-- KEYS[3] fan-out job stream
-- ARGV[1] session lifetime, ms
-- ARGV[2] write activity at most once per this many ms
-- ARGV[3] inactive after this many ms; 0: never
-- ARGV[4] prefix of refill job hashes (the uid follows)
-- ARGV[5] prefix of following sets
-- Returns {uid, 1 when a rebuild was queued else 0}; uid 0 when the session
-- does not exist.
local uid = redis.call('GET', KEYS[1])
if not uid then
  return {0, 0}
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = redis.call('ZSCORE', KEYS[2], uid)
if last and now - tonumber(last) < tonumber(ARGV[2]) then
  return {tonumber(uid), 0}
end
redis.call('ZADD', KEYS[2], now, uid)
local inactive = tonumber(ARGV[3])
if not last or inactive <= 0 or now - tonumber(last) < inactive then
  return {tonumber(uid), 0}
end
local job = ARGV[4] .. uid
if redis.call('EXISTS', job) == 1 or redis.call('ZCARD', ARGV[5] .. uid) == 0 then
  return {tonumber(uid), 0}
end
local entry = redis.call('XADD', KEYS[3], '*', 'job', job)
redis.call('HSET', job, 'kind', 'refill', 'uid', uid, 'cursor', 0, 'floor', '+inf',
  'entry', entry)
return {tonumber(uid), 1}
