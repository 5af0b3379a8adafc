-- Pushes a status into followers' home timelines, and sends its live frame
-- to those connected whose home it newly reached: one follower after
-- another, each only while they still follow its author (their following
-- set, in their slot: an unfollow takes it out there before it walks the
-- home timeline, so a push either comes before that walk, which takes it
-- out, or sees the unfollow). A repost entry leaves out a home that holds
-- its original, or another repost of it that is still there (home:reposts
-- maps each original a repost brought in to that repost's id). Each
-- follower's keys and channel are in the follower's slot: on a Redis
-- Cluster the script runs for one follower at a time, on one Redis for
-- many. Running it again adds nothing and sends nothing.
--
-- For a status (ARGV[3] '0'), two keys a follower:
-- KEYS[2i-1] follower i's following set
-- KEYS[2i]   follower i's home timeline
-- For a repost entry, three:
-- KEYS[3i-2] follower i's following set
-- KEYS[3i-1] follower i's home timeline
-- KEYS[3i]   follower i's home reposts (original id -> repost id)
-- ARGV[1] status id
-- ARGV[2] author uid
-- ARGV[3] the original's id, for a repost entry; '0' for a status
-- ARGV[4] home timeline size
-- ARGV[5] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[6] the live frame (JSON)
-- ARGV[7] one character a follower, the sum of: 1 to trim their home
--         timeline to its size, 2 when they are connected
-- ARGV[8] on one Redis, the author's unfollow count as read before the
--         page was ('0' for none), and then KEYS[#KEYS] is that count's key;
--         '' on a cluster, where that key is in another slot
-- ARGV[9..] the event channels of the followers connected, in order
-- Returns, a follower each, 1 when it added the status, 0 when not (there
-- already, or its original or another repost of it is), -1 when the
-- follower does not follow the author.
--
-- While the author's unfollow count is still the one read before the page,
-- no unfollow of the author has counted itself since (unfollow_followee.lua,
-- before the unfollow walks the home timeline and returns): each follower
-- of the page still follows, or is in an unfollow that will walk their home
-- after this push. The follow checks are then left out.
local sid, author, orig = ARGV[1], ARGV[2], ARGV[3]
local stride = 2
if orig ~= '0' then
  stride = 3
end
local check = true
if ARGV[8] ~= '' then
  check = (redis.call('GET', KEYS[#KEYS]) or '0') ~= ARGV[8]
end
local out = {}
local channel = 8
for i = 1, math.floor(#KEYS / stride) do
  local following, home = KEYS[stride * (i - 1) + 1], KEYS[stride * (i - 1) + 2]
  local flags = string.byte(ARGV[7], i) - 48
  if flags >= 2 then
    channel = channel + 1
  end
  local added = -1
  if not check or redis.call('ZSCORE', following, author) then
    added = 0
    if orig == '0' then
      added = redis.call('ZADD', home, sid, sid)
    else
      local map = KEYS[stride * i]
      local other = redis.call('ZSCORE', map, orig)
      if not redis.call('ZSCORE', home, orig)
          and not (other and other ~= sid and redis.call('ZSCORE', home, other)) then
        redis.call('ZADD', map, sid, orig)
        added = redis.call('ZADD', home, sid, sid)
        if flags % 2 == 1 then
          redis.call('ZREMRANGEBYRANK', map, 0, -tonumber(ARGV[4]) - 1)
        end
      end
    end
    if added == 1 then
      if flags % 2 == 1 then
        redis.call('ZREMRANGEBYRANK', home, 0, -tonumber(ARGV[4]) - 1)
      end
      if flags >= 2 then
        redis.call(ARGV[5], ARGV[channel], ARGV[6])
      end
    end
  end
  out[i] = added
end
return out
