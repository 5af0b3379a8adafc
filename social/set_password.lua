-- Sets a user's password hash, if the user exists (a user deleted
-- meanwhile is not made again as a hash holding only a password).
--
-- KEYS[1] user:<uid>
-- ARGV[1] the new bcrypt hash
-- Returns 1 when set, 0 when there is no such user.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'password', ARGV[1])
return 1
