-- Approves an account that waits for approval: it may sign in from now on.
--
-- KEYS[1] user:<uid>
-- Returns false when there is no such user, else {1 when it was pending
-- and is approved now, 0 when it was not pending, the login, the name}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local was = redis.call('HDEL', KEYS[1], 'pending')
local f = redis.call('HMGET', KEYS[1], 'login', 'name')
return {was, f[1], f[2]}
