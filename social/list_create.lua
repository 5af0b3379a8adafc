-- Makes a list for its owner, unless they own as many as one user may.
--
-- KEYS[1] owner's user hash
-- KEYS[2] owner's lists (list:out)
-- KEYS[3] the new list's hash
-- ARGV[1] list id
-- ARGV[2] owner uid
-- ARGV[3] name
-- ARGV[4] created, unix ms
-- ARGV[5] most lists one user may own
-- Returns 1 when the list was made, -1 when the owner does not exist, -2
-- when they own the most lists already.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  return -2
end
redis.call('HSET', KEYS[3], 'id', ARGV[1], 'owner', ARGV[2], 'name', ARGV[3],
  'created', ARGV[4], 'members', 0)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return 1
