-- Counts a sign-in attempt against the (user, address) pair before any
-- password is checked, so that concurrent guesses cannot all slip under the
-- limit, and reads the user. The counter expires a window after its first
-- attempt. A user that does not exist (any more) gets nothing written.
--
-- KEYS[1] the user's hash
-- KEYS[2] the user's sign-in attempt counter for the address
-- ARGV[1] attempt window, ms
-- ARGV[2..] fields of the user hash to return
-- Returns {} when the user does not exist, else {attempts in the window
-- including this one, ms left in the window, then the values of the fields
-- asked for}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
local attempts = redis.call('INCR', KEYS[2])
local ttl = redis.call('PTTL', KEYS[2])
if attempts == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  ttl = tonumber(ARGV[1])
end
local reply = {attempts, ttl}
local user = redis.call('HMGET', KEYS[1], unpack(ARGV, 2))
for i = 1, #user do
  reply[#reply + 1] = user[i]
end
return reply
