-- Claims a job stream entry again for the worker that holds it, only while
-- it still does: an entry another worker took over (this one having
-- stalled past JobClaimIdle), or one finished and acknowledged, is not
-- taken back.
--
-- KEYS[1] the job stream
-- ARGV[1] its consumer group
-- ARGV[2] the worker's consumer
-- ARGV[3] the entry
-- Returns 1 when the entry is still the worker's, claimed again; 0 if not.
local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1, ARGV[2])
if #held == 0 then
  return 0
end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
