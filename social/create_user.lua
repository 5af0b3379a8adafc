-- Writes a new user's hash, whole, unless a user holds the uid already, and
-- tells the user's channel that the uid is a new user's. The login is
-- claimed after this (see SignUp): until then no login leads to the hash.
--
-- A stream still open under this uid belongs to a user Redis has lost (a
-- restart without persistence, a failover to a lagging replica): every
-- instance closes it on the event, which goes out before the login can be
-- found, so before any frame for the new user can be sent. Should the claim
-- then lose, the event has closed only streams of a user that is gone.
--
-- KEYS[1] the new user's hash
-- ARGV[1] uid (from INCR)
-- ARGV[2] login as typed
-- ARGV[3] name
-- ARGV[4] bcrypt password hash
-- ARGV[5] signup time, unix ms
-- ARGV[6] the user's event channel (in KEYS[1]'s slot on a cluster)
-- ARGV[7] the command to publish with: PUBLISH, or SPUBLISH on a cluster
-- ARGV[8] the user_created event (JSON)
-- ARGV[9] 1 when the account waits for an admin's approval (the hash then
--         holds pending = 1), else 0
-- Returns 1, or 0 when a user holds the uid (nothing written).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1],
  'id', ARGV[1], 'login', ARGV[2], 'name', ARGV[3], 'password', ARGV[4],
  'followers', 0, 'following', 0, 'posts', 0, 'signup', ARGV[5])
if ARGV[9] == '1' then
  redis.call('HSET', KEYS[1], 'pending', 1)
end
redis.call(ARGV[7], ARGV[6], ARGV[8])
return 1
