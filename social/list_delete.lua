-- Deletes a list, for its owner only: its hash, members and timeline, its
-- place among the owner's lists, and its id in each member's list:in, so
-- that no fan-out job finds it again. A list holds at most a few hundred
-- members, so the walk is bounded.
-- Runs after list_owner.lua.
--
-- KEYS[1] the list's hash
-- KEYS[2] the list's members
-- KEYS[3] the list's timeline
-- KEYS[4] owner's lists (list:out)
-- ARGV[1] uid asking
-- ARGV[2] list id
-- ARGV[3] prefix of the sets of lists that hold a user (list:in:)
-- Returns 1 when deleted, -1 when the list does not exist, -2 when it
-- belongs to someone else.
local refusal = refuse_unless_owner(KEYS[1], ARGV[1])
if refusal then
  return refusal
end
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  redis.call('ZREM', ARGV[3] .. member, ARGV[2])
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[2])
return 1
