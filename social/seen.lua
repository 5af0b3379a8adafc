-- Notes users' activity, each at most once per ARGV[1] ms, and tells of
-- each whether they are back after more than ARGV[2] ms away (the fan-out
-- skipped them meanwhile: their home timeline needs a rebuild). A user back
-- is not noted here: the caller queues the rebuild first, then notes them,
-- so that no crash between the two can leave them active with a home
-- timeline missing what was skipped.
--
-- KEYS[1] last activity of users (uid -> unix ms)
-- KEYS[2] optional, on one Redis: the session of the one user of ARGV[3],
--         who is noted only while it holds their id (their request's
--         session, checked in the same round trip as this note)
-- ARGV[1] write activity at most once per this many ms
-- ARGV[2] inactive after this many ms; 0: never
-- ARGV[3...] uids
-- Returns {now (unix ms), state of each uid}: 0 when noted recently
-- (nothing written), 1 when noted now, 2 when back after being away, 3
-- when KEYS[2] does not hold their id (the session ended: nothing written).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local every, inactive = tonumber(ARGV[1]), tonumber(ARGV[2])
local uids = {unpack(ARGV, 3)}
local out = {now}
if #uids == 0 then
  return out
end
if KEYS[2] and #uids ~= 1 then
  return redis.error_reply('a session checks the note of one user')
end
if KEYS[2] and redis.call('GET', KEYS[2]) ~= uids[1] then
  out[2] = 3
  return out
end
local last = redis.call('ZMSCORE', KEYS[1], unpack(uids))
local noted = {}
for i, uid in ipairs(uids) do
  local at = last[i] and tonumber(last[i])
  local state = 1
  if at and now - at < every then
    state = 0
  elseif at and inactive > 0 and now - at >= inactive then
    state = 2
  else
    noted[#noted + 1] = now
    noted[#noted + 1] = uid
  end
  out[#out + 1] = state
end
if #noted > 0 then
  redis.call('ZADD', KEYS[1], unpack(noted))
end
return out
