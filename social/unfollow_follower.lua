-- The follower's side of an unfollow, in the follower's slot: the followee
-- leaves the following set, the following count with it, the friends set
-- and the pulled authors; the follower's instances are told when the
-- followee was a pulled author. Running this again changes nothing.
--
-- KEYS[1] the follower's following set
-- KEYS[2] the follower's friends set
-- KEYS[3] the follower's pulled authors
-- KEYS[4] the follower's user hash
-- ARGV[1] followee uid
-- ARGV[2] the command to publish with (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[3] the follower's event channel
-- ARGV[4] the pull_removed message
-- Returns {1 when this removed the follow, 1 when this ended a friendship}.
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 then
  redis.call('HINCRBY', KEYS[4], 'following', -1)
end
local ended = redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('ZREM', KEYS[3], ARGV[1]) == 1 then
  redis.call(ARGV[2], ARGV[3], ARGV[4])
end
return {removed, ended}
