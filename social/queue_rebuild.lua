-- Queues the rebuild of a returning user's home timeline: a refill job with
-- no floor, unless one is queued already (it then does that work).
--
-- KEYS[1] fan-out job stream
-- KEYS[2] the user's refill job hash
-- ARGV[1] uid
-- Returns 1 when it queued the job, 0 when one was there.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local entry = redis.call('XADD', KEYS[1], '*', 'job', KEYS[2])
redis.call('HSET', KEYS[2], 'kind', 'refill', 'uid', ARGV[1], 'cursor', 0, 'floor', '+inf',
  'entry', entry)
return 1
