-- Marks the post jobs of a status being deleted ("deleted"), those still
-- queued: a job whose maker died writes the status again only while it is
-- not marked (see rewriteUnlessDeleted). A job that is gone is not made.
--
-- KEYS the job hashes (their slot is the job stream's)
-- Returns how many it marked.
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, 'deleted', '1')
    n = n + 1
  end
end
return n
