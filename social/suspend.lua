-- Suspends an account, or lifts its suspension, in the user's slot, and
-- gives the change a revision: the job that hides or shows the account's
-- statuses carries it, and stops once a later change has its own. The
-- change's audit record, when one is given, is written with it, pending
-- for the audit log (see flushAudit): a record is written by the change it
-- records, and by no other, whichever admins race and whatever becomes of
-- their calls.
--
-- KEYS[1] the user's hash
-- ARGV[1] '1' to suspend, '0' to lift the suspension
-- ARGV[2] now, unix ms
-- ARGV[3] the change's audit record, JSON; '' for none
-- Returns the new revision, 0 when the account was so already, -1 when
-- there is no such user.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local suspended = redis.call('HEXISTS', KEYS[1], 'suspended') == 1
if suspended == (ARGV[1] == '1') then
  return 0
end
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'suspended', ARGV[2])
else
  redis.call('HDEL', KEYS[1], 'suspended')
end
local rev = redis.call('HINCRBY', KEYS[1], 'suspension_rev', 1)
-- Taken: no intent an older build recorded (audit_settle.lua) is taken
-- for this change.
redis.call('HSET', KEYS[1], 'audit_suspension_rev', rev)
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'audit_pending:rev' .. rev, ARGV[3])
end
return rev
