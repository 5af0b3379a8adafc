-- Takes back the notification of a cause (a like, repost or follow undone,
-- a reply or mention deleted), in the user's slot, and tells the user's
-- streams unless ARGV[2] is empty. Running it again changes nothing.
--
-- KEYS[1] the user's notification ids
-- KEYS[2] the user's notification records
-- KEYS[3] the user's causes
-- KEYS[4] the user's hash: its kept unread count goes (notes_unread.lua)
-- ARGV[1] cause, "kind:from:sid"
-- ARGV[2] publish command (PUBLISH, or SPUBLISH on a cluster); empty: tell
--         no one
-- ARGV[3] the user's event channel
-- ARGV[4] the frame up to the id
-- ARGV[5] the frame after the id
-- Returns the id taken back, or 0 when there was none.
local id = redis.call('HGET', KEYS[3], ARGV[1])
if not id then
  return 0
end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[2], id)
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[4], 'unread')
if ARGV[2] ~= '' then
  redis.call(ARGV[2], ARGV[3], ARGV[4] .. id .. ARGV[5])
end
return tonumber(id)
