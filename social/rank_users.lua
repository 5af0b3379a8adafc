-- Sets the follower-count ranking of some users from their hashes, each
-- read and written in this one step, so that follows running meanwhile
-- (which move the ranking by one) never leave it off.
--
-- KEYS[1] users by follower count
-- KEYS[2..] user hashes
-- ARGV[i] the uid of KEYS[i+1]
for i = 2, #KEYS do
  local n = tonumber(redis.call('HGET', KEYS[i], 'followers') or '0') or 0
  if n > 0 then
    redis.call('ZADD', KEYS[1], n, ARGV[i - 1])
  else
    redis.call('ZREM', KEYS[1], ARGV[i - 1])
  end
end
return #KEYS - 1
