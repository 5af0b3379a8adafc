-- Sets a flag (ARGV[1], to "1") on the jobs named that are still queued,
-- never making a job that is gone (one a worker finished meanwhile):
--   "deleted" marks the post jobs of a status being deleted: a job whose
--   maker died writes the status again only while it is not marked (see
--   rewriteUnlessDeleted);
--   "ready" lets a job queued before its inputs run, once they are written
--   (markReady). Its maker runs its first pass next (inlinePass), so it
--   stays among the jobs being made, with no stream entry, until that pass
--   finishes it or moves it on (advance.lua gives it an entry then), or a
--   worker adopts it (adopt_jobs.lua: its maker died, or its pass failed).
--
-- KEYS the job hashes (their slot is the job stream's)
-- ARGV[1] the flag
-- Returns how many it flagged.
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, ARGV[1], '1')
    n = n + 1
  end
end
return n
