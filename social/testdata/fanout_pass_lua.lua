-- Runs one pass of a fan-out job: up to ARGV[1] members of the job's list,
-- from just after the job's cursor, and moves the cursor past them, all in
-- one step. A worker that dies between passes leaves the job exactly where
-- the last pass put it, so the next worker neither skips nor repeats anyone.
--
-- Kinds of job (the job hash's "kind"):
--   (post jobs are run from Go, by postPass)
--   promote add "uid" to the pulled authors of each follower whose follow
--           is not newer than "until", telling their instances; then to
--           the pulled authors, from the next status id on.
--   delete  remove status "sid" from the home timeline of each follower of
--           "uid", publishing "payload" to those who had it.
--   refill  copy into uid's home timeline (after an unfollow left it short)
--           the statuses of each followee of "uid" older than "floor" (the
--           lowest id home held when the job was queued, or +inf when it was
--           empty: everything newer is there already), newest first, and
--           once home is full only those newer than its lowest. A pass looks
--           at up to ARGV[10] followees and copies up to ARGV[11] statuses;
--           a followee cut short is resumed below "below", the lowest id
--           copied from it ("part" names it), and "cursor" is the follow
--           score of the last followee done. Pulled followees are
--           skipped: reads merge their statuses.
--   list_post    add status "sid" to the timeline of each list that holds
--                "uid" since no later than "until" (a list membership
--                score); stops early once the status is deleted.
--   list_delete  remove status "sid" from the timeline of each list that
--                holds "uid".
--
-- The keys of followers' timelines are only known while running, so they are
-- built here from prefixes. Runs after shared.lua.
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
-- ARGV[10] most followees a refill pass looks at
-- ARGV[11] most statuses a refill pass copies
-- ARGV[12] prefix of pulled-authors sets
-- ARGV[13] pulled authors
-- ARGV[14] status id counter
-- ARGV[15] prefix of the sets of lists that hold a user (list:in:)
-- ARGV[16] prefix of list timelines
-- Returns {finished (0 or 1), members reached in this pass (followers,
-- followees looked at, or lists), statuses copied in this pass (refill
-- jobs)}.
local job = redis.call('HGETALL', KEYS[1])
if #job == 0 then
  return {1, 0, 0}
end
local j = {}
for i = 1, #job, 2 do
  j[job[i]] = job[i + 1]
end

local size = tonumber(ARGV[1])
local homeSize = tonumber(ARGV[2])

local function finish(n, copied)
  redis.call('XACK', KEYS[2], ARGV[3], j.entry)
  redis.call('XDEL', KEYS[2], j.entry)
  redis.call('DEL', KEYS[1])
  return {1, n, copied or 0}
end

local page
if j.kind == 'delete' then
  page = redis.call('ZRANGEBYSCORE', ARGV[5] .. j.uid, '(' .. j.cursor, '+inf',
    'WITHSCORES', 'LIMIT', 0, size)
  for i = 1, #page, 2 do
    if redis.call('ZREM', ARGV[4] .. page[i], j.sid) == 1 then
      redis.call('PUBLISH', ARGV[9] .. page[i], j.payload)
    end
  end
elseif j.kind == 'promote' then
  page = redis.call('ZRANGEBYSCORE', ARGV[5] .. j.uid, '(' .. j.cursor, j['until'],
    'WITHSCORES', 'LIMIT', 0, size)
  local added = '{"type":"pull_added","author":' .. j.uid .. '}'
  for i = 1, #page, 2 do
    redis.call('ZADD', ARGV[12] .. page[i], page[i + 1], j.uid)
    redis.call('PUBLISH', ARGV[9] .. page[i], added)
  end
  if #page / 2 < size then
    local next = tonumber(redis.call('GET', ARGV[14]) or '0') + 1
    redis.call('ZADD', ARGV[13], next, j.uid)
  end
elseif j.kind == 'refill' then
  local step = tonumber(ARGV[10])
  local budget = tonumber(ARGV[11])
  local home = ARGV[4] .. j.uid
  local floor = '+inf'
  if j.floor and j.floor ~= '+inf' then
    floor = '(' .. j.floor
  end
  -- One followee more than a pass looks at tells whether any remain.
  local followees = redis.call('ZRANGEBYSCORE', ARGV[6] .. j.uid, '(' .. j.cursor, '+inf',
    'WITHSCORES', 'LIMIT', 0, step + 1)
  local cursor, looked, copied = j.cursor, 0, 0
  for i = 1, math.min(#followees, 2 * step), 2 do
    local followee = followees[i]
    if copied >= budget then
      redis.call('HSET', KEYS[1], 'cursor', cursor)
      redis.call('HDEL', KEYS[1], 'part', 'below')
      return {0, looked, copied}
    end
    local below = floor
    if i == 1 and j.part == followee then
      below = '(' .. j.below
    end
    looked = looked + 1
    if not redis.call('ZSCORE', ARGV[12] .. j.uid, followee) then
      local n, last, done = copy_below(home, ARGV[7] .. followee, below, homeSize, budget - copied)
      copied = copied + n
      if not done then
        redis.call('HSET', KEYS[1], 'cursor', cursor, 'part', followee, 'below', last)
        return {0, looked, copied}
      end
    end
    cursor = followees[i + 1]
  end
  if #followees <= 2 * step then
    return finish(looked, copied)
  end
  redis.call('HSET', KEYS[1], 'cursor', cursor)
  redis.call('HDEL', KEYS[1], 'part', 'below')
  return {0, looked, copied}
elseif j.kind == 'list_post' then
  if redis.call('EXISTS', ARGV[8] .. j.sid) == 0 then
    return finish(0)
  end
  page = redis.call('ZRANGEBYSCORE', ARGV[15] .. j.uid, '(' .. j.cursor, j['until'],
    'WITHSCORES', 'LIMIT', 0, size)
  for i = 1, #page, 2 do
    local list = ARGV[16] .. page[i]
    redis.call('ZADD', list, j.sid, j.sid)
    redis.call('ZREMRANGEBYRANK', list, 0, -homeSize - 1)
  end
elseif j.kind == 'list_delete' then
  page = redis.call('ZRANGEBYSCORE', ARGV[15] .. j.uid, '(' .. j.cursor, '+inf',
    'WITHSCORES', 'LIMIT', 0, size)
  for i = 1, #page, 2 do
    redis.call('ZREM', ARGV[16] .. page[i], j.sid)
  end
else
  return finish(0)
end

local n = #page / 2
if n < size then
  return finish(n)
end
redis.call('HSET', KEYS[1], 'cursor', page[#page])
return {0, n, 0}
