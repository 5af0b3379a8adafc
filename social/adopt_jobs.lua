-- Gives the jobs named, queued before their inputs and whose maker has not
-- marked them ready since ARGV[1] ms ago, a stream entry, for a worker to
-- take their maker for dead and redo its writes (see makerDone), and takes
-- them out of the jobs being made. One marked ready or finished meanwhile,
-- or gone, is only taken out (queue_job.lua).
--
-- KEYS[1] fan-out job stream
-- KEYS[2] the jobs being made (job key -> when queued, unix ms)
-- KEYS[3..] the job hashes read there as due (their slot is the stream's)
-- ARGV[1] how long a maker has, ms
-- Returns how many it gave an entry.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local n = 0
for i = 3, #KEYS do
  local key = KEYS[i]
  local queued = redis.call('ZSCORE', KEYS[2], key)
  if queued and tonumber(queued) <= now - tonumber(ARGV[1]) then
    redis.call('ZREM', KEYS[2], key)
    if redis.call('EXISTS', key) == 1 and not redis.call('HGET', key, 'entry') then
      redis.call('HSET', key, 'entry', redis.call('XADD', KEYS[1], '*', 'job', key))
      n = n + 1
    end
  end
end
return n
