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
