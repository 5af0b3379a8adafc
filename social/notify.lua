-- Stores one notification for a user, in the user's slot, unless one with
-- its cause is stored already (so a job's redo stores nothing twice) or the
-- user mutes or blocks its sender, or is blocked by them. Keeps the newest ARGV[4]: older ones go
-- with their cause entries. Publishes the notification frame, its id
-- spliced between ARGV[7] and ARGV[8].
--
-- KEYS[1] the user's notification ids (sorted set, id -> id)
-- KEYS[2] the user's notification records (hash, id -> "cause created-ms")
-- KEYS[3] the user's causes (hash, cause -> id)
-- KEYS[4] the user's notification id sequence
-- KEYS[5] whom the user mutes (sorted set of uids)
-- KEYS[6] whom the user blocks (sorted set of uids)
-- KEYS[7] the user's hash: its kept unread count goes (notes_unread.lua)
-- KEYS[8] who blocks the user (sorted set of uids)
-- ARGV[1] cause, "kind:from:sid"
-- ARGV[2] created, unix ms
-- ARGV[3] the sender's uid
-- ARGV[4] how many notifications a user keeps
-- ARGV[5] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[6] the user's event channel
-- ARGV[7] the frame up to the id
-- ARGV[8] the frame after the id
-- Returns the new notification's id, or 0 when nothing was stored: also
-- when the user is gone or being deleted (no id in their hash, or the
-- deleted mark), whose keys the deletion deletes, or has deleted already.
local user = redis.call('HMGET', KEYS[7], 'id', 'deleted')
if not user[1] or user[2] then
  return 0
end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then
  return 0
end
if redis.call('ZSCORE', KEYS[5], ARGV[3]) or redis.call('ZSCORE', KEYS[6], ARGV[3])
    or redis.call('ZSCORE', KEYS[8], ARGV[3]) then
  return 0
end
local id = redis.call('INCR', KEYS[4])
redis.call('HDEL', KEYS[7], 'unread')
redis.call('ZADD', KEYS[1], id, id)
redis.call('HSET', KEYS[2], id, ARGV[1] .. ' ' .. ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], id)
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if over > 0 then
  for _, old in ipairs(redis.call('ZRANGE', KEYS[1], 0, over - 1)) do
    local record = redis.call('HGET', KEYS[2], old)
    if record then
      local cause = string.match(record, '^%S+')
      if redis.call('HGET', KEYS[3], cause) == old then
        redis.call('HDEL', KEYS[3], cause)
      end
    end
    redis.call('HDEL', KEYS[2], old)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
end
redis.call(ARGV[5], ARGV[6], ARGV[7] .. id .. ARGV[8])
return id
