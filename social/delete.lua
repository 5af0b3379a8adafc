-- Deletes a status at once from everywhere its author owns (the status hash,
-- profile, home and global timelines, the post count) and queues a durable
-- job that takes it out of every follower's home timeline.
--
-- KEYS[1] the status hash
-- KEYS[2] author's user hash
-- KEYS[3] author's profile timeline
-- KEYS[4] author's home timeline
-- KEYS[5] global timeline
-- KEYS[6] author's followers set
-- KEYS[7] fan-out job stream
-- KEYS[8] the cleanup job hash
-- KEYS[9] pulled authors (uid -> first status id not pushed)
-- KEYS[10] lists that hold the author (list:in)
-- KEYS[11] the list cleanup job hash
-- ARGV[1] status id
-- ARGV[2] uid asking for the deletion
-- ARGV[3] live event to publish (JSON)
-- ARGV[4] author's event channel
-- ARGV[5] author's channel for their followers (pulled authors)
-- Returns -1 when the status does not exist, -2 when it belongs to someone
-- else; otherwise the jobs it queued: 1 for the followers' (delete), plus 2
-- for the lists' (list_delete).
local owner = redis.call('HGET', KEYS[1], 'uid')
if not owner then
  return -1
end
if owner ~= ARGV[2] then
  return -2
end
local id = ARGV[1]
redis.call('DEL', KEYS[1])
redis.call('HINCRBY', KEYS[2], 'posts', -1)
redis.call('ZREM', KEYS[3], id)
redis.call('ZREM', KEYS[4], id)
redis.call('ZREM', KEYS[5], id)
redis.call('PUBLISH', ARGV[4], ARGV[3])
-- The lists that hold the author are cleaned by a job of their own
-- (list_delete).
local queued = 0
if redis.call('ZCARD', KEYS[10]) > 0 then
  local entry = redis.call('XADD', KEYS[7], '*', 'job', KEYS[11])
  redis.call('HSET', KEYS[11], 'kind', 'list_delete', 'uid', ARGV[2], 'sid', id,
    'cursor', 0, 'entry', entry)
  queued = 2
end
-- A status of a pulled author, from after they were, was never pushed:
-- it is gone from every read with the profile's entry; the followers
-- connected are told from one publish.
local since = redis.call('ZSCORE', KEYS[9], ARGV[2])
if since and tonumber(id) >= tonumber(since) then
  redis.call('PUBLISH', ARGV[5], ARGV[3])
  return queued
end
if redis.call('ZCARD', KEYS[6]) == 0 then
  return queued
end
local entry = redis.call('XADD', KEYS[7], '*', 'job', KEYS[8])
redis.call('HSET', KEYS[8], 'kind', 'delete', 'uid', ARGV[2], 'sid', id,
  'cursor', 0, 'payload', ARGV[3], 'entry', entry)
return queued + 1
