-- Takes a list out of the lists that hold a user (list:in), only when its
-- score there is that of a membership known to have ended: a later
-- membership, with a score of its own, stays.
--
-- KEYS[1] the lists that hold the user (list:in)
-- ARGV[1] list id
-- ARGV[2] the ended membership's score
-- Returns 1 when taken out, 0 when list:in held another score or none.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
