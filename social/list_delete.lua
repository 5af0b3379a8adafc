-- Marks a list deleted, for its owner only, and returns its members: the
-- first step of DeleteList. From here on the list is no list to any read
-- or change but its deletion, whose later steps (taking it out of each
-- member's list:in and its owner's list:out, then deleting its keys) run
-- from Go on other slots. A list marked already is marked again, so that a
-- retry of a deletion cut short finishes it.
-- Runs after list_owner.lua.
--
-- KEYS[1] the list's hash
-- KEYS[2] the list's members
-- ARGV[1] uid asking
-- Returns {1, member uid...} when marked, {-1} when the list does not
-- exist, {-2} when it belongs to someone else.
local refusal = refuse_unless_owner(KEYS[1], ARGV[1], true)
if refusal then
  return {refusal}
end
redis.call('HSET', KEYS[1], 'deleted', 1)
local members = redis.call('ZRANGE', KEYS[2], 0, -1)
table.insert(members, 1, 1)
return members
