-- Functions shared by the scripts that fill a home timeline from a profile
-- (follow's backfill, refill jobs) or a list's timeline (a member's
-- backfill), or queue jobs (follow, post); their text goes before theirs.

-- Copies into home, newest first, the statuses of profile scored below
-- `below` (a ZRANGEBYSCORE bound: '+inf' or '(<id>'), at most `budget` of
-- them, keeping home to its newest `size`. Once home holds `size`, only
-- statuses newer than its lowest can stay, so only those are read, and the
-- copy stops when none remain. Copies in chunks that stay under Lua's limit
-- on unpacked arguments.
-- Returns the number copied, the lowest id copied (nil when none), and
-- whether the profile has nothing left to give below that.
local function copy_below(home, profile, below, size, budget)
  local copied, last = 0, nil
  while copied < budget do
    local min = '-inf'
    if redis.call('ZCARD', home) >= size then
      min = '(' .. redis.call('ZRANGE', home, 0, 0, 'WITHSCORES')[2]
    end
    local want = math.min(budget - copied, 500)
    local batch = redis.call('ZREVRANGEBYSCORE', profile, below, min,
      'WITHSCORES', 'LIMIT', 0, want)
    if #batch > 0 then
      local args = {}
      for i = 1, #batch, 2 do
        args[#args + 1] = batch[i + 1]
        args[#args + 1] = batch[i]
      end
      redis.call('ZADD', home, unpack(args))
      redis.call('ZREMRANGEBYRANK', home, 0, -size - 1)
      copied = copied + #batch / 2
      last = batch[#batch]
      below = '(' .. last
    end
    if #batch / 2 < want then
      return copied, last, true
    end
  end
  return copied, last, false
end

-- Copies the newest statuses of profile into home: at most `size`, and
-- once home holds `size`, only those newer than its lowest. Returns the
-- number copied.
local function copy_latest(home, profile, size)
  local copied = copy_below(home, profile, '+inf', size, size)
  return copied
end

-- Queues the job that makes author pulled: it adds author to the pulled
-- authors of each follower whose follow score is not above `last`, then to
-- the pulled authors. Follows made meanwhile see the job and add themselves.
local function queue_promotion(stream, job, author, last)
  local entry = redis.call('XADD', stream, '*', 'job', job)
  redis.call('HSET', job, 'kind', 'promote', 'uid', author, 'cursor', 0,
    'until', last, 'entry', entry)
end
