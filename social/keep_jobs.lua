-- Claims again, for a worker, the entries of the job stream it holds, each
-- only while the worker still holds it: an entry another worker took over
-- (this one having stalled past JobClaimIdle) stays that worker's.
--
-- KEYS[1] the job stream
-- ARGV[1] its consumer group
-- ARGV[2] the worker's consumer
-- ARGV[3..] the entries
-- Returns the entries still the worker's, claimed again.
local kept = {}
for i = 3, #ARGV do
  local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2])
  if #held == 1 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    kept[#kept + 1] = ARGV[i]
  end
end
return kept
