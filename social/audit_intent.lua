-- Records, in the user's slot, an admin's intent to suspend an account or
-- to lift its suspension, before the change is made: the suspension's
-- revision now, and the audit record of the change to come. The change
-- right after that revision can only be the one asked for (each change
-- flips the account's state), so audit_settle.lua logs the record once
-- the revision has moved past it, whoever made the change and whatever
-- became of the call. Nothing is recorded for an account that is so
-- already: no change is to come.
--
-- KEYS[1] the user's hash
-- ARGV[1] '1' to suspend, '0' to lift the suspension
-- ARGV[2] the intent's field (audit_intent:<ref>)
-- ARGV[3] the audit record, JSON
-- Returns 1 when it recorded the intent, 0 when the account is so
-- already, -1 when there is no such user.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if (redis.call('HEXISTS', KEYS[1], 'suspended') == 1) == (ARGV[1] == '1') then
  return 0
end
local rev = redis.call('HGET', KEYS[1], 'suspension_rev') or '0'
redis.call('HSET', KEYS[1], ARGV[2], rev .. ' ' .. ARGV[3])
return 1
