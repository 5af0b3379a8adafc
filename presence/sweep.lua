-- Takes out, in one step, connections of an instance whose lease ran out (it
-- went away, or stalled for W, without disconnecting them), and takes out of
-- connected the users left with no connection. Being atomic, each such user
-- is taken by exactly one sweeping instance, which then tells the friends.
-- An instance with no connection left leaves the instances set. An instance
-- that comes back finds its lease gone and registers its connections again
-- (register.lua).
--
-- Every key it touches comes in KEYS (Redis Cluster), so the instance and
-- its connections, and so their users' registries, are learnt beforehand:
-- each call answers the next instance to sweep and, when it swept that one
-- already, the connections of it to take out next; the caller reads them
-- itself otherwise (SRANDMEMBER) and calls again with them and their users'
-- registries. A call takes out only those of the given connections still in
-- the instance's set, and only while its lease has run out, so a connection
-- disconnected, or an instance come back, in between is left alone, and two
-- sweepers never take one connection twice.
--
-- KEYS[1] instances (instance id -> lease expiry, unix ms)
-- KEYS[2] connected (uid -> when the user was told online, unix ms)
-- KEYS[3] last.seen (uid -> last activity, unix ms)
-- KEYS[4] the shared online copy (uid -> last activity)
-- KEYS[5] the connections of instance ARGV[2] (set of "uid:connID"), with ARGV[2] only
-- KEYS[5+i] the registry of the user of connection ARGV[2+i] (hash connID -> instance id)
-- ARGV[1] most connections to answer for the next call
-- ARGV[2] an instance an earlier call answered (none: find one)
-- ARGV[3..] connections of that instance, "uid:connID", to take out
-- Returns {the next instance to sweep or '', {its connections to take out
-- next, or none: read them}, uid, last seen ms (or ''), uid, last seen, ...}
-- for the users taken out of connected.
local now = now_ms()
local out = {'', {}}

local instance = ARGV[2]
local lease = instance and redis.call('ZSCORE', KEYS[1], instance)
if lease and tonumber(lease) < now then
  for i = 3, #ARGV do
    local member, registry = ARGV[i], KEYS[3 + i]
    local at = string.find(member, ':', 1, true)
    if redis.call('SREM', KEYS[5], member) == 1 and at then
      local uid, conn = string.sub(member, 1, at - 1), string.sub(member, at + 1)
      -- The connection may have been registered again, by an instance alive.
      if redis.call('HGET', registry, conn) == instance then
        redis.call('HDEL', registry, conn)
      end
      if redis.call('EXISTS', registry) == 0 then
        -- The copy holds the latest activity (see heartbeats.lua): keep it.
        local latest = redis.call('ZSCORE', KEYS[4], uid)
        if latest then
          redis.call('ZADD', KEYS[3], 'GT', latest, uid)
          redis.call('ZREM', KEYS[4], uid)
        end
        if redis.call('ZREM', KEYS[2], uid) == 1 then
          out[#out + 1] = uid
          out[#out + 1] = redis.call('ZSCORE', KEYS[3], uid) or ''
        end
      end
    end
  end
  if redis.call('SCARD', KEYS[5]) > 0 then
    out[1], out[2] = instance, redis.call('SRANDMEMBER', KEYS[5], tonumber(ARGV[1]))
    return out
  end
  redis.call('ZREM', KEYS[1], instance)
end

local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 1)
if #gone > 0 then
  out[1] = gone[1]
end
return out
