-- Widens a queued refill into a rebuild: no floor, from its first followee
-- again, marked a rebuild. A returning user's rebuild that finds a refill
-- queued (one whose floor is the lowest status of the home timeline then,
-- queued for a followee gone or blocked) has it do the rebuild's work:
-- with its floor, the statuses skipped while the user was away, newer than
-- it, would never be copied. The pass counter moves, so that a pass under
-- way as this runs writes nothing when it ends (advance.lua), and the next
-- pass starts over. A rebuild already (another request of the same return)
-- is left as it is.
--
-- KEYS[1] the refill job's hash
-- Returns 1 when it widened a queued refill, 2 when the refill queued is a
-- rebuild already, 0 when none is queued.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('HGET', KEYS[1], 'rebuild') == '1' then
  return 2
end
redis.call('HSET', KEYS[1], 'floor', '+inf', 'cursor', '0', 'rebuild', '1')
redis.call('HDEL', KEYS[1], 'part', 'below')
redis.call('HINCRBY', KEYS[1], 'pass', 1)
return 1
