-- Ends one pass of a fan-out job run from Go: moves the job on, or finishes
-- it. The pass read the job's "pass" counter before its writes; when
-- another worker has moved or finished the job since, this writes nothing
-- (the pass's writes were idempotent, and the other's move stands). A job
-- moved on that has no stream entry yet (its maker's first pass, see
-- queue_job.lua) is given one, for a worker to carry on.
--
-- KEYS[1] the job hash
-- KEYS[2] fan-out job stream
-- KEYS[3] the jobs being made (job key -> when queued, unix ms)
-- ARGV[1] consumer group of the job stream
-- ARGV[2] the pass counter the pass read ('0' when it had none)
-- ARGV[3] '1' to finish the job: acknowledge and delete its stream entry,
--         delete the job; '0' to move it on. Either may be followed by
--         '!': then at maxmemory it writes nothing, and answers Redis's OOM
--         error (see below)
-- ARGV[4..] field, value pairs to set; an empty value deletes the field
-- Returns 1 when it wrote, 0 when the job had moved or was gone.
--
-- A post's last round trip sends it right after its pushes (push.lua),
-- which Redis refuses at maxmemory: the job must not then be finished or
-- moved past them ('!'). Redis checks a script's memory at its first write
-- that may grow it, and lets the rest through; the deletions below are not
-- such writes, so the counter is written first, as it is (HSET, which is).
-- A worker's pass, whose writes were answered before, does not ask it:
-- jobs that delete go on freeing memory there.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local pass = redis.call('HGET', KEYS[1], 'pass') or '0'
if pass ~= ARGV[2] then
  return 0
end
if string.sub(ARGV[3], 2) == '!' then
  redis.call('HSET', KEYS[1], 'pass', pass)
end
local entry = redis.call('HGET', KEYS[1], 'entry')
redis.call('ZREM', KEYS[3], KEYS[1])
if string.sub(ARGV[3], 1, 1) == '1' then
  if entry then
    redis.call('XACK', KEYS[2], ARGV[1], entry)
    redis.call('XDEL', KEYS[2], entry)
  end
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HINCRBY', KEYS[1], 'pass', 1)
for i = 4, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
if not entry then
  redis.call('HSET', KEYS[1], 'entry', redis.call('XADD', KEYS[2], '*', 'job', KEYS[1]))
end
return 1
