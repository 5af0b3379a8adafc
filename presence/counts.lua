-- Site-wide counts in one step: users online now (the shared online copy,
-- made or trimmed here when due, see copy.lua, counted from now - W) and
-- users active in the last ten minutes (the union of the last ten per-minute
-- active sets, counted in the script, as seed 003 does with SUNION).
--
-- The per-minute keys depend on Redis's clock, so they are built here from
-- a prefix.
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] connected (uid -> expiry of the user's freshest connection, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- KEYS[4] the copy's freshness marker
-- ARGV[1] online window W, ms
-- ARGV[2] copy TTL, ms (<= 0: rebuild on every call)
-- ARGV[3] prefix of the per-minute active sets (the minute number is appended)
-- ARGV[4] number of minutes to count, the current one included
-- Returns {online, active in the last minutes}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])

refresh_copy(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now, window, tonumber(ARGV[2]))
local online = redis.call('ZCOUNT', KEYS[3], now - window, '+inf')

local minute = math.floor(tonumber(t[1]) / 60)
local sets = {}
for i = 0, tonumber(ARGV[4]) - 1 do
  sets[#sets + 1] = ARGV[3] .. (minute - i)
end
local active = #redis.call('SUNION', unpack(sets))
return {online, active}
