-- Takes back a user's repost claim on a status if it names the given
-- repost entry: a later repost's claim stays.
--
-- KEYS[1] the status's reposts (uid -> repost entry id)
-- ARGV[1] reposting uid
-- ARGV[2] repost entry id
-- Returns 1 when the user holds no claim on the status now, 0 when a
-- claim for another entry stands.
local claim = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not claim then
  return 1
end
if claim == ARGV[2] then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
