-- Hides a status, or shows it again, when it exists: a status deleted
-- meanwhile gets no hash back.
--
-- KEYS[1] the status's hash
-- ARGV[1] '1' to hide, '0' to show
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if ARGV[1] == '1' then
  return redis.call('HSET', KEYS[1], 'hidden', '1')
end
return redis.call('HDEL', KEYS[1], 'hidden')
