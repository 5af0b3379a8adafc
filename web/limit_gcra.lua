-- One unit of a GCRA rate limit for each client of a call, all of one
-- limit, as github.com/go-redis/redis_rate (v10) counts it, on the same keys
-- ("rate:" and the limit's key) and state (the theoretical arrival time,
-- seconds since 2017), so a limit counted here and by the limiter is one
-- budget. Queued in a pipeline with other commands, where the limiter's own
-- call cannot go, and for many clients at once (a key twice counts two
-- units). A client may be counted under a second key as well, its site's
-- (an IPv6 client's /48 beside its /64), at ARGV[4] times the limit: the
-- unit is taken from both, or, when either refuses, from neither. The
-- algorithm is redis_rate's (BSD-2-Clause), from rwz/redis-gcra (MIT,
-- Copyright (c) 2017 Pavel Pravosud).
--
-- KEYS the clients' keys, in order, each followed by its site's key when it
--      has one (on a Redis Cluster, all of one slot)
-- ARGV[1] burst
-- ARGV[2] rate (units a period)
-- ARGV[3] period, seconds
-- ARGV[4] how many times the limit a site's key allows
-- ARGV[5] a character a client, in order: "1" when its site's key follows
--         its own, else "0"
-- Returns, a client each, two values: 1 when allowed, else 0; seconds until
-- a unit is allowed again, as a string, -1 when allowed.
redis.replicate_commands()

local burst = tonumber(ARGV[1])
local emission_interval = tonumber(ARGV[3]) / tonumber(ARGV[2])
-- A site's limit: factor times the rate and the burst, so the same offset.
local site_interval = emission_interval / tonumber(ARGV[4])
local burst_offset = emission_interval * burst
local sites = ARGV[5]

local jan_1_2017 = 1483228800
local now = redis.call('TIME')
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

-- look answers whether key has a unit at interval, the arrival time it
-- would hold once the unit is taken, and else how long until it has one.
local function look(key, interval)
  local tat = redis.call('GET', key)
  if not tat then
    tat = now
  else
    tat = tonumber(tat)
  end
  tat = math.max(tat, now)
  local new_tat = tat + interval
  local diff = now - (new_tat - burst_offset)
  return diff >= 0, new_tat, -diff
end

local function take(key, new_tat)
  local reset_after = new_tat - now
  if reset_after > 0 then
    redis.call('SET', key, new_tat, 'EX', math.ceil(reset_after))
  end
end

local out = {}
local k = 1
for i = 1, #sites do
  local own = KEYS[k]
  local ok, tat, wait = look(own, emission_interval)
  local site, site_ok, site_tat, site_wait = nil, true, 0, 0
  if string.sub(sites, i, i) == '1' then
    site = KEYS[k + 1]
    site_ok, site_tat, site_wait = look(site, site_interval)
    k = k + 2
  else
    k = k + 1
  end
  if ok and site_ok then
    take(own, tat)
    if site then
      take(site, site_tat)
    end
    out[2 * i - 1], out[2 * i] = 1, '-1'
  else
    if ok then
      wait = 0
    end
    if site_ok then
      site_wait = 0
    end
    out[2 * i - 1], out[2 * i] = 0, tostring(math.max(wait, site_wait))
  end
end
return out
