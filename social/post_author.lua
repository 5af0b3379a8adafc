-- Writes a new status into its author's own keys, all in the author's slot:
-- the profile and home timelines, the post count (once, however often this
-- runs), and the live frame to the author's connections.
--
-- KEYS[1] author's user hash
-- KEYS[2] author's profile timeline
-- KEYS[3] author's home timeline
-- ARGV[1] status id
-- ARGV[2] home timeline size
-- ARGV[3] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[4] author's event channel
-- ARGV[5] live event (JSON)
-- Returns 1, or 0 when it was written already, -1 when the author is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('ZADD', KEYS[2], ARGV[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'posts', 1)
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[2]) - 1)
redis.call(ARGV[3], ARGV[4], ARGV[5])
return 1
