-- Pushes a repost entry into a follower's home timeline unless the home
-- holds its original, or another repost of it that is still there: both
-- keys are the follower's, in the follower's slot. home:reposts maps each
-- original a repost brought in to that repost's id; a mapping whose repost
-- left the home (trimmed, deleted, unfollowed) counts as absent.
--
-- KEYS[1] follower's home timeline
-- KEYS[2] follower's home reposts (original id -> repost id)
-- ARGV[1] repost entry id
-- ARGV[2] original id
-- ARGV[3] home timeline size
-- ARGV[4] '1' to trim both to the size
-- Returns 1 when it added the entry, 0 when not (the home has it, its
-- original, or another repost of it).
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 0
end
local other = redis.call('ZSCORE', KEYS[2], ARGV[2])
if other and other ~= ARGV[1] and redis.call('ZSCORE', KEYS[1], other) then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
local added = redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1])
if ARGV[4] == '1' then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -tonumber(ARGV[3]) - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[3]) - 1)
end
return added
