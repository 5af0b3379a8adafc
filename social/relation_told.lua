-- Tells a user's streams, on every instance, that one of their blocks or
-- mutes changed: first that whom they hide changed (hidden_changed, which
-- every build's instances read again on), then, for the client, the
-- relation frame of the state the set holds now, read here, in the same
-- step as the frames go. A block and an unblock racing each other each
-- tell after their write, so whichever tells last tells what stands.
--
-- KEYS[1] the user's set (blocks or mutes), in their slot
-- ARGV[1] the other account's uid
-- ARGV[2] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[3] the user's channel, in their slot
-- ARGV[4] the hidden_changed message
-- ARGV[5] the relation frame saying the set holds the account
-- ARGV[6] the relation frame saying it does not
-- Returns 1 when the set holds the account, 0 when not.
local on = redis.call('ZSCORE', KEYS[1], ARGV[1]) ~= false
redis.call(ARGV[2], ARGV[3], ARGV[4])
if on then
  redis.call(ARGV[2], ARGV[3], ARGV[5])
  return 1
end
redis.call(ARGV[2], ARGV[3], ARGV[6])
return 0
