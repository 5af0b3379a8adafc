-- Notes a right password: the address's attempts start again, an attempt
-- that signin.lua counted against the unknown addresses' ceiling is taken
-- back (it was no failure), and the address becomes known, and the device
-- under its next mark, the marks it showed that the user knew forgotten,
-- keeping only the newest known ones of each kind and none older than
-- their lifetime.
--
-- KEYS[1] the user's sign-in attempt counter for the address
-- KEYS[2] the user's counter of sign-in attempts from unknown addresses
-- KEYS[3] the user's known addresses: address hash -> last sign-in, ms
-- KEYS[4] the user's hash
-- KEYS[5] the user's known devices: device mark hash -> last sign-in, ms
-- ARGV[1] the address's hash
-- ARGV[2] 1 when signin.lua counted the attempt in KEYS[2], else 0
-- ARGV[3] most known addresses kept
-- ARGV[4] how long a sign-in keeps its address known, ms
-- ARGV[5] the hashes of the device marks shown, separated by spaces ('' for
--         none): those the user knows are forgotten
-- ARGV[6] the hash of the device's next mark ('' for none): known
-- ARGV[7] most known devices kept
-- Returns {a character for each mark shown, in order: '1' when the user
-- knew it (and forgets it now), else '0'}, or {}, writing nothing, for a
-- user deleted (or being deleted) since the password was checked: the
-- deletion takes these keys out, and would find them no more.
if redis.call('EXISTS', KEYS[4]) == 0 or redis.call('HEXISTS', KEYS[4], 'deleted') == 1 then
  return {}
end
redis.call('DEL', KEYS[1])
-- A counter whose window ended meanwhile is not made again, without an
-- expiry, at -1.
if ARGV[2] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DECR', KEYS[2])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[3], now, ARGV[1])
local forgot = ''
for hash in string.gmatch(ARGV[5], '%S+') do
  forgot = forgot .. redis.call('ZREM', KEYS[5], hash)
end
if ARGV[6] ~= '' then
  redis.call('ZADD', KEYS[5], now, ARGV[6])
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - tonumber(ARGV[4]))
  redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -tonumber(ARGV[7]) - 1)
  redis.call('PEXPIRE', KEYS[5], ARGV[4])
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[4]))
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[3]) - 1)
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return {forgot}
