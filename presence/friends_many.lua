-- Online friends of many users, in one step: for each, what
-- online_friends.lua answers for one. The shared online copy is made when
-- missing (see copy.lua), then, for the users with few friends, their
-- friends' times in it are read (ZMSCORE, all such friends of the call
-- together), kept when at or after now - W and sorted most recent first: a
-- read alone, cheaper than an intersection written to a scratch key and
-- deleted. A user with many friends is intersected as
-- online_friends.lua does (friends_online, see friends.lua).
--
-- A call answers the users in the order given while their friend sets
-- together hold at most ARGV[5] friends (the first user always, however
-- many friends they have), so that the users of a reconnect storm with
-- large sets do not hold Redis for long in one call: the caller asks again
-- for those it did not answer.
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
-- ARGV[5] most friends, summed over the users, one call reads
-- Returns the number of users answered, the first ones given, then per user
-- in that order the count of their friends online then that many pairs
-- {uid, last seen ms}, most recent first.
local now = now_ms()
local window = tonumber(ARGV[1])
local most = tonumber(ARGV[3])
local small = tonumber(ARGV[4])
local budget = tonumber(ARGV[5])
local cutoff = now - window

-- The users answered are KEYS[5..last].
local last, sum = 5, redis.call('ZCARD', KEYS[5])
for i = 6, #KEYS do
  sum = sum + redis.call('ZCARD', KEYS[i])
  if sum > budget then
    break
  end
  last = i
end

refresh_copy(KEYS[1], KEYS[2], KEYS[3], now, window, tonumber(ARGV[2]))

-- The friends of every user with a small set, each id once, have their
-- times read together: one ZMSCORE per zmscoreChunk ids, not one per user.
local zmscoreChunk = 4000
local sets, ids, at = {}, {}, {}
for i = 5, last do
  -- One more than small tells a set too large to read this way.
  local set = redis.call('ZRANGE', KEYS[i], 0, small)
  sets[i] = set
  if #set <= small then
    for _, id in ipairs(set) do
      if at[id] == nil then
        ids[#ids + 1] = id
        at[id] = false
      end
    end
  end
end
for from = 1, #ids, zmscoreChunk do
  local to = math.min(from + zmscoreChunk - 1, #ids)
  local seen = redis.call('ZMSCORE', KEYS[3], unpack(ids, from, to))
  for j = from, to do
    local t = tonumber(seen[j - from + 1])
    if t and t >= cutoff then
      at[ids[j]] = t
    end
  end
end

local out = {last - 4}
for i = 5, last do
  local set = sets[i]
  if #set <= small then
    local online = {}
    for _, id in ipairs(set) do
      local t = at[id]
      if t then
        online[#online + 1] = {id, t}
      end
    end
    -- As ZREVRANGEBYSCORE orders them: by time, then by member.
    table.sort(online, function(a, b)
      if a[2] ~= b[2] then
        return a[2] > b[2]
      end
      return a[1] > b[1]
    end)
    local n = math.min(#online, most)
    out[#out + 1] = n
    for j = 1, n do
      out[#out + 1] = online[j][1]
      out[#out + 1] = online[j][2]
    end
  else
    local found = friends_online(KEYS[3], KEYS[i], KEYS[4], cutoff, most)
    out[#out + 1] = #found / 2
    for j = 1, #found do
      out[#out + 1] = found[j]
    end
  end
end
return out
