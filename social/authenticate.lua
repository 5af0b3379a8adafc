-- Finds the user of a session and renews it in one step.
--
-- KEYS[1] the session
-- ARGV[1] session lifetime, ms
-- Returns the uid, or 0 when the session does not exist.
local uid = redis.call('GET', KEYS[1])
if not uid then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return tonumber(uid)
