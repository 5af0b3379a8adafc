-- Notes a new session in its user's index of sessions, and says whether
-- the index holds more than a user may: the caller then takes out the
-- sessions that ended and, if still over, ends the oldest.
--
-- KEYS[1] sessions:<uid> (session id -> when it was opened, ms)
-- ARGV[1] the new session's id
-- ARGV[2] now, ms
-- ARGV[3] most sessions one user holds
-- Returns the number of sessions in the index.
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return redis.call('ZCARD', KEYS[1])
