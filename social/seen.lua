-- Notes a user's activity, at most once per ARGV[2] ms, and tells whether
-- they are back after more than ARGV[3] ms away (the fan-out skipped them
-- meanwhile: their home timeline needs a rebuild). A user back is not
-- noted here: the caller queues the rebuild first, then notes them (touch),
-- so that no crash between the two can leave them active with a home
-- timeline missing what was skipped.
--
-- KEYS[1] last activity of users (uid -> unix ms)
-- ARGV[1] uid
-- ARGV[2] write activity at most once per this many ms
-- ARGV[3] inactive after this many ms; 0: never
-- Returns {state, now (unix ms)}: state 0 when noted recently (nothing
-- written), 1 when noted now, 2 when back after being away (not noted).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = redis.call('ZSCORE', KEYS[1], ARGV[1])
if last and now - tonumber(last) < tonumber(ARGV[2]) then
  return {0, now}
end
local inactive = tonumber(ARGV[3])
if last and inactive > 0 and now - tonumber(last) >= inactive then
  return {2, now}
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
return {1, now}
