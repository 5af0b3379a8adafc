-- Takes a member out of a list, for its owner only: the list's side of
-- RemoveListMember, in the list's slot. The membership goes first: it is
-- what a copy into the list, or a fan-out pass, checks after writing.
-- Removing someone who is no member changes nothing.
-- Runs after list_owner.lua.
--
-- KEYS[1] the list's hash
-- KEYS[2] the list's members
-- ARGV[1] uid asking
-- ARGV[2] member uid
-- Returns 1 when the member was removed, 0 when they were no member, -1
-- when the list does not exist, -2 when it belongs to someone else.
local refusal = refuse_unless_owner(KEYS[1], ARGV[1])
if refusal then
  return refusal
end
if redis.call('ZREM', KEYS[2], ARGV[2]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'members', -1)
return 1
