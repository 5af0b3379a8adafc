-- Writes a new status and everything that must hold with it in one step: the
-- status hash, the author's profile and home timelines, the global timeline,
-- the author's post count, and (when the author has followers) a durable
-- fan-out job in the job stream.
--
-- KEYS[1] author's user hash
-- KEYS[2] the status hash
-- KEYS[3] author's profile timeline
-- KEYS[4] author's home timeline
-- KEYS[5] global timeline
-- KEYS[6] author's followers set
-- KEYS[7] fan-out job stream
-- KEYS[8] the fan-out job hash
-- KEYS[9] follow sequence counter
-- KEYS[10] pulled authors (uid -> first status id not pushed)
-- KEYS[11] the author's promotion job hash
-- KEYS[12] lists that hold the author (list:in)
-- KEYS[13] the list fan-out job hash
-- KEYS[14] list membership sequence counter
-- ARGV[1] status id
-- ARGV[2] author uid
-- ARGV[3] author login
-- ARGV[4] message
-- ARGV[5] posted, unix ms
-- ARGV[6] home timeline size
-- ARGV[7] global timeline size
-- ARGV[8] live event to publish (JSON)
-- ARGV[9] author's event channel
-- ARGV[10] author name
-- ARGV[11] author's channel for their followers (pulled authors)
-- ARGV[12] pull threshold: the follower count from which an author is
--          pulled; 0: never
-- Returns -1 when the author is unknown; otherwise the jobs it queued: 1
-- for the followers' (post), plus 2 for the lists' (list_post).
-- Runs after shared.lua.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local id = ARGV[1]
redis.call('HSET', KEYS[2], 'id', id, 'uid', ARGV[2], 'login', ARGV[3],
  'name', ARGV[10], 'message', ARGV[4], 'posted', ARGV[5])
redis.call('HINCRBY', KEYS[1], 'posts', 1)
redis.call('ZADD', KEYS[3], id, id)
redis.call('ZADD', KEYS[4], id, id)
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[6]) - 1)
redis.call('ZADD', KEYS[5], id, id)
redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -tonumber(ARGV[7]) - 1)
redis.call('PUBLISH', ARGV[9], ARGV[8])
-- The lists that hold the author get the status by a job of their own
-- (list_post), whatever the number of followers. A list that takes the
-- author in after this moment gets it from its backfill.
local queued = 0
if redis.call('ZCARD', KEYS[12]) > 0 then
  local entry = redis.call('XADD', KEYS[7], '*', 'job', KEYS[13])
  redis.call('HSET', KEYS[13], 'kind', 'list_post', 'uid', ARGV[2], 'sid', id,
    'cursor', 0, 'until', redis.call('GET', KEYS[14]) or '0', 'entry', entry)
  queued = 2
end
-- A pulled author's followers read the status from the profile timeline;
-- the instances route it to those connected, from one publish.
if redis.call('ZSCORE', KEYS[10], ARGV[2]) then
  redis.call('PUBLISH', ARGV[11], ARGV[8])
  return queued
end
local followers = redis.call('ZCARD', KEYS[6])
if followers == 0 then
  return queued
end
-- Those who follow after this moment get the status from their backfill, so
-- the job stops at the newest follow that exists now.
local last = redis.call('GET', KEYS[9]) or '0'
-- An author over the threshold (one who passed it before it was lowered)
-- is made pulled from here on; this status is still pushed.
local threshold = tonumber(ARGV[12])
if threshold > 0 and followers >= threshold and redis.call('EXISTS', KEYS[11]) == 0 then
  queue_promotion(KEYS[7], KEYS[11], ARGV[2], last)
end
local entry = redis.call('XADD', KEYS[7], '*', 'job', KEYS[8])
redis.call('HSET', KEYS[8], 'kind', 'post', 'uid', ARGV[2], 'sid', id,
  'cursor', 0, 'until', last, 'payload', ARGV[8], 'entry', entry)
return queued + 1
