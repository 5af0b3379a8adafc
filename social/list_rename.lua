-- Renames a list, for its owner only.
--
-- KEYS[1] the list's hash
-- ARGV[1] uid asking
-- ARGV[2] new name
-- Returns 1 when renamed, -1 when the list does not exist, -2 when it
-- belongs to someone else.
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return -1
end
if owner ~= ARGV[1] then
  return -2
end
redis.call('HSET', KEYS[1], 'name', ARGV[2])
return 1
