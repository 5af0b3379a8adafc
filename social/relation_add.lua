-- Adds an account to one of a user's sets of accounts (whom they block,
-- whom they mute), in the user's slot, unless it is there already (so that
-- running this again changes nothing) or the set holds its cap.
--
-- KEYS[1] the set (uid -> unix ms it was added)
-- ARGV[1] the account's uid
-- ARGV[2] now, unix ms
-- ARGV[3] the most accounts the set may hold
-- Returns 1 when this added it, 0 when it was there, -1 when the set is full.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return -1
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
