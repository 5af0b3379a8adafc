-- Online friends of many users, in one step: for each, what
-- online_friends.lua answers for one. The shared online copy is made when
-- missing (see copy.lua), then, for a user with few friends, their times in
-- it are read (ZMSCORE), kept when at or after now - W and sorted most
-- recent first: a read alone, cheaper than an intersection written to a
-- scratch key and deleted. A user with many friends is intersected as
-- online_friends.lua does (friends_online, see friends.lua).
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] connected (uid -> when the user was told online, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- KEYS[4] scratch key, deleted before returning
-- KEYS[4+i] the friend set of the i-th user (friend uid -> friend since)
-- ARGV[1] online window W, ms
-- ARGV[2] copy TTL, ms (<= 0: rebuild on every call)
-- ARGV[3] most friends to return per user
-- ARGV[4] most friends a set may have to be read rather than intersected
-- Returns, per user in the order given, the count of their friends online
-- then that many pairs {uid, last seen ms}, most recent first.
local now = now_ms()
local window = tonumber(ARGV[1])
local most = tonumber(ARGV[3])
local small = tonumber(ARGV[4])
local cutoff = now - window

refresh_copy(KEYS[1], KEYS[2], KEYS[3], now, window, tonumber(ARGV[2]))
local out = {}
for i = 5, #KEYS do
  local friends = KEYS[i]
  -- One more than small tells a set too large to read this way.
  local ids = redis.call('ZRANGE', friends, 0, small)
  if #ids <= small then
    local online = {}
    if #ids > 0 then
      local seen = redis.call('ZMSCORE', KEYS[3], unpack(ids))
      for j = 1, #ids do
        local at = tonumber(seen[j])
        if at and at >= cutoff then
          online[#online + 1] = {ids[j], at}
        end
      end
      -- As ZREVRANGEBYSCORE orders them: by time, then by member.
      table.sort(online, function(a, b)
        if a[2] ~= b[2] then
          return a[2] > b[2]
        end
        return a[1] > b[1]
      end)
    end
    local n = math.min(#online, most)
    out[#out + 1] = n
    for j = 1, n do
      out[#out + 1] = online[j][1]
      out[#out + 1] = online[j][2]
    end
  else
    local found = friends_online(KEYS[3], friends, KEYS[4], cutoff, most)
    out[#out + 1] = #found / 2
    for j = 1, #found do
      out[#out + 1] = found[j]
    end
  end
end
return out
