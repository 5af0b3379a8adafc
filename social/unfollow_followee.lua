-- The followee's side of an unfollow, in the followee's slot: the follower
-- leaves the followers set, the followers count with it, and the friends
-- set; the followee's unfollow count goes up by one (a post's push reads
-- it, see push.go). Running this again changes nothing.
--
-- KEYS[1] the followee's followers set
-- KEYS[2] the followee's friends set
-- KEYS[3] the followee's user hash
-- KEYS[4] the followee's unfollow count
-- ARGV[1] follower uid
-- Returns {1 when this removed the follower, 1 when this ended a
-- friendship}.
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 then
  redis.call('HINCRBY', KEYS[3], 'followers', -1)
  redis.call('INCR', KEYS[4])
end
return {removed, redis.call('ZREM', KEYS[2], ARGV[1])}
