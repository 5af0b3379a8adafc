-- Approves an account that waits for approval: it may sign in from now on.
--
-- KEYS[1] user:<uid>
-- ARGV[1] the approval's audit record: kept in the user's hash
--         (audit_pending:approve) until it is in the audit log
-- Returns false when there is no such user, else {1 when it was pending
-- and is approved now, 0 when it was not pending, the login, the name}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local was = redis.call('HDEL', KEYS[1], 'pending')
if was == 1 then
  redis.call('HSET', KEYS[1], 'audit_pending:approve', ARGV[1])
end
local f = redis.call('HMGET', KEYS[1], 'login', 'name')
return {was, f[1], f[2]}
