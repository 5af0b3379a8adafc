-- Queues a fan-out job unless it is queued already: its hash, and either an
-- entry in the job stream that names it (a job whose inputs are written),
-- or, for a job queued before its inputs, its place among the jobs being
-- made: it enters the stream only when its maker marks it ready
-- (flag_jobs.lua) or moves it past its first pass (advance.lua), or when a
-- worker adopts it, its maker taken for dead (adopt_jobs.lua). A post job
-- its maker finishes in its first pass never wakes a worker.
--
-- KEYS[1] fan-out job stream
-- KEYS[2] the job hash
-- KEYS[3] the jobs being made (job key -> when queued, unix ms)
-- ARGV[1] '1' for a job whose inputs are written, '0' for one queued before
-- ARGV[2..] field, value pairs of the job
-- Returns 1 when it queued the job, 0 when it was there.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
if ARGV[1] == '1' then
  local entry = redis.call('XADD', KEYS[1], '*', 'job', KEYS[2])
  redis.call('HSET', KEYS[2], 'entry', entry, unpack(ARGV, 2))
  return 1
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('HSET', KEYS[2], 'queued', now, unpack(ARGV, 2))
redis.call('ZADD', KEYS[3], now, KEYS[2])
return 1
