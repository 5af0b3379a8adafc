-- Redis's clock, prepended to every presence script that reads the time
-- (see script in scripts.go): the instances' own clocks may disagree, the
-- one Redis they share does not.

-- now_ms is the time now by Redis, in unix milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
