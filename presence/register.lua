-- Registers connections of one instance and records their activity, in one
-- step: each connection goes into its user's registry (connID -> instance)
-- and the instance's own set; each user goes into connected (told online),
-- the current minute's active set and HyperLogLog, last.seen and the shared
-- online copy (see copy.lua). The instance's lease moves to now + W. The time
-- is Redis's own, so instances with skewed clocks agree. Only the registries
-- are written once per connection: each shared key is written by one
-- command for the whole call (the instances' leases are read once per
-- instance), so a storm's batch costs Redis a few commands per connection,
-- not a few script-side calls each.
--
-- A connection lives as long as its instance's lease: instances renew theirs
-- every tick (heartbeats.lua), so no connection needs an expiry of its own,
-- and the sweep (sweep.lua) takes out the connections of an instance whose
-- lease ran out.
--
-- The cap on one user's connections is checked here, before anything of the
-- connection is written, so connects racing on several instances cannot
-- overshoot it: a connection not registered yet is refused when the user
-- already holds ARGV[5] live ones (on instances whose lease runs), and a
-- refused connection writes nothing of its own. Only Connect passes a cap;
-- connections registered again after a lost lease pass none: they were let
-- in when they opened, and refusing them now would close live streams.
--
-- Every key it touches comes in KEYS (Redis Cluster): the minute's keys are
-- those of the minute the caller expects Redis's clock to be in, and it runs
-- the script again on the rare call that crosses into the next minute.
--
-- KEYS[1] last.seen (uid -> last activity, unix ms)
-- KEYS[2] connected (uid -> when the user was told online, unix ms)
-- KEYS[3] the shared online copy (uid -> last activity)
-- KEYS[4] instances (instance id -> lease expiry, unix ms)
-- KEYS[5] this instance's connections (set of "uid:connID")
-- KEYS[6] the active set of minute ARGV[3]
-- KEYS[7] the active HyperLogLog of minute ARGV[3]
-- KEYS[7+i] the registry of the i-th connection's user (hash connID -> instance id)
-- ARGV[1] this instance's id
-- ARGV[2] online window W, ms: the lease's length
-- ARGV[3] the minute (unix s / 60) the caller takes for Redis's now
-- ARGV[4] TTL of a per-minute active set and HyperLogLog, seconds
-- ARGV[5] most live connections a user may hold when one is new; <= 0: no cap
-- ARGV[4+2i], ARGV[5+2i] the i-th connection's uid and id
-- Returns {now ms, 1 when the lease had run out (or never existed), then per
-- connection: 1 when its user was not in connected (friends must be told),
-- 0 when registered, -1 when the cap refused it}; or {now ms, -1} when
-- ARGV[3] is not the minute now: then nothing is written, and the caller
-- runs it again with that minute's keys.
local now = now_ms()
local instance = ARGV[1]
if math.floor(now / 60000) ~= tonumber(ARGV[3]) then
  return {now, -1}
end

local lease = redis.call('ZSCORE', KEYS[4], instance)
local lost = 0
if not lease or tonumber(lease) < now then
  lost = 1
end
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), instance)

-- live counts the user's connections on instances whose lease runs, and
-- whether conn is one of them. Leases are looked up once per instance.
local leases = {}
local function live(registry, conn)
  local all = redis.call('HGETALL', registry)
  local n, held = 0, false
  for j = 1, #all, 2 do
    local id = all[j + 1]
    if leases[id] == nil then
      leases[id] = tonumber(redis.call('ZSCORE', KEYS[4], id) or 0)
    end
    if leases[id] >= now then
      n = n + 1
      if all[j] == conn then
        held = true
      end
    end
  end
  return n, held
end

local cap = tonumber(ARGV[5])
local out = {now, lost}
local at = string.format('%d', now) -- once, not once per member
local n = #KEYS - 7
-- Whether each user was told online already: one read for the batch, and
-- the batch's own users once one of their connections is registered.
local asked = {}
for i = 1, n do
  asked[i] = ARGV[4 + 2 * i]
end
local told = redis.call('ZMSCORE', KEYS[2], unpack(asked))
local telling = {}
local uids, members, nx = {}, {}, {}
for i = 1, n do
  local uid, conn, registry = ARGV[4 + 2 * i], ARGV[5 + 2 * i], KEYS[7 + i]
  local refused = false
  -- A registry shorter than the cap cannot hold cap live connections: the
  -- leases are looked up only for one that could.
  if cap > 0 and redis.call('HLEN', registry) >= cap then
    local held_n, held = live(registry, conn)
    refused = not held and held_n >= cap
  end
  if refused then
    out[#out + 1] = -1
  else
    redis.call('HSET', registry, conn, instance)
    members[#members + 1] = uid .. ':' .. conn
    uids[#uids + 1] = uid
    if told[i] or telling[uid] then
      out[#out + 1] = 0
    else
      telling[uid] = true
      nx[#nx + 1] = at
      nx[#nx + 1] = uid
      out[#out + 1] = 1
    end
  end
end
if #uids == 0 then
  return out
end

redis.call('SADD', KEYS[5], unpack(members))
if #nx > 0 then
  redis.call('ZADD', KEYS[2], 'NX', unpack(nx))
end
redis.call('SADD', KEYS[6], unpack(uids))
redis.call('EXPIRE', KEYS[6], ARGV[4])
redis.call('PFADD', KEYS[7], unpack(uids))
redis.call('EXPIRE', KEYS[7], ARGV[4])
local seen = {}
for i, uid in ipairs(uids) do
  seen[2 * i - 1], seen[2 * i] = at, uid
end
redis.call('ZADD', KEYS[1], unpack(seen))
-- A missing copy is made whole by its next reader; adding to it here would
-- make a partial one that looks whole.
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('ZADD', KEYS[3], unpack(seen))
end
return out
