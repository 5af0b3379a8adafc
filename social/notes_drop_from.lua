-- Takes out of a user's notifications, in the user's slot, every one from
-- one sender (a block): at most the 1,000 kept, so bounded. Running it
-- again changes nothing.
--
-- KEYS[1] the user's notification ids (sorted set, id -> id)
-- KEYS[2] the user's notification records (hash, id -> "cause created-ms")
-- KEYS[3] the user's causes (hash, cause -> id)
-- KEYS[4] the user's hash: its kept unread count goes (notes_unread.lua)
-- ARGV[1] the sender's uid
-- Returns how many it took out.
local data = redis.call('HGETALL', KEYS[2])
local n = 0
for i = 1, #data, 2 do
  local cause = string.match(data[i + 1], '^%S+')
  if cause and string.match(cause, '^[^:]*:([^:]*):') == ARGV[1] then
    redis.call('ZREM', KEYS[1], data[i])
    redis.call('HDEL', KEYS[2], data[i])
    redis.call('HDEL', KEYS[3], cause)
    n = n + 1
  end
end
if n > 0 then
  redis.call('HDEL', KEYS[4], 'unread')
end
return n
