-- Adds a member to a list, for its owner only, within the cap: the list's
-- side of AddListMember, in the list's slot. Adding a member twice changes
-- nothing. Called first without a score, to learn whether a score must be
-- taken from list:member:seq (which is in another slot), then with it.
-- Runs after list_owner.lua.
--
-- KEYS[1] the list's hash
-- KEYS[2] the list's members
-- ARGV[1] uid asking
-- ARGV[2] member uid
-- ARGV[3] '1' when the member's user hash exists, else '0'
-- ARGV[4] most members a list may hold
-- ARGV[5] the membership's score (list:member:seq), or '0' to only check
-- ARGV[6] '1' when the asker follows the member (or is the member), else
--         '0' (read in the asker's slot just before)
-- Returns the membership's score (the stored one when they were a member
-- already); 0 when called to check and they would be added; -1 when the
-- list does not exist, -2 when it belongs to someone else, -3 when the
-- member does not exist, -4 when the list is full, -5 when the asker does
-- not follow the member, -6 when they do not but the member is in the list
-- (an add cut short after an unfollow it raced; the caller takes it out).
local refusal = refuse_unless_owner(KEYS[1], ARGV[1])
if refusal then
  return refusal
end
if ARGV[3] ~= '1' then
  return -3
end
local score = redis.call('ZSCORE', KEYS[2], ARGV[2])
if ARGV[6] ~= '1' then
  if score then
    return -6
  end
  return -5
end
if score then
  return tonumber(score)
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  return -4
end
if ARGV[5] == '0' then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'members', 1)
return tonumber(ARGV[5])
