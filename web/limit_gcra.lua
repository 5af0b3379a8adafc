-- One unit of a GCRA rate limit for each key of KEYS, all of one limit, as
-- github.com/go-redis/redis_rate (v10) counts it, on the same keys ("rate:"
-- and the limit's key) and state (the theoretical arrival time, seconds
-- since 2017), so a limit counted here and by the limiter is one budget.
-- Queued in a pipeline with other commands, where the limiter's own call
-- cannot go, and for many clients at once (a key twice counts two units).
-- The algorithm is redis_rate's (BSD-2-Clause), from rwz/redis-gcra (MIT,
-- Copyright (c) 2017 Pavel Pravosud).
--
-- KEYS the limit's keys (on a Redis Cluster, of one slot)
-- ARGV[1] burst
-- ARGV[2] rate (units a period)
-- ARGV[3] period, seconds
-- Returns, a key each, two values: 1 when allowed, else 0; seconds until a
-- unit is allowed again, as a string, -1 when allowed.
redis.replicate_commands()

local burst = tonumber(ARGV[1])
local emission_interval = tonumber(ARGV[3]) / tonumber(ARGV[2])
local burst_offset = emission_interval * burst

local jan_1_2017 = 1483228800
local now = redis.call('TIME')
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local out = {}
for i, key in ipairs(KEYS) do
  local tat = redis.call('GET', key)
  if not tat then
    tat = now
  else
    tat = tonumber(tat)
  end
  tat = math.max(tat, now)

  local new_tat = tat + emission_interval
  local diff = now - (new_tat - burst_offset)
  if diff < 0 then
    out[2 * i - 1], out[2 * i] = 0, tostring(-diff)
  else
    local reset_after = new_tat - now
    if reset_after > 0 then
      redis.call('SET', key, new_tat, 'EX', math.ceil(reset_after))
    end
    out[2 * i - 1], out[2 * i] = 1, '-1'
  end
end
return out
