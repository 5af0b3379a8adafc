-- The presence of many users, in one step, by Redis's clock: for each, the
-- time of their last activity (the later of last.seen and the shared online
-- copy, which is ahead while the user is online; see heartbeats.lua), and
-- whether they are online: seen within W and still connected. A script
-- rather than a pipeline so that the clock is that of the Redis holding
-- these keys, which on a Redis Cluster a keyless TIME need not reach.
--
-- KEYS[1] connected (uid -> when the user was told online, unix ms)
-- KEYS[2] last.seen (uid -> last activity, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- ARGV[1] online window W, ms
-- ARGV[2..] the users' ids
-- Returns {last seen ms (0: never), 1 when online else 0, ...}, per user in
-- the order given.
local cutoff = now_ms() - tonumber(ARGV[1])
local uids = {unpack(ARGV, 2)}
local told = redis.call('ZMSCORE', KEYS[1], unpack(uids))
local seen = redis.call('ZMSCORE', KEYS[2], unpack(uids))
local latest = redis.call('ZMSCORE', KEYS[3], unpack(uids))
local out = {}
for i = 1, #uids do
  local at = math.max(tonumber(seen[i]) or 0, tonumber(latest[i]) or 0)
  out[#out + 1] = at
  if at > 0 and at >= cutoff and told[i] then
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
