-- Counts a user's unread notifications: those newer than the read marker.
-- Reads only, in the user's slot.
--
-- KEYS[1] the user's notification ids (sorted set, id -> id)
-- KEYS[2] the user's read marker (the newest id read; none: nothing read)
-- Returns {how many ids are past the marker, the marker (0 for none)}.
local marker = tonumber(redis.call('GET', KEYS[2]) or '0')
return {redis.call('ZCOUNT', KEYS[1], '(' .. marker, '+inf'), marker}
