-- Claims a user's one repost of a status for a repost entry, unless the
-- user has a claim on it already.
--
-- KEYS[1] the status's reposts (uid -> repost entry id)
-- ARGV[1] reposting uid
-- ARGV[2] repost entry id
-- Returns 1 when the claim names this entry (made now, or before: a job
-- redoing the repost), 0 when it names another.
redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then
  return 1
end
return 0
