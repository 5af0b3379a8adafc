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
-- KEYS[10] lists that hold the author (list:in)
-- KEYS[11] the list fan-out job hash
-- KEYS[12] list membership sequence counter
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
-- Returns 1 with a job queued, 0 without one, -1 when the author is unknown.
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
if redis.call('ZCARD', KEYS[10]) > 0 then
  local entry = redis.call('XADD', KEYS[7], '*', 'job', KEYS[11])
  redis.call('HSET', KEYS[11], 'kind', 'list_post', 'uid', ARGV[2], 'sid', id,
    'cursor', 0, 'until', redis.call('GET', KEYS[12]) or '0', 'entry', entry)
end
if redis.call('ZCARD', KEYS[6]) == 0 then
  return 0
end
-- Those who follow after this moment get the status from their backfill, so
-- the job stops at the newest follow that exists now.
local last = redis.call('GET', KEYS[9]) or '0'
local entry = redis.call('XADD', KEYS[7], '*', 'job', KEYS[8])
redis.call('HSET', KEYS[8], 'kind', 'post', 'uid', ARGV[2], 'sid', id,
  'cursor', 0, 'until', last, 'payload', ARGV[8], 'entry', entry)
return 1
