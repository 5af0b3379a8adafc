-- Counts a sign-in attempt before any password is checked, so that
-- concurrent guesses cannot all slip under a limit, and reads the user.
-- Two counts: the attempts on the user from one address, and the attempts on
-- the user from every address it has not signed in from lately (known
-- addresses are spared that ceiling, so that guesses spread over many
-- addresses cannot lock the owner out at home). Each counter expires a
-- window after its first attempt. A user that does not exist (any more), or
-- is being deleted, gets nothing written.
--
-- KEYS[1] the user's hash
-- KEYS[2] the user's sign-in attempt counter for the address
-- KEYS[3] the user's counter of sign-in attempts from unknown addresses
-- KEYS[4] the user's known addresses: address hash -> last sign-in, ms
-- KEYS[5] the user's known devices: device mark hash -> last sign-in, ms
-- ARGV[1] window of the address's count, ms
-- ARGV[2] most attempts from the address in its window
-- ARGV[3] window of the unknown addresses' count, ms
-- ARGV[4] most attempts from unknown addresses in their window
-- ARGV[5] the address's hash, as KEYS[4] holds it
-- ARGV[6] how long a sign-in keeps its address known, ms
-- ARGV[7] '1' when the check is made on one of the user's sessions (a
--         password change, an account deletion): not counted against
--         the unknown addresses' ceiling, which strangers can fill
-- ARGV[8] the hashes of the device's marks, as KEYS[5] holds them,
--         separated by spaces ('' for none): a device one of whose marks
--         the user knows is spared the ceiling as a known address is
-- ARGV[9..] fields of the user hash to return
-- Returns {} when the user does not exist, else {verdict, ms left in the
-- window that refused it (0 when none did), 1 when the attempt was counted
-- against the unknown addresses' ceiling else 0, then the values of the
-- fields asked for}. Verdict: 0 go on and check the password, 1 too many
-- attempts from this address, 2 too many from unknown addresses.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then
  return {}
end

-- count increments counter and starts its window with its first attempt;
-- returns the attempts and the ms left in the window.
local function count(counter, window)
  local attempts = redis.call('INCR', counter)
  local ttl = redis.call('PTTL', counter)
  if attempts == 1 or ttl < 0 then
    redis.call('PEXPIRE', counter, window)
    ttl = tonumber(window)
  end
  return attempts, ttl
end

local attempts, ttl = count(KEYS[2], ARGV[1])
if attempts > tonumber(ARGV[2]) then
  return {1, ttl, 0}
end

local counted = 0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- known says whether the address or device of hash, in set, signed in
-- lately.
local function known(set, hash)
  if hash == '' then
    return false
  end
  local last = redis.call('ZSCORE', set, hash)
  return last and tonumber(last) > now - tonumber(ARGV[6])
end
local device = false
for hash in string.gmatch(ARGV[8], '%S+') do
  device = device or known(KEYS[5], hash)
end
if ARGV[7] ~= '1' and not known(KEYS[4], ARGV[5]) and not device then
  local failures, left = count(KEYS[3], ARGV[3])
  if failures > tonumber(ARGV[4]) then
    return {2, left, 0}
  end
  counted = 1
end

local reply = {0, 0, counted}
local user = redis.call('HMGET', KEYS[1], unpack(ARGV, 9))
for i = 1, #user do
  reply[#reply + 1] = user[i]
end
return reply
