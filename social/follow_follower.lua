-- The follower's side of a follow, in the follower's slot: the followee
-- joins the following set (unless there already, so that running this
-- again changes nothing), the following count with it, and the friends set
-- when the followee follows back. Friendship is read from the two sets of
-- this slot, so whichever side of two crossing follows runs second here
-- sees both. A followee the follower blocks, or who blocks the follower,
-- is refused (block.go): both sets are in this slot.
--
-- KEYS[1] the follower's following set
-- KEYS[2] the follower's followers set
-- KEYS[3] the follower's friends set
-- KEYS[4] the follower's user hash
-- KEYS[5] whom the follower blocks
-- KEYS[6] who blocks the follower
-- ARGV[1] followee uid
-- ARGV[2] follow score (a follow sequence number) for a new follow
-- ARGV[3] now, unix ms (friend-since score)
-- ARGV[4] the most accounts one may follow: a new follow past it is refused
-- Returns {the follow's score, 1 when this added the follow, 1 when this
-- made the two friends, 0}, or {"", 0, 0, 1} when a block refuses it, or
-- {"", 0, 0, 2} when the follower is gone or being deleted (no id in their
-- hash, or the deleted mark): the deletion's walk of their follows began
-- after the mark, and would miss a follow written now; or {"", 0, 0, 3}
-- when the follower follows as many as one may (a follow that stands is
-- not refused: running this again changes nothing).
local follower = redis.call('HMGET', KEYS[4], 'id', 'deleted')
if not follower[1] or follower[2] then
  return {'', 0, 0, 2}
end
if redis.call('ZSCORE', KEYS[5], ARGV[1]) or redis.call('ZSCORE', KEYS[6], ARGV[1]) then
  return {'', 0, 0, 1}
end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return {'', 0, 0, 3}
end
local added = 0
if not score then
  score = ARGV[2]
  redis.call('ZADD', KEYS[1], score, ARGV[1])
  redis.call('HINCRBY', KEYS[4], 'following', 1)
  added = 1
end
local made = 0
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  made = redis.call('ZADD', KEYS[3], 'NX', ARGV[3], ARGV[1])
end
return {score, added, made, 0}
