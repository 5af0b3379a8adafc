-- Removes from the job stream's consumer group the consumers that have no
-- pending entries and have been idle longer than a limit: workers of
-- instances that are gone. Checking and removing in one step means no
-- consumer is removed between being seen idle and reading a job (removing a
-- consumer loses its pending entries).
--
-- KEYS[1] fan-out job stream
-- ARGV[1] consumer group of the job stream
-- ARGV[2] idle limit, ms
-- ARGV[3] the caller's own consumer name, never removed
-- Returns the names of the consumers removed.
local removed = {}
local limit = tonumber(ARGV[2])
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local f = {}
  for i = 1, #c, 2 do
    f[c[i]] = c[i + 1]
  end
  if f.name ~= ARGV[3] and tonumber(f.pending) == 0 and tonumber(f.idle) > limit then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f.name)
    removed[#removed + 1] = f.name
  end
end
return removed
