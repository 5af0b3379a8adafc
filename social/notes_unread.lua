-- Counts users' unread notifications: those newer than each one's read
-- marker. Each count is kept in its user's hash (field unread), for stream
-- openings to read with the user instead of counting again (StreamOpenings):
-- every script that changes a user's notifications or read marker deletes
-- the field (notify, unnotify, notes_drop_from, notes_read), in the same
-- step, so a count kept is the count now. A user without a hash (gone)
-- gets none. On a Redis Cluster, all the keys of one call are of one slot
-- (one user's, tagged).
--
-- KEYS[3i-2] the i-th user's notification ids (sorted set, id -> id)
-- KEYS[3i-1] the i-th user's read marker (the newest id read; none: nothing
--            read)
-- KEYS[3i]   the i-th user's hash
-- Returns, per user in the order given, how many ids are past the marker,
-- then the marker (0 for none).
local out = {}
for i = 1, #KEYS, 3 do
  local marker = tonumber(redis.call('GET', KEYS[i + 1]) or '0')
  local n = redis.call('ZCOUNT', KEYS[i], '(' .. marker, '+inf')
  if redis.call('EXISTS', KEYS[i + 2]) == 1 then
    redis.call('HSET', KEYS[i + 2], 'unread', n)
  end
  out[#out + 1] = n
  out[#out + 1] = marker
end
return out
