-- The followee's side of a follow, in the followee's slot: the follower
-- joins the followers set with the follow's score (unless there already,
-- so that running this again changes nothing), the followers count with
-- it, and the friends set when the followee follows them; a follower just
-- added is told to the followee's channel, once a day for each follower
-- (the notice key, set with NX and a TTL), so following and unfollowing
-- again and again sends one frame; none while either blocks the other (a
-- block written since the follower's side checked it ends this follow
-- next, and its frame must not reach the one who blocks), nor while the
-- followee mutes the follower (whose notifications they are not told).
--
-- A follower just added is also stored as a followed notification, by
-- notify (notify.lua's text, which follow.go puts ahead of this one as a
-- function), in the same script: stored once per follow this adds, so a
-- follow repeated while it stands stores none (the follower cannot bring a
-- notification dropped since, by a mute or the cap, back to the top), and
-- a follow cut short cannot be left written without it.
--
-- KEYS[1] the followee's followers set
-- KEYS[2] the followee's following set
-- KEYS[3] the followee's friends set
-- KEYS[4] the followee's user hash
-- KEYS[5] the notice key of this follower to this followee
-- KEYS[6] the followee's blocks
-- KEYS[7] the followee's blocked_by
-- KEYS[8] the followee's mutes
-- ARGV[1] follower uid
-- ARGV[2] the follow's score, as the follower's side holds it
-- ARGV[3] now, unix ms (friend-since score)
-- ARGV[4] the command to publish with (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[5] the followee's event channel
-- ARGV[6] the followed frame when the followee does not follow the follower
-- ARGV[7] the followed frame when they do
-- ARGV[8] how long a notice stands, in seconds
-- KEYS[9..16], ARGV[9..16] notify.lua's keys and arguments for the
-- followed notification (none: no notification)
-- Returns {1 when this added the follower, the follower count, 1 when this
-- made the two friends}, or {-1, 0, 0} when the followee is gone or being
-- deleted (no id in their hash, or the deleted mark), or suspended: nothing
-- is written, as the deletion's walk of their followers began after the
-- mark, and a follower added now would be missed by it; and a suspended
-- account takes no new follower (a follow that read it before the
-- suspension is undone by its caller, and answered as one refused).
local gone = redis.call('HMGET', KEYS[4], 'id', 'deleted', 'suspended')
if not gone[1] or gone[2] or gone[3] then
  return {-1, 0, 0}
end
local added = 0
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('HINCRBY', KEYS[4], 'followers', 1)
  added = 1
end
local followsBack = redis.call('ZSCORE', KEYS[2], ARGV[1])
local made = 0
if followsBack then
  made = redis.call('ZADD', KEYS[3], 'NX', ARGV[3], ARGV[1])
end
if added == 1 and not redis.call('ZSCORE', KEYS[6], ARGV[1]) and not redis.call('ZSCORE', KEYS[7], ARGV[1])
    and not redis.call('ZSCORE', KEYS[8], ARGV[1]) and redis.call('SET', KEYS[5], 1, 'NX', 'EX', ARGV[8]) then
  local frame = ARGV[6]
  if followsBack then
    frame = ARGV[7]
  end
  redis.call(ARGV[4], ARGV[5], frame)
end
if added == 1 and #KEYS > 8 then
  local keys, argv = {}, {}
  for i = 9, #KEYS do
    keys[#keys + 1] = KEYS[i]
  end
  for i = 9, #ARGV do
    argv[#argv + 1] = ARGV[i]
  end
  notify(keys, argv)
end
return {added, redis.call('ZCARD', KEYS[1]), made}
