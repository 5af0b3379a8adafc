-- Sets a flag (ARGV[1], to "1") on the jobs named that are still queued,
-- never making a job that is gone (one a worker finished meanwhile):
--   "deleted" marks the post jobs of a status being deleted: a job whose
--   maker died writes the status again only while it is not marked (see
--   rewriteUnlessDeleted);
--   "ready" lets a job queued before its inputs run, once they are written
--   (markReady): one with no stream entry yet is given one, for a worker
--   (see queue_job.lua), and leaves the jobs being made.
--
-- KEYS[1] fan-out job stream
-- KEYS[2] the jobs being made (job key -> when queued, unix ms)
-- KEYS[3..] the job hashes (their slot is the job stream's)
-- ARGV[1] the flag
-- Returns how many it flagged.
local n = 0
for i = 3, #KEYS do
  local key = KEYS[i]
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, ARGV[1], '1')
    if ARGV[1] == 'ready' then
      redis.call('ZREM', KEYS[2], key)
      if not redis.call('HGET', key, 'entry') then
        redis.call('HSET', key, 'entry', redis.call('XADD', KEYS[1], '*', 'job', key))
      end
    end
    n = n + 1
  end
end
return n
