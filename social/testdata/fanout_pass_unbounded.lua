-- The refill pass as it was before passes were bounded (copy_latest.lua and
-- fanout_pass.lua of commit 1f3fd6b, unchanged): BenchmarkRefillPass
-- compares the bounded pass with it.

-- A function shared by the scripts that fill a home timeline from a
-- profile (follow's backfill, refill jobs); its text goes before theirs.

-- Copies the newest `size` statuses of profile into home, in chunks that
-- stay under Lua's limit on unpacked arguments, then trims home to `size`.
local function copy_latest(home, profile, size)
  local latest = redis.call('ZREVRANGE', profile, 0, size - 1, 'WITHSCORES')
  for i = 1, #latest, 1000 do
    local args = {}
    for j = i, math.min(i + 999, #latest), 2 do
      args[#args + 1] = latest[j + 1]
      args[#args + 1] = latest[j]
    end
    redis.call('ZADD', home, unpack(args))
  end
  redis.call('ZREMRANGEBYRANK', home, 0, -size - 1)
end
-- Runs one pass of a fan-out job: up to ARGV[1] members of the job's list,
-- from just after the job's cursor, and moves the cursor past them, all in
-- one step. A worker that dies between passes leaves the job exactly where
-- the last pass put it, so the next worker neither skips nor repeats anyone.
--
-- Kinds of job (the job hash's "kind"):
--   post    add status "sid" to the home timeline of each follower of "uid"
--           whose follow is not newer than "until", and publish "payload"
--           to each; stops early once the status is deleted.
--   delete  remove status "sid" from the home timeline of each follower of
--           "uid", publishing "payload" to those who had it.
--   refill  copy the latest statuses of each followee of "uid" into uid's
--           home timeline (after an unfollow left it short).
--
-- The keys of followers' timelines are only known while running, so they are
-- built here from prefixes. Runs after copy_latest.lua.
--
-- KEYS[1] the job hash
-- KEYS[2] fan-out job stream
-- ARGV[1] pass size of post and delete jobs (followers per pass)
-- ARGV[2] home timeline size
-- ARGV[3] consumer group of the job stream
-- ARGV[4] prefix of home timelines
-- ARGV[5] prefix of followers sets
-- ARGV[6] prefix of following sets
-- ARGV[7] prefix of profile timelines
-- ARGV[8] prefix of status hashes
-- ARGV[9] prefix of user event channels
-- ARGV[10] pass size of refill jobs (followees per pass)
-- Returns {finished (0 or 1), members reached in this pass}.
local job = redis.call('HGETALL', KEYS[1])
if #job == 0 then
  return {1, 0}
end
local j = {}
for i = 1, #job, 2 do
  j[job[i]] = job[i + 1]
end

local size = tonumber(ARGV[1])
local homeSize = tonumber(ARGV[2])

local function finish(n)
  redis.call('XACK', KEYS[2], ARGV[3], j.entry)
  redis.call('XDEL', KEYS[2], j.entry)
  redis.call('DEL', KEYS[1])
  return {1, n}
end

local page
if j.kind == 'post' then
  if redis.call('EXISTS', ARGV[8] .. j.sid) == 0 then
    return finish(0)
  end
  page = redis.call('ZRANGEBYSCORE', ARGV[5] .. j.uid, '(' .. j.cursor, j['until'],
    'WITHSCORES', 'LIMIT', 0, size)
  for i = 1, #page, 2 do
    local home = ARGV[4] .. page[i]
    redis.call('ZADD', home, j.sid, j.sid)
    redis.call('ZREMRANGEBYRANK', home, 0, -homeSize - 1)
    redis.call('PUBLISH', ARGV[9] .. page[i], j.payload)
  end
elseif j.kind == 'delete' then
  page = redis.call('ZRANGEBYSCORE', ARGV[5] .. j.uid, '(' .. j.cursor, '+inf',
    'WITHSCORES', 'LIMIT', 0, size)
  for i = 1, #page, 2 do
    if redis.call('ZREM', ARGV[4] .. page[i], j.sid) == 1 then
      redis.call('PUBLISH', ARGV[9] .. page[i], j.payload)
    end
  end
elseif j.kind == 'refill' then
  size = tonumber(ARGV[10])
  local home = ARGV[4] .. j.uid
  page = redis.call('ZRANGEBYSCORE', ARGV[6] .. j.uid, '(' .. j.cursor, '+inf',
    'WITHSCORES', 'LIMIT', 0, size)
  for i = 1, #page, 2 do
    copy_latest(home, ARGV[7] .. page[i], homeSize)
  end
else
  return finish(0)
end

local n = #page / 2
if n < size then
  return finish(n)
end
redis.call('HSET', KEYS[1], 'cursor', page[#page])
return {0, n}
