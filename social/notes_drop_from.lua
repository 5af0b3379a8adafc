-- Takes out of a user's notifications, in the user's slot, every one from
-- one sender (a block, a mute): at most the 1,000 kept, so bounded, and
-- tells the user's streams which went, in one frame. Running it again
-- changes nothing and tells no one.
--
-- KEYS[1] the user's notification ids (sorted set, id -> id)
-- KEYS[2] the user's notification records (hash, id -> "cause created-ms")
-- KEYS[3] the user's causes (hash, cause -> id)
-- KEYS[4] the user's hash: its kept unread count goes (notes_unread.lua)
-- ARGV[1] the sender's uid
-- ARGV[2] publish command (PUBLISH, or SPUBLISH on a cluster); empty: tell
--         no one
-- ARGV[3] the user's event channel
-- ARGV[4] the frame up to its list of ids
-- ARGV[5] the frame after it
-- Returns how many it took out.
local data = redis.call('HGETALL', KEYS[2])
local gone = {}
for i = 1, #data, 2 do
  local cause = string.match(data[i + 1], '^%S+')
  if cause and string.match(cause, '^[^:]*:([^:]*):') == ARGV[1] then
    redis.call('ZREM', KEYS[1], data[i])
    redis.call('HDEL', KEYS[2], data[i])
    redis.call('HDEL', KEYS[3], cause)
    gone[#gone + 1] = data[i]
  end
end
if #gone > 0 then
  redis.call('HDEL', KEYS[4], 'unread')
  if ARGV[2] ~= '' then
    redis.call(ARGV[2], ARGV[3], ARGV[4] .. table.concat(gone, ',') .. ARGV[5])
  end
end
return #gone
