-- Renames a list, for its owner only.
-- Runs after list_owner.lua.
--
-- KEYS[1] the list's hash
-- ARGV[1] uid asking
-- ARGV[2] new name
-- Returns 1 when renamed, -1 when the list does not exist, -2 when it
-- belongs to someone else.
local refusal = refuse_unless_owner(KEYS[1], ARGV[1])
if refusal then
  return refusal
end
redis.call('HSET', KEYS[1], 'name', ARGV[2])
return 1
