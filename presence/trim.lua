-- Trims the shared online copy (see copy.lua, prepended to this script): the
-- users seen before now - W leave it, the most stale first and at most
-- ARGV[3] per call, their time kept in last.seen. The instances' sweepers
-- run it, so no reader pays for it; the marker lets one trim in ARGV[2] ms
-- through, whichever instance asks. A trim is the calls its first one let
-- through, until one takes out fewer than ARGV[3] users: each bounds how
-- long Redis is held, however many users left it stale at once.
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] the shared online copy (uid -> last activity)
-- KEYS[3] the copy's trim marker
-- ARGV[1] online window W, ms
-- ARGV[2] least time between two trims, ms
-- ARGV[3] most users to take out in this call
-- ARGV[4] 1 when this call goes on with a trim an earlier call let through
-- Returns the number of users trimmed, or -1 when it was not due.
if ARGV[4] ~= '1' and not redis.call('SET', KEYS[3], 1, 'PX', ARGV[2], 'NX') then
  return -1
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0 -- the next reader makes it
end
local now = now_ms()
return trim_copy(KEYS[1], KEYS[2], now, tonumber(ARGV[1]), tonumber(ARGV[3]))
