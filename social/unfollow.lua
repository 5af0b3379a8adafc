-- Makes ARGV[1] stop following ARGV[2] in one step: sets, counters, friend
-- sets, and the followee's statuses out of the follower's home timeline,
-- with the deleted ones whose cleanup has not reached the follower yet.
-- When the home timeline falls under the refill mark, a refill job is queued
-- in the same step, bounded below home's lowest id then (its "floor").
-- Unfollowing twice changes nothing.
--
-- KEYS[1] following set of the follower
-- KEYS[2] followers set of the followee
-- KEYS[3] follower's user hash
-- KEYS[4] followee's user hash
-- KEYS[5] friends set of the follower
-- KEYS[6] friends set of the followee
-- KEYS[7] follower's home timeline
-- KEYS[8] followee's profile timeline
-- KEYS[9] fan-out job stream
-- KEYS[10] the follower's refill job hash
-- KEYS[11] users by follower count (who to follow)
-- KEYS[12] the follower's pulled authors
-- ARGV[1] follower uid
-- ARGV[2] followee uid
-- ARGV[3] refill when the home timeline holds fewer statuses than this
-- ARGV[4] prefix of status cleanup job hashes (the status id follows)
-- ARGV[5] the follower's event channel
-- Returns 2 when a follow was removed and that ended a friendship, 1 when a
-- follow was removed, 0 when there was none.
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'following', -1)
redis.call('HINCRBY', KEYS[4], 'followers', -1)
if tonumber(redis.call('ZINCRBY', KEYS[11], -1, ARGV[2])) <= 0 then
  redis.call('ZREM', KEYS[11], ARGV[2])
end
if redis.call('ZREM', KEYS[12], ARGV[2]) == 1 then
  redis.call('PUBLISH', ARGV[5], '{"type":"pull_removed","author":' .. ARGV[2] .. '}')
end
local ended = redis.call('ZREM', KEYS[5], ARGV[2]) == 1
redis.call('ZREM', KEYS[6], ARGV[1])

-- The home timeline is small (capped), the profile may be large: walk the
-- home timeline and drop what the followee wrote. A status deleted a
-- moment ago is in no profile any more, and its cleanup job walks its
-- author's followers, which may no longer include this one: drop here
-- every status whose cleanup is under way, telling the follower as the
-- job would have (the job then finds nothing here and tells nobody twice).
local home = redis.call('ZRANGE', KEYS[7], 0, -1)
local drop = {}
for _, id in ipairs(home) do
  if redis.call('ZSCORE', KEYS[8], id) then
    drop[#drop + 1] = id
  elseif redis.call('EXISTS', ARGV[4] .. id) == 1 then
    drop[#drop + 1] = id
    redis.call('PUBLISH', ARGV[5], '{"type":"status_deleted","id":' .. id .. '}')
  end
end
for i = 1, #drop, 1000 do
  redis.call('ZREM', KEYS[7], unpack(drop, i, math.min(i + 999, #drop)))
end

if redis.call('ZCARD', KEYS[7]) < tonumber(ARGV[3])
    and redis.call('ZCARD', KEYS[1]) > 0
    and redis.call('EXISTS', KEYS[10]) == 0 then
  -- Every status of the remaining followees newer than home's lowest is in
  -- home already: the job copies only older ones. An empty home has no
  -- such bound.
  local lowest = redis.call('ZRANGE', KEYS[7], 0, 0, 'WITHSCORES')
  local floor = lowest[2] or '+inf'
  local entry = redis.call('XADD', KEYS[9], '*', 'job', KEYS[10])
  redis.call('HSET', KEYS[10], 'kind', 'refill', 'uid', ARGV[1], 'cursor', 0,
    'floor', floor, 'entry', entry)
end
if ended then
  return 2
end
return 1
