-- Creates a user and its first session in one step, so that a login is
-- unique ignoring case without any lock, and no user exists without a way in.
--
-- KEYS[1] login index hash (lower-case login -> uid)
-- KEYS[2] the new user's hash
-- KEYS[3] the first session's key
-- KEYS[4] user search index (sorted set read by lex; see search.go)
-- ARGV[1] lower-case login
-- ARGV[2] uid (from INCR; an id lost to a taken login is harmless)
-- ARGV[3] login as typed
-- ARGV[4] name
-- ARGV[5] bcrypt password hash
-- ARGV[6] signup time, unix ms
-- ARGV[7] session lifetime, ms
-- ARGV[8] the new user's event channel
-- ARGV[9] the user_created event (JSON)
-- ARGV[10..] the user's search index entries
-- Returns 1, or 0 when the login is taken.
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('HSET', KEYS[2],
  'id', ARGV[2], 'login', ARGV[3], 'name', ARGV[4], 'password', ARGV[5],
  'followers', 0, 'following', 0, 'posts', 0, 'signup', ARGV[6])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[7])
for i = 10, #ARGV do
  redis.call('ZADD', KEYS[4], 0, ARGV[i])
end
-- A stream still open under this uid belongs to a user Redis has lost (a
-- restart without persistence, a failover to a lagging replica): every
-- instance closes it before this user's first frame can reach it.
redis.call('PUBLISH', ARGV[8], ARGV[9])
return 1
