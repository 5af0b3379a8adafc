-- Pushes a repost entry into followers' home timelines, leaving out each
-- home that holds its original, or another repost of it that is still
-- there. Each follower's two keys are in the follower's slot: on a Redis
-- Cluster the script runs for one follower at a time, on one Redis for a
-- page of them. home:reposts maps each original a repost brought in to
-- that repost's id; a mapping whose repost left the home (trimmed,
-- deleted, unfollowed) counts as absent.
--
-- KEYS[2i-1] follower i's home timeline
-- KEYS[2i]   follower i's home reposts (original id -> repost id)
-- ARGV[1] repost entry id
-- ARGV[2] original id
-- ARGV[3] home timeline size
-- ARGV[4] one character a follower: '1' to trim both keys to the size
-- Returns, a follower each, 1 when it added the entry, 0 when not (the
-- home has it, its original, or another repost of it).
local out = {}
for i = 1, #KEYS / 2 do
  local home, map = KEYS[2 * i - 1], KEYS[2 * i]
  local added = 0
  local other = redis.call('ZSCORE', map, ARGV[2])
  if not redis.call('ZSCORE', home, ARGV[2])
      and not (other and other ~= ARGV[1] and redis.call('ZSCORE', home, other)) then
    redis.call('ZADD', map, ARGV[1], ARGV[2])
    added = redis.call('ZADD', home, ARGV[1], ARGV[1])
    if string.sub(ARGV[4], i, i) == '1' then
      redis.call('ZREMRANGEBYRANK', home, 0, -tonumber(ARGV[3]) - 1)
      redis.call('ZREMRANGEBYRANK', map, 0, -tonumber(ARGV[3]) - 1)
    end
  end
  out[i] = added
end
return out
