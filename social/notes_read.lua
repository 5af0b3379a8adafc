-- Moves a user's read marker up to ARGV[1], never back, in the user's
-- slot, and tells the user's streams where it stands now, so that every
-- session and device clears its unread marks.
--
-- KEYS[1] the user's read marker (the newest id read)
-- KEYS[2] the user's notification id sequence (the newest id given)
-- KEYS[3] the user's hash: its kept unread count goes (notes_unread.lua)
-- ARGV[1] the id read up to, a positive integer
-- ARGV[2] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[3] the user's event channel
-- ARGV[4] the notifications_read frame of ARGV[1]
-- Returns {1 when the marker moved, 0 when it was there or past already,
-- -1 when ARGV[1] is past the newest id given (nothing written); the
-- marker after}.
local marker = tonumber(redis.call('GET', KEYS[1]) or '0')
local upTo = tonumber(ARGV[1])
if upTo > tonumber(redis.call('GET', KEYS[2]) or '0') then
  return {-1, marker}
end
if upTo <= marker then
  return {0, marker}
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], 'unread')
redis.call(ARGV[2], ARGV[3], ARGV[4])
return {1, upTo}
