-- Online friends of one user, in one step, as the classic layout does it:
-- take the shared online copy (made here when missing, see copy.lua), and
-- read the user's friends in it (friends_online, see friends.lua).
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] connected (uid -> when the user was told online, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- KEYS[4] the user's friend set (friend uid -> friend since, unix ms)
-- KEYS[5] scratch key, deleted before returning
-- ARGV[1] online window W, ms
-- ARGV[2] copy TTL, ms (<= 0: rebuild on every call)
-- ARGV[3] most friends to return
-- Returns {uid, last seen ms, uid, last seen ms, ...}, most recent first.
local now = now_ms()
local window = tonumber(ARGV[1])

refresh_copy(KEYS[1], KEYS[2], KEYS[3], now, window, tonumber(ARGV[2]))
return friends_online(KEYS[3], KEYS[4], KEYS[5], now - window, tonumber(ARGV[3]))
