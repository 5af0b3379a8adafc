-- Removes connection ARGV[2] of user ARGV[1] in one step. When no live
-- connection is left (none on an instance whose lease runs), the user leaves
-- connected and the shared online copy at once, so friends stop seeing them
-- without waiting for a rebuild. Connections of instances whose lease ran out
-- leave the user's registry here too; the sweep finds them gone and tells
-- nobody twice. last.seen is left alone: it stays the time of the last
-- activity, which it takes from the copy if it is later there.
--
-- The instance's connection set it takes the connection out of comes in
-- KEYS (Redis Cluster): the caller names the instance it expects to hold
-- the connection (its own), and when another holds it, the script writes
-- nothing and answers which, for the caller to run it again with that one's.
--
-- KEYS[1] the user's registry (hash connID -> instance id)
-- KEYS[2] connected (uid -> when the user was told online, unix ms)
-- KEYS[3] last.seen (uid -> last activity, unix ms)
-- KEYS[4] the shared online copy (uid -> last activity)
-- KEYS[5] instances (instance id -> lease expiry, unix ms)
-- KEYS[6] the connections of instance ARGV[3] (set of "uid:connID")
-- ARGV[1] uid
-- ARGV[2] connection id
-- ARGV[3] the instance expected to hold the connection
-- Returns {1 when the user left connected here (friends must be told), last seen
-- ms or nil; nil too while the user has a live connection, 1 when the user
-- has no live connection left (also when they had left connected before)},
-- or {-1, the instance holding the connection} when it is not ARGV[3].
local now = now_ms()

local instance = redis.call('HGET', KEYS[1], ARGV[2])
if instance and instance ~= ARGV[3] then
  return {-1, instance}
end
if instance then
  redis.call('HDEL', KEYS[1], ARGV[2])
  redis.call('SREM', KEYS[6], ARGV[1] .. ':' .. ARGV[2])
end

local all = redis.call('HGETALL', KEYS[1])
local live = false
for j = 1, #all, 2 do
  local lease = redis.call('ZSCORE', KEYS[5], all[j + 1])
  if lease and tonumber(lease) >= now then
    live = true
  else
    redis.call('HDEL', KEYS[1], all[j])
  end
end
if live then
  return {0, false, 0}
end
-- The copy holds the latest activity (see heartbeats.lua): keep it.
local latest = redis.call('ZSCORE', KEYS[4], ARGV[1])
if latest then
  redis.call('ZADD', KEYS[3], 'GT', latest, ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
end
local seen = redis.call('ZSCORE', KEYS[3], ARGV[1])
-- 0 when a sweep took the user out already (and told the friends).
local last = redis.call('ZREM', KEYS[2], ARGV[1])
return {last, seen, 1}
