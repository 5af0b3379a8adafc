-- Adds a member to a list, for its owner only, and backfills the list's
-- timeline with the member's latest statuses, in one step. Adding a member
-- twice changes nothing. Runs after shared.lua and list_owner.lua.
--
-- KEYS[1] the list's hash
-- KEYS[2] the list's members
-- KEYS[3] the lists that hold the member (list:in)
-- KEYS[4] the list's timeline
-- KEYS[5] the member's user hash
-- KEYS[6] the member's profile timeline
-- KEYS[7] list membership sequence counter
-- ARGV[1] uid asking
-- ARGV[2] member uid
-- ARGV[3] list id
-- ARGV[4] most members a list may hold
-- ARGV[5] list timeline size
-- Returns 1 when the member was added, 0 when they were a member already,
-- -1 when the list does not exist, -2 when it belongs to someone else, -3
-- when the member does not exist, -4 when the list is full.
local refusal = refuse_unless_owner(KEYS[1], ARGV[1])
if refusal then
  return refusal
end
if redis.call('EXISTS', KEYS[5]) == 0 then
  return -3
end
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  return 0
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  return -4
end
-- Scores come from one counter so that they are unique and ordered: a
-- fan-out job pages through list:in with them as an exact cursor, and
-- stops at the last membership that existed when the status was posted;
-- this one's statuses up to now come from the backfill below.
local seq = redis.call('INCR', KEYS[7])
redis.call('ZADD', KEYS[2], seq, ARGV[2])
redis.call('ZADD', KEYS[3], seq, ARGV[3])
redis.call('HINCRBY', KEYS[1], 'members', 1)
copy_latest(KEYS[4], KEYS[6], tonumber(ARGV[5]))
return 1
