-- Removes a member from a list, for its owner only, and takes the member's
-- statuses out of the list's timeline, with their deleted ones whose list
-- cleanup has not reached this list yet (the cleanup job walks the lists
-- that hold the author, which this one no longer does). Removing someone
-- who is no member changes nothing.
-- Runs after list_owner.lua.
--
-- KEYS[1] the list's hash
-- KEYS[2] the list's members
-- KEYS[3] the lists that hold the member (list:in)
-- KEYS[4] the list's timeline
-- KEYS[5] the member's profile timeline
-- ARGV[1] uid asking
-- ARGV[2] member uid
-- ARGV[3] list id
-- ARGV[4] prefix of list cleanup job hashes (the status id follows)
-- Returns 1 when the member was removed, 0 when they were no member, -1
-- when the list does not exist, -2 when it belongs to someone else.
local refusal = refuse_unless_owner(KEYS[1], ARGV[1])
if refusal then
  return refusal
end
if redis.call('ZREM', KEYS[2], ARGV[2]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('HINCRBY', KEYS[1], 'members', -1)
-- The timeline is capped, the profile may be large: walk the timeline.
local drop = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  if redis.call('ZSCORE', KEYS[5], id) or redis.call('EXISTS', ARGV[4] .. id) == 1 then
    drop[#drop + 1] = id
  end
end
for i = 1, #drop, 1000 do
  redis.call('ZREM', KEYS[4], unpack(drop, i, math.min(i + 999, #drop)))
end
return 1
