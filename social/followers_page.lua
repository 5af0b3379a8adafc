-- A post's first page of followers on one Redis, with what decides whom
-- the post reaches (followerActivity), read in the post's first round trip
-- rather than in one of their own: the page, oldest follow first, and, a
-- follower each in the page's order, when they were last seen and when
-- they were told online.
--
-- KEYS[1] the author's followers (uid -> follow sequence)
-- KEYS[2] the users' last activity (uid -> unix ms)
-- KEYS[3] presence's connected users (uid -> unix ms); left out when
--         presence is not kept
-- ARGV[1] the most followers the page holds
-- Returns {the page (member, score, member, score, ...), last seen a
-- follower, connected a follower}, false for a follower missing there.
local page = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, ARGV[1])
local members = {}
for i = 1, #page, 2 do
  members[#members + 1] = page[i]
end
-- ZMSCORE in pieces: unpack takes a few thousand values at most.
local function scores(key)
  local out = {}
  for first = 1, #members, 1000 do
    local got = redis.call('ZMSCORE', key, unpack(members, first, math.min(first + 999, #members)))
    for j = 1, #got do
      out[#out + 1] = got[j]
    end
  end
  return out
end
if #members == 0 then
  return {page, {}, {}}
end
local online = {}
if #KEYS > 2 then
  online = scores(KEYS[3])
end
return {page, scores(KEYS[2]), online}
