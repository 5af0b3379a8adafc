-- Takes a place among its owner's lists for a new list, unless they own as
-- many as one user may. Runs in the owner's slot; the list's hash, in its
-- own slot, is written after (see CreateList).
--
-- KEYS[1] owner's user hash
-- KEYS[2] owner's lists (list:out)
-- ARGV[1] list id
-- ARGV[2] created, unix ms
-- ARGV[3] most lists one user may own
-- Returns 1 when the place was taken, -1 when the owner does not exist or
-- is being deleted, -2 when they own the most lists already.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then
  return -1
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  return -2
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
