-- Looks up a login for a sign-in and, when it exists, counts the attempt
-- against the (user, address) pair before any password is checked, so that
-- concurrent guesses cannot all slip under the limit. The counter expires a
-- window after its first attempt. Unknown logins write nothing.
--
-- KEYS[1] login index hash (lower-case login -> uid)
-- ARGV[1] lower-case login
-- ARGV[2] prefix of user hashes
-- ARGV[3] prefix of sign-in attempt counters (the key is prefix..uid..":"..address)
-- ARGV[4] client address ("" when unknown)
-- ARGV[5] attempt window, ms
-- ARGV[6..] fields of the user hash to return
-- Returns {} when the login is unknown, else {attempts in the window
-- including this one, ms left in the window, then the values of the fields
-- asked for}.
local uid = redis.call('HGET', KEYS[1], ARGV[1])
if not uid then
  return {}
end
local counter = ARGV[3] .. uid .. ':' .. ARGV[4]
local attempts = redis.call('INCR', counter)
local ttl = redis.call('PTTL', counter)
if attempts == 1 or ttl < 0 then
  redis.call('PEXPIRE', counter, ARGV[5])
  ttl = tonumber(ARGV[5])
end
local reply = {attempts, ttl}
local user = redis.call('HMGET', ARGV[2] .. uid, unpack(ARGV, 6))
for i = 1, #user do
  reply[#reply + 1] = user[i]
end
return reply
