-- Shared by the scripts that read the copy (online_friends.lua,
-- friends_many.lua, counts.lua, trim.lua), which run with this text
-- prepended (one script each). It keeps the shared online copy, the
-- classic layout's "temp.last.seen": last.seen limited to users with a
-- registered connection (ZINTERSTORE with connected weighted 0 copies
-- last.seen, as the classic layout's ZUNIONSTORE does, and keeps last-seen
-- times as scores), less those seen
-- before now - W (ZREMRANGEBYSCORE). Users of an instance that went away
-- stop being active, so they age out of it like anyone else; the sweep then
-- takes them out of connected.
--
-- Copying is O(users connected) and blocks Redis for it (about 0.1 to 0.7 s
-- for 50,000 online on a small machine; see docs/BENCHMARKS.md), so
-- the copy is made only when it is missing. The register, heartbeats,
-- disconnect and sweep scripts add and remove users in it as they come and
-- go, and readers cut it at now - W, so it is never behind a new connection
-- or a clean sign-off. Readers never trim it: the instances' sweepers do
-- (trim.lua), at most once per copy TTL between them, at the cost of what
-- they remove, so no reader pays for it; a trim goes in calls of a bounded
-- number of users, so that the users of an instance gone away, all stale at
-- once, do not block Redis for one long call. A copy TTL <= 0 copies afresh on
-- every read, as the classic layout does (for comparison in benchmarks).

-- trim_copy takes out of copy the users seen before now - window, the most
-- stale first, at most most of them (all when most is nil), and returns how
-- many it took out. The copy holds the latest activity of who is online
-- (see heartbeats.lua): those leaving it keep theirs in last_seen.
local function trim_copy(last_seen, copy, now, window, most)
  local cutoff = '(' .. (now - window)
  local gone
  if most then
    gone = redis.call('ZRANGEBYSCORE', copy, '-inf', cutoff, 'WITHSCORES', 'LIMIT', 0, most)
  else
    gone = redis.call('ZRANGEBYSCORE', copy, '-inf', cutoff, 'WITHSCORES')
  end
  for i = 1, #gone, 2000 do
    local batch = {}
    for j = i, math.min(i + 1999, #gone), 2 do
      batch[#batch + 1] = gone[j + 1]
      batch[#batch + 1] = gone[j]
    end
    redis.call('ZADD', last_seen, 'GT', unpack(batch))
  end
  if not most then
    return redis.call('ZREMRANGEBYSCORE', copy, '-inf', cutoff)
  end
  local n = #gone / 2
  if n > 0 then
    -- What was read is copy's lowest ranks, in this same step.
    redis.call('ZREMRANGEBYRANK', copy, 0, n - 1)
  end
  return n
end

-- refresh_copy makes copy from last_seen and connected, and trims it, when
-- it is missing or when ttl <= 0 (every read, as the classic layout does).
local function refresh_copy(last_seen, connected, copy, now, window, ttl)
  if ttl > 0 and redis.call('EXISTS', copy) == 1 then
    return
  end
  redis.call('ZINTERSTORE', copy, 2, last_seen, connected, 'WEIGHTS', 1, 0)
  trim_copy(last_seen, copy, now, window)
end
