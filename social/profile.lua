-- Edits a user's profile: the name, the bio, or both, in one step, and
-- answers the name it had before, so that the search index can be brought
-- from the old name's terms to the new one's.
--
-- KEYS[1] user:<uid>
-- ARGV[1] the new name, or "" to keep it
-- ARGV[2] 1 to set the bio to ARGV[3], 0 to keep it
-- ARGV[3] the new bio ("" for none)
-- Returns false for a user who does not exist or is being deleted (whose
-- search entries the deletion takes out), else {the old name, the login}.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then
  return false
end
local old = redis.call('HMGET', KEYS[1], 'name', 'login')
if ARGV[1] ~= '' then
  redis.call('HSET', KEYS[1], 'name', ARGV[1])
end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'bio', ARGV[3])
end
return {old[1] or '', old[2] or ''}
