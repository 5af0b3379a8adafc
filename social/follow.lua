-- Makes ARGV[1] follow ARGV[2], keeping counters, friend sets and the home
-- timeline consistent in one step. Following twice changes nothing.
-- Runs after shared.lua.
--
-- KEYS[1] following set of the follower
-- KEYS[2] followers set of the followee
-- KEYS[3] follower's user hash
-- KEYS[4] followee's user hash
-- KEYS[5] following set of the followee (to see whether the follow is mutual)
-- KEYS[6] friends set of the follower
-- KEYS[7] friends set of the followee
-- KEYS[8] follower's home timeline
-- KEYS[9] followee's profile timeline
-- KEYS[10] follow sequence counter
-- KEYS[11] users by follower count (who to follow)
-- KEYS[12] pulled authors (uid -> first status id not pushed)
-- KEYS[13] the follower's pulled authors
-- KEYS[14] fan-out job stream
-- KEYS[15] the followee's promotion job hash
-- ARGV[1] follower uid
-- ARGV[2] followee uid
-- ARGV[3] home timeline size
-- ARGV[4] now, unix ms (friend-since score)
-- ARGV[5] the followee's event channel, told of the new follower
-- ARGV[6] the follower's event channel
-- ARGV[7] pull threshold: the follower count from which an author is
--         pulled; 0: never
-- Returns 2 when a follow was added and made the two friends, 1 when a
-- follow was added, 0 when it was there already, -1 when a user does not
-- exist.
if redis.call('EXISTS', KEYS[3]) == 0 or redis.call('EXISTS', KEYS[4]) == 0 then
  return -1
end
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 0
end
-- Scores come from one counter so that they are unique and ordered: fan-out
-- jobs page through followers with them as an exact cursor.
local seq = redis.call('INCR', KEYS[10])
redis.call('ZADD', KEYS[1], seq, ARGV[2])
redis.call('ZADD', KEYS[2], seq, ARGV[1])
redis.call('HINCRBY', KEYS[3], 'following', 1)
redis.call('HINCRBY', KEYS[4], 'followers', 1)
local added = 1
if redis.call('ZSCORE', KEYS[5], ARGV[1]) then
  redis.call('ZADD', KEYS[6], ARGV[4], ARGV[2])
  redis.call('ZADD', KEYS[7], ARGV[4], ARGV[1])
  added = 2
end
redis.call('ZINCRBY', KEYS[11], 1, ARGV[2])
-- The followed frame: the follower as a user reference, and whether the
-- followee follows them (a "follow back" is then a friendship made).
local who = redis.call('HMGET', KEYS[3], 'login', 'name')
redis.call('PUBLISH', ARGV[5], '{"type":"followed","user":{"id":' .. ARGV[1] ..
  ',"login":' .. cjson.encode(who[1]) .. ',"name":' .. cjson.encode(who[2]) ..
  '},"you_follow":' .. tostring(added == 2) .. '}')

-- A pulled author (or one being made so) is read from their profile
-- timeline by their followers: no copy into home, but the follower's
-- instances are told to route the author's channel to them.
if redis.call('ZSCORE', KEYS[12], ARGV[2]) or redis.call('EXISTS', KEYS[15]) == 1 then
  redis.call('ZADD', KEYS[13], seq, ARGV[2])
  redis.call('PUBLISH', ARGV[6], '{"type":"pull_added","author":' .. ARGV[2] .. '}')
  return added
end
local threshold = tonumber(ARGV[7])
if threshold > 0 and redis.call('ZCARD', KEYS[2]) >= threshold then
  queue_promotion(KEYS[14], KEYS[15], ARGV[2], seq)
end
copy_latest(KEYS[8], KEYS[9], tonumber(ARGV[3]))
return added
