-- Adds a pulled author to those a follower reads, in the follower's slot,
-- while the follower follows them, scored as the follow; the follower's
-- instances are told when it is new. Running this again changes nothing,
-- and it adds nothing once an unfollow has run (which takes the author out
-- of both sets in one step).
--
-- KEYS[1] the follower's following set
-- KEYS[2] the follower's pulled authors
-- ARGV[1] the author's uid
-- ARGV[2] the command to publish with (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[3] the follower's event channel
-- ARGV[4] the pull_added message
-- Returns 1 when it added the author, 0 otherwise.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then
  return 0
end
if redis.call('ZADD', KEYS[2], 'NX', score, ARGV[1]) == 0 then
  return 0
end
redis.call(ARGV[2], ARGV[3], ARGV[4])
return 1
