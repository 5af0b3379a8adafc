-- Writes a new status into its author's own keys, all in the author's slot:
-- the profile and home timelines, the post count (once, however often this
-- runs), and the live frame to the author's connections.
--
-- KEYS[1] author's user hash
-- KEYS[2] author's profile timeline
-- KEYS[3] author's home timeline
-- KEYS[4], KEYS[5] (a post's own write, see lateFollowers in post.go) the
--         author's followers and unfollow count: then, after the writes,
--         the followers scored up to ARGV[6] are counted, and the unfollow
--         count read, in the script, so that no follow joins between the
--         profile's write, which a follow copies, and the count
-- ARGV[1] status id
-- ARGV[2] home timeline size
-- ARGV[3] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[4] author's event channel
-- ARGV[5] live event (JSON)
-- ARGV[6] with KEYS[4]: the highest score counted ('+inf' for all)
-- Returns 1, or 0 when it was written already, -1 when the author is gone;
-- with KEYS[4], {that, the count, the unfollow count or ''}.
local function answer(code)
  if #KEYS < 5 then
    return code
  end
  return {code, redis.call('ZCOUNT', KEYS[4], '-inf', ARGV[6]), redis.call('GET', KEYS[5]) or ''}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return answer(-1)
end
if redis.call('ZADD', KEYS[2], ARGV[1], ARGV[1]) == 0 then
  return answer(0)
end
redis.call('HINCRBY', KEYS[1], 'posts', 1)
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[2]) - 1)
redis.call(ARGV[3], ARGV[4], ARGV[5])
return answer(1)
