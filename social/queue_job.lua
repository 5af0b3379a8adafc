-- Queues a fan-out job unless it is queued already: its hash, and an entry
-- in the job stream that names it.
--
-- KEYS[1] fan-out job stream
-- KEYS[2] the job hash
-- ARGV field, value pairs of the job
-- Returns 1 when it queued the job, 0 when it was there.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local entry = redis.call('XADD', KEYS[1], '*', 'job', KEYS[2])
redis.call('HSET', KEYS[2], 'entry', entry, unpack(ARGV))
return 1
