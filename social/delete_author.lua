-- Takes a deleted status out of its author's own keys, all in the author's
-- slot: the profile and home timelines, the post count (once, however often
-- this runs), and tells the author's connections.
--
-- KEYS[1] author's user hash
-- KEYS[2] author's profile timeline
-- KEYS[3] author's home timeline
-- ARGV[1] status id
-- ARGV[2] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[3] author's event channel
-- ARGV[4] live event (JSON)
-- Returns 1, or 0 when it was done already.
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'posts', -1)
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call(ARGV[2], ARGV[3], ARGV[4])
return 1
