-- Counts users' unread notifications: those newer than each one's read
-- marker. Reads only; on a Redis Cluster, all the keys of one call are of
-- one slot (one user's, tagged).
--
-- KEYS[2i-1] the i-th user's notification ids (sorted set, id -> id)
-- KEYS[2i]   the i-th user's read marker (the newest id read; none: nothing
--            read)
-- Returns, per user in the order given, how many ids are past the marker,
-- then the marker (0 for none).
local out = {}
for i = 1, #KEYS, 2 do
  local marker = tonumber(redis.call('GET', KEYS[i + 1]) or '0')
  out[i] = redis.call('ZCOUNT', KEYS[i], '(' .. marker, '+inf')
  out[i + 1] = marker
end
return out
